"""Summary statistics of signed errors against a truth, shared by the traced benchmark (run.py) and the
published GPU rows (published.py): median and nearest-rank p90 of |error|, mean signed error, the worst
case, and the count of underestimates beyond 3% and 5%.

Figures are kept at full precision; each caller rounds where it shows or stores them (one rounding:
`-49.349` prints as -49.3%, not as -49.35 rounded again to -49.4%).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

UNDERESTIMATE_LIMIT_PCT = 5.0  # the accuracy report counts underestimates beyond 5%
STRICT_UNDERESTIMATE_PCT = 3.0  # the current target: no underestimate beyond 3%


def nearest_rank(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q of the data at or below it."""
    if not sorted_values:
        raise ValueError("nearest_rank of no values")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def error_summary(scored: Iterable[tuple[str, float]], scope: str) -> dict[str, Any]:
    """Statistics of (case id, signed error %) pairs; the figures are None when there are no pairs."""
    pairs = list(scored)
    errors = sorted(abs(e) for _, e in pairs)
    worst = max(pairs, key=lambda p: abs(p[1]), default=None)
    return {
        "scope": scope,
        "cases": len(pairs),
        "median_abs_error_pct": statistics.median(errors) if errors else None,
        "p90_abs_error_pct": nearest_rank(errors, 0.9) if errors else None,
        "mean_signed_error_pct": statistics.fmean(e for _, e in pairs) if pairs else None,
        "worst_case": worst[0] if worst else None,
        "worst_error_pct": worst[1] if worst else None,
        "underestimates_beyond_5pct": sum(1 for _, e in pairs if e < -UNDERESTIMATE_LIMIT_PCT),
        "underestimates_beyond_3pct": sum(1 for _, e in pairs if e < -STRICT_UNDERESTIMATE_PCT),
    }


def format_errors(s: dict[str, Any]) -> str:
    """The shared head of a summary line: scope, cases, median, p90 and the worst case (one decimal)."""
    return (
        f"{s['scope']}: {s['cases']} cases, median |error| {s['median_abs_error_pct']:.1f}%, "
        f"p90 {s['p90_abs_error_pct']:.1f}%, worst {s['worst_error_pct']:+.1f}% ({s['worst_case']})"
    )
