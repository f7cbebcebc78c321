"""Per-layer activation bytes of real transformers blocks, measured, next to the estimator's formula.

    python -m benchmarks.accuracy.calibrate

For each block family the real architecture is traced with 1 and with 2 decoder layers (same
b, s); the difference of the bytes created during the forward pass (live at forward end minus
live before it) is exactly what one layer saves for backward (plus, under autocast, its bf16
weight copies, reported apart). Printed per token, next to `tools.rules.activations.LlamaBlock` /
`GptBlock` per-layer bytes per token, so `tools/calibration.py` constants can be fitted. Uses
the calibration split's models only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tools.catalog.models import find_model
from tools.rules.activations import block_for
from tools.trace.request import CATALOG_FAMILIES

PROBES = [
    # model, recipe, attention
    ("llama-3-8b", "bf16", "sdpa"),
    ("llama-3-8b", "amp", "sdpa"),
    ("llama-3-8b", "bf16", "eager"),
    ("llama-2-7b", "bf16", "sdpa"),
    ("qwen2.5-7b", "bf16", "sdpa"),
    ("qwen3-8b", "bf16", "sdpa"),
    ("mistral-7b-v0.1", "bf16", "sdpa"),
    ("gemma-2-2b", "bf16", "eager"),
    ("mixtral-8x7b", "bf16", "sdpa"),
    ("qwen3-30b-a3b", "bf16", "sdpa"),
    ("gpt2", "bf16", "sdpa"),
    ("llama-3-8b", "fp32", "sdpa"),
]
B, S = 2, 512

# Constants the calibration split's traces contradict, with the traced evidence, applied in memory by
# `python -m benchmarks.accuracy.run --proposed` before they go into tools/calibration.py. Empty: every
# constant these traces supported (fused AdamW default, per-framework gradient lifetime, o_proj input as a
# view of the SDPA output, 12 B/elem loss backward) is in tools/calibration.py / tools/rules/phases.py.
PROPOSED: dict[str, tuple[Any, str]] = {}


@contextmanager
def proposed_constants() -> Iterator[None]:
    """tools.calibration with PROPOSED values, in memory only (restored on exit)."""
    import tools.calibration as cal
    import tools.rules.logits as logits

    old = {name: getattr(cal, name) for name in PROPOSED}
    old_logits = dict(logits.TRAINING_BYTES_PER_ELEMENT)
    try:
        for name, (value, _why) in PROPOSED.items():
            setattr(cal, name, value)
        logits.TRAINING_BYTES_PER_ELEMENT["backward"] = cal.LOGITS_BACKWARD_PEAK_BYTES
        yield
    finally:
        for name, value in old.items():
            setattr(cal, name, value)
        logits.TRAINING_BYTES_PER_ELEMENT.clear()
        logits.TRAINING_BYTES_PER_ELEMENT.update(old_logits)


def forward_bytes(model: str, recipe: str, attention: str, layers: int) -> tuple[int, int]:
    from tools.trace.steps import TraceRequest, trace  # torch: only when measuring
    from tools.trace.tracker import AUTOCAST_COPIES

    spec = find_model(model)
    arch = spec.architecture.model_copy(update={"num_hidden_layers": layers})
    res = trace(
        TraceRequest(
            architecture=arch,
            task="full_finetune",
            recipe=recipe,
            batch_size=B,
            seq_len=S,
            attention=attention,
            steps=1,
            family=CATALOG_FAMILIES.get(spec.family),
        )
    )
    phases = {p.name: p for p in res.report.phases}
    setup_end = next(p for p in res.report.phases if p.name == "setup").end_bytes
    return phases["forward"].end_bytes - setup_end, res.report.breakdown.get(AUTOCAST_COPIES, 0)


def main() -> int:
    print("| model | recipe | attention | traced B/token/layer | estimator B/token/layer | ratio |")
    print("|---|---|---|---:|---:|---:|")
    for model, recipe, attention in PROBES:
        one, _ = forward_bytes(model, recipe, attention, 1)
        two, _ = forward_bytes(model, recipe, attention, 2)
        per_tok = (two - one) / (B * S)
        arch = find_model(model).architecture
        act = 4 if recipe == "fp32" else 2
        est = block_for(arch).per_layer(
            arch, b=B, s=S, act_bytes=act, residual_bytes=act, flash=attention == "sdpa", tp=1, sp=False
        ).full / (B * S)
        print(f"| {model} | {recipe} | {attention} | {per_tok:,.0f} | {est:,.0f} | {est / per_tok:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
