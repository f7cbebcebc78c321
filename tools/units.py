"""Unit helpers. Inside the estimator everything is an integer number of bytes.

Shown figures are GiB (2**30, what nvidia-smi and PyTorch report); decimal GB (10**9)
only when a rule of thumb stated in GB is being discussed, and then both are shown.
"""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
GB = 10**9


def gib(n_bytes: int | float) -> float:
    return n_bytes / GiB


def fmt_gib(n_bytes: int | float, digits: int = 2) -> str:
    return f"{n_bytes / GiB:.{digits}f} GiB"


def fmt_gb(n_bytes: int | float, digits: int = 1) -> str:
    return f"{n_bytes / GB:.{digits}f} GB"


def fmt_both(n_bytes: int | float) -> str:
    """'13.04 GiB (14.0 GB)': for discussing decimal-GB rules of thumb."""
    return f"{fmt_gib(n_bytes)} ({fmt_gb(n_bytes)})"


def fmt_count(n: int) -> str:
    """Human count of parameters/tokens: 6.74B, 4.19M, 131k."""
    for div, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f}{suffix}"
    return str(n)
