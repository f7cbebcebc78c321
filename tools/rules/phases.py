"""Phases of a step and the peak: memory is the maximum over moments, not the sum of everything.

Training: `end_of_forward` (all activations saved, loss computed), `backward` (loss backward: the
activations are still alive and the logits' gradients appear), `optimizer_step` (all gradients,
states and the step's temporaries). Inference: `prefill` (prompt KV + the prompt's forward transient),
`decode` (the full KV cache + one token's transient). RL tasks add their own phases (tools/rl.py).
The reported peak is the phase with the most live tensor bytes; its components are what is resident then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from tools.notes import note
from tools.result import Component, PhasePeak, constructed

TRAINING_PHASES = ("end_of_forward", "backward", "optimizer_step")
INFERENCE_PHASES = ("prefill", "decode")


def peak_of(phases: Mapping[str, Sequence[Component]]) -> tuple[str, list[Component], list[PhasePeak]]:
    """(peak phase, its components, every phase's tensor bytes in order). Ties go to the earlier phase."""
    peaks = [
        constructed(PhasePeak, phase=name, tensor_bytes=sum(c.bytes for c in comps))
        for name, comps in phases.items()
    ]
    best = max(peaks, key=lambda p: p.tensor_bytes)
    return best.phase, list(phases[best.phase]), peaks


# --------------------------------------------------------------------------------------------------
# Gradient lifetime: a property of the training framework, not of the model
# --------------------------------------------------------------------------------------------------
class GradsWholeStep:
    """Gradients are allocated for the whole step: DeepSpeed (ZeRO gradient partitions / bf16 optimizer
    fp32 accumulation buffers, stage_1_and_2.py), Megatron (contiguous DDP grad buffer, main_grad),
    and any framework accumulating gradients over micro-batches (.grad kept between them)."""

    name = "whole_step"
    phases = TRAINING_PHASES

    def __init__(self, why: str, **values: object) -> None:
        self.note = note(f"gradients_whole_step_{why}", **values)


class GradsFromBackward:
    """HF Trainer / plain PyTorch with one micro-batch per step: `zero_grad(set_to_none=True)` after the
    step, so no gradient exists in forward or at the start of backward; they appear layer by layer
    during backward and are all alive at its end and at the optimizer step (traced: llama-3-8b amp b1
    s2048, 0 B of gradients at the backward peak; benchmarks/accuracy traced cases)."""

    name = "from_backward"
    phases = ("optimizer_step",)  # the end of backward has the same gradients as the step
    note = note("gradients_from_backward")


@lru_cache(maxsize=64)  # a pure function of four settings; the planner asks it for every candidate
def gradient_lifetime(
    *, zero_stage: int, recipe: str, model_parallel: bool, accumulation_steps: int
) -> GradsWholeStep | GradsFromBackward:
    """Which gradient lifetime a training job has, with the reason (stated in the answer's notes):
    DeepSpeed ZeRO keeps gradient partitions/buckets for the whole step; the mixed and megatron recipes
    keep gradients in persistent buffers; Megatron-style TP/PP/CP in a contiguous buffer; gradient
    accumulation keeps .grad between micro-batches; else HF Trainer frees them after each step."""
    if zero_stage >= 1:
        return GradsWholeStep("zero")
    if recipe in ("mixed", "megatron"):
        return GradsWholeStep("recipe", recipe=recipe)
    if model_parallel:
        return GradsWholeStep("model_parallel")
    if accumulation_steps > 1:
        return GradsWholeStep("accumulation")
    return GradsFromBackward()
