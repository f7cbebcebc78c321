"""The byte figures an Estimate contains: what an answer may cite (grounding for the LLM agent).

Display format used by the offline answers (`service.agent.render`, via `tools.units`):
- GiB (2**30 bytes) with 2 decimals: `fmt_gib(n)` -> "12.55 GiB" -- every memory figure;
- decimal GB (10**9 bytes) with 1 decimal: `fmt_gb(n)` -> "13.5 GB" -- only beside a decimal rule of thumb;
- exact bytes with thousands separators: "13,476,831,232 B" -- component sizes and formulas;
- per-token KV sizes in KiB/MiB with 2 decimals ("128.00 KiB").
A figure written as X GiB matches byte value n when round(n / 2**30, 2) == X (GB: round(n / 1e9, 1)).
"""

from __future__ import annotations

from tools.result import Estimate
from tools.units import GB, GiB


def figures_of(estimate: Estimate) -> set[int]:
    """Every byte figure of the estimate: components, totals, headroom, GPU memory, suggestions, serving."""
    figures: set[int] = {c.bytes for c in estimate.components}
    figures |= {
        estimate.per_gpu.total_bytes,
        estimate.per_gpu.tensor_peak_bytes,
        estimate.per_gpu.total_bytes - estimate.per_gpu.tensor_peak_bytes,  # runtime overhead, shown as a sum
        abs(estimate.headroom_bytes),
        estimate.gpu.memory_bytes,
    }
    figures |= {p.tensor_bytes for p in estimate.per_gpu.phases}
    figures |= {s.total_bytes for s in estimate.suggestions}
    # byte figures an assumption states (e.g. what lora_dropout 0.05 would add): values named *_bytes
    figures |= {
        int(v)
        for a in estimate.assumptions
        for k, v in a.values.items()
        if k.endswith("_bytes") and isinstance(v, int | float)
    }
    if estimate.serving is not None:
        sv = estimate.serving
        figures |= {sv.reserved_bytes, sv.kv_cache_bytes, sv.kv_bytes_per_token, sv.host_bytes}
        # what the serving notes say beside the pool: the reservation less the pool (weights, profile run,
        # context) and the card less the reservation (SGLang's room for prefill chunks and CUDA graphs)
        figures |= {sv.reserved_bytes - sv.kv_cache_bytes, estimate.gpu.memory_bytes - sv.reserved_bytes}
    return {f for f in figures if f > 0}


def shown_gib(n_bytes: int) -> float:
    """How a byte figure reads in an answer: GiB rounded to 2 decimals."""
    return round(n_bytes / GiB, 2)


def shown_gb(n_bytes: int) -> float:
    """Decimal GB rounded to 1 decimal (beside rules of thumb only)."""
    return round(n_bytes / GB, 1)


def matches_figure(value: float, unit: str, figures: set[int]) -> bool:
    """True when `value` `unit` ('GiB' or 'GB') is how one of `figures` is displayed (rounding tolerated)."""
    unit = unit.strip()
    if unit.lower() in ("gib", "gi"):
        return any(abs(value - n / GiB) <= 0.0051 for n in figures)
    if unit.lower() in ("gb", "g"):
        return any(abs(value - n / GB) <= 0.051 for n in figures)
    return False
