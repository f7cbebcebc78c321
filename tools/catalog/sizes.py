"""Bare model sizes ('7B', '70亿', '8x7B', '7 billion') mapped to a typical catalog architecture.

A bare size says nothing about layers, heads or vocabulary, so the estimator borrows the
architecture of a well-known model of that size and says which one (`assumed`).
Common sizes map to the model people usually mean; other sizes take the catalog dense
model with the nearest parameter count, within `MAX_RELATIVE_GAP`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tools.errors import ScenarioError
from tools.units import fmt_count

if TYPE_CHECKING:
    from tools.catalog.models import ModelSpec

# Chinese/English multipliers: 亿 = 1e8, 万亿 = 1e12, 千亿 = 1e11, 百亿 = 1e10, 万 = 1e4
_MULTIPLIERS: dict[str, int] = {
    "k": 10**3,
    "thousand": 10**3,
    "m": 10**6,
    "million": 10**6,
    "b": 10**9,
    "billion": 10**9,
    "bn": 10**9,
    "t": 10**12,
    "trillion": 10**12,
    "万亿": 10**12,
    "千亿": 10**11,
    "百亿": 10**10,
    "十亿": 10**9,
    "亿": 10**8,
    "千万": 10**7,
    "百万": 10**6,
    "万": 10**4,
}
_SIZE = re.compile(
    r"^\s*(?:(?P<experts>\d+)\s*[x×*]\s*)?(?P<num>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>万亿|千亿|百亿|十亿|亿|千万|百万|万|thousand|million|billion|trillion|bn|[kmbt])"
    r"\s*(?:params?|parameters?|参数|个参数)?\s*(?:的?模型|model)?\s*$",
    re.IGNORECASE,
)
# The model a bare size usually means (dense sizes and Mixtral's "8x7B" / "8x22B").
TYPICAL_BY_SIZE: dict[str, str] = {
    "0.5b": "qwen2.5-0.5b",
    "0.6b": "qwen3-0.6b",
    "1b": "llama-3.2-1b",
    "1.1b": "tinyllama-1.1b",
    "1.5b": "qwen2.5-1.5b",
    "1.7b": "qwen3-1.7b",
    "2b": "gemma-2-2b",
    "3b": "llama-3.2-3b",
    "4b": "qwen3-4b",
    "6b": "yi-1.5-6b",
    "7b": "llama-2-7b",
    "8b": "llama-3.1-8b",
    "9b": "gemma-2-9b",
    "13b": "llama-2-13b",
    "14b": "qwen2.5-14b",
    "27b": "gemma-2-27b",
    "32b": "qwen2.5-32b",
    "34b": "yi-1.5-34b",
    "40b": "falcon-40b",
    "70b": "llama-3.1-70b",
    "72b": "qwen2.5-72b",
    "405b": "llama-3.1-405b",
    "47b": "mixtral-8x7b",
    "57b": "qwen2-57b-a14b",
    "141b": "mixtral-8x22b",
    "235b": "qwen3-235b-a22b",
    "236b": "deepseek-v2",
    "671b": "deepseek-v3",
    "685b": "deepseek-v3",
    "8x7b": "mixtral-8x7b",
    "8x22b": "mixtral-8x22b",
}
MAX_RELATIVE_GAP = 0.25  # beyond this the nearest catalog model is not a fair stand-in


def parse_bare_size(text: str) -> tuple[int | None, int] | None:
    """'7B' -> (None, 7e9); '8x7B' -> (8, 7e9); '70亿' -> (None, 7e9); not a size -> None."""
    match = _SIZE.match(text or "")
    if not match:
        return None
    unit = match.group("unit").lower()
    count = round(float(match.group("num")) * _MULTIPLIERS[unit])
    experts = match.group("experts")
    return (int(experts) if experts else None, count)


def _size_key(experts: int | None, count: int) -> str:
    billions = count / 10**9
    text = f"{billions:.1f}".rstrip("0").rstrip(".") + "b"
    return f"{experts}x{text}" if experts else text


def resolve_bare_size(text: str) -> tuple[ModelSpec, str] | None:
    """(typical catalog model, the sentence saying so) for a bare size; None if `text` is not a size."""
    from tools.catalog.models import get_model, list_models

    parsed = parse_bare_size(text)
    if parsed is None:
        return None
    experts, count = parsed
    if count <= 0:
        raise ScenarioError("model", f"'{text}' is not a positive model size", accepted="e.g. 7B, 70亿, 8x7B")
    key = _size_key(experts, count)
    if key in TYPICAL_BY_SIZE:
        spec = get_model(TYPICAL_BY_SIZE[key])
        return spec, (
            f"a bare '{text.strip()}' is taken as {spec.name}'s architecture ({fmt_count(spec.params)} params)"
        )
    wanted = count * (experts or 1)
    pool = [m for m in list_models() if not m.architecture.is_moe] if not experts else list_models()
    nearest = min(pool, key=lambda m: abs(m.params - wanted) / wanted)
    gap = abs(nearest.params - wanted) / wanted
    if gap > MAX_RELATIVE_GAP:
        raise ScenarioError(
            "model",
            f"no catalog architecture is close to {fmt_count(wanted)} parameters "
            f"(nearest: {nearest.name}, {fmt_count(nearest.params)})",
            accepted="a catalog model name, or the model's HF config.json (architecture)",
            suggestions=[nearest.id],
        )
    return nearest, (
        f"a bare '{text.strip()}' is taken as {nearest.name}'s architecture, the catalog model with the "
        f"nearest parameter count ({fmt_count(nearest.params)} params, {gap:.0%} from {fmt_count(wanted)})"
    )
