"""Bare model sizes ('7B', '70亿', '8x7B', '7 billion') mapped to a typical catalog architecture.

A bare size says nothing about layers, heads or vocabulary, so the estimator borrows the
architecture of a well-known model of that size and says which one (`assumed`).
Common sizes map to the model people usually mean; other sizes take the catalog dense
model with the nearest parameter count, within `MAX_RELATIVE_GAP`.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from tools.errors import ScenarioError
from tools.model.architecture import Architecture
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
    r"^\s*(?:an?\s+)?(?:(?P<experts>\d+)\s*[x×*]\s*)?(?P<num>\d+(?:\.\d+)?)\s*"
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
MAX_RELATIVE_GAP = 0.02  # a catalog model stands in for a bare size only within 2 % of it
# families that are not a fair stand-in for "a N-billion model": encoders, vision-language checkpoints,
# unreleased or pre-2022 layouts
_NOT_STAND_INS = {"bert", "mllama", "qwen2_vl", "olmo", "bloom", "falcon", "phi"}
# (hidden, layers) of dense decoders people know, smallest to largest (GPT-2 small, Qwen2.5-0.5B/1.5B,
# Llama-3.2-1B/3B, Gemma-2-2B, Qwen2.5-7B, Llama-3-8B, Llama-2-13B, Qwen2.5-14B/32B, Mistral-Small-22B,
# Llama-3-70B, Llama-3.1-405B); a bare size takes the one whose SwiGLU width comes out nearest the usual
# ~3 x hidden. Layout: RMSNorm, GQA with 8 KV heads of 128, untied 128,256-token vocabulary (Llama-3).
TYPICAL_SHAPES: tuple[tuple[int, int], ...] = (
    (768, 12),
    (1024, 24),
    (1536, 28),
    (2048, 16),
    (2304, 26),
    (2560, 32),
    (3072, 28),
    (3584, 28),
    (4096, 32),
    (5120, 40),
    (5120, 48),
    (5120, 64),
    (6144, 56),
    (7168, 64),
    (8192, 80),
    (12288, 96),
    (16384, 126),
    *((h, h // 128) for h in range(18432, 65537, 2048)),
)
TYPICAL_VOCAB = 128256
TYPICAL_HEAD_DIM = 128
TYPICAL_KV_HEADS = 8
TYPICAL_MLP_RATIO = 3.0


def _base(hidden: int, layers: int, vocab: int) -> Architecture:
    heads = max(1, hidden // TYPICAL_HEAD_DIM)
    return Architecture(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        # GQA groups whole query heads: the largest count up to 8 that divides the heads (12 heads -> 4)
        num_key_value_heads=math.gcd(TYPICAL_KV_HEADS, heads),
        head_dim=TYPICAL_HEAD_DIM,
        intermediate_size=8,
        vocab_size=vocab,
        max_position_embeddings=131072,
    )


def _width_for(count: int, arch: Architecture) -> int:
    """The SwiGLU intermediate size (a multiple of 8) that brings `arch` closest to `count` from below."""
    from tools.model.params import count_params

    h, layers = arch.hidden_size, arch.num_hidden_layers
    fixed = count_params(arch).total - layers * 3 * h * arch.intermediate_size
    return 8 * int((count - fixed) // (3 * h * layers * 8))


def architecture_for_params(count: int) -> tuple[Architecture, dict[str, object]]:
    """A dense decoder with exactly `count` parameters, from the shapes typical of that size.

    Of `TYPICAL_SHAPES`, the (hidden, layers) whose solved SwiGLU width is nearest 3 x hidden; the
    intermediate size is solved for the count (a multiple of 8) and the few parameters rounding leaves
    (well under 0.1 %) are carried in `extra_params`, so the count is exact: 7e9 params in fp16 are
    14.0 GB of weights.
    """
    import math

    from tools.model.params import count_params

    vocab = TYPICAL_VOCAB if count >= 300_000_000 else 32000
    best: tuple[float, Architecture] | None = None
    for hidden, layers in TYPICAL_SHAPES:
        base = _base(hidden, layers, vocab)
        width = _width_for(count, base)
        if width < hidden:  # the embeddings and attention alone nearly fill the count
            continue
        score = abs(math.log(width / (TYPICAL_MLP_RATIO * hidden)))
        if best is None or score < best[0]:
            best = (score, base.model_copy(update={"intermediate_size": width}))
    if best is None:
        raise ScenarioError(
            "model",
            f"{count:,} parameters is too small for a decoder language model",
            accepted="e.g. 1B, 7B, 70B",
            code="size_too_small",
            values={"count": f"{count:,}"},
        )
    arch = best[1]
    arch = arch.model_copy(update={"extra_params": count - count_params(arch).total})
    # the shapes as an Assumption's values: dimensions said as they are, without thousands separators
    values: dict[str, object] = {
        "layers": arch.num_hidden_layers,
        "hidden": str(arch.hidden_size),
        "heads": arch.num_attention_heads,
        "kv": arch.kv_heads,
        "head_dim": TYPICAL_HEAD_DIM,
        "inter": str(arch.intermediate_size),
        "vocab": vocab,
    }
    return arch, values


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


def resolve_bare_size(
    text: str,
) -> tuple[ModelSpec | None, Architecture, tuple[str, dict[str, object]]] | None:
    """(catalog model or None, architecture, (code, values) saying so: an Assumption's, tools/assumptions.py)
    for a bare size; None if not a size.

    A catalog model stands in only within `MAX_RELATIVE_GAP` (2 %) of the stated size (the model people
    usually mean first, else the nearest); otherwise an architecture of exactly that many parameters is
    built from the shapes typical of the size (`architecture_for_params`).
    """
    from tools.catalog.models import get_model, list_models

    parsed = parse_bare_size(text)
    if parsed is None:
        return None
    experts, count = parsed
    if count <= 0:
        raise ScenarioError(
            "model",
            f"'{text}' is not a positive model size",
            accepted="e.g. 7B, 70亿, 8x7B",
            code="size_not_positive",
            values={"size": text},
        )
    key = _size_key(experts, count)
    wanted = count * (experts or 1)
    label = text.strip()
    if key in TYPICAL_BY_SIZE:
        spec = get_model(TYPICAL_BY_SIZE[key])
        if experts or abs(spec.params - wanted) / wanted <= MAX_RELATIVE_GAP:
            values: dict[str, object] = {"size": label, "model": spec.name, "params": fmt_count(spec.params)}
            return spec, spec.architecture, ("model.bare_size", values)
    pool = [
        m for m in list_models() if m.family not in _NOT_STAND_INS and (experts or not m.architecture.is_moe)
    ]
    nearest = min(pool, key=lambda m: abs(m.params - wanted) / wanted)
    gap = abs(nearest.params - wanted) / wanted
    if gap <= MAX_RELATIVE_GAP:
        values = {
            "size": label,
            "model": nearest.name,
            "params": fmt_count(nearest.params),
            "gap": f"{gap:.1%}",
            "wanted": fmt_count(wanted),
        }
        return nearest, nearest.architecture, ("model.nearest_size", values)
    if experts:
        raise ScenarioError(
            "model",
            f"no catalog mixture-of-experts model is close to {experts}x{fmt_count(count)}",
            accepted="a catalog model name, or the model's HF config.json (architecture)",
            suggestions=[nearest.id],
            code="moe_size_unknown",
            values={"size": f"{experts}x{fmt_count(count)}"},
        )
    arch, shape_values = architecture_for_params(wanted)
    values = {"size": label, "params": wanted, **shape_values, "within": f"{MAX_RELATIVE_GAP:.0%}"}
    return None, arch, ("model.built_for_size", values)
