"""Gradients of the trainable parameters: P_trainable_local x B_grad (/ N under ZeRO-2/3).

Their lifetime is the framework's (tools.rules.phases.gradient_lifetime): the whole step (DeepSpeed, Megatron,
gradient accumulation) or from backward to the optimizer step (HF Trainer, one micro-batch).
"""

from __future__ import annotations

from tools import calibration as cal
from tools.components.offload import OPTIMIZER_OFFLOADED_NOTE
from tools.components.phased import PhasedComponent, cite, phased, same
from tools.components.step import TrainStep
from tools.notes import Note


def gradients(ts: TrainStep, notes: list[Note]) -> PhasedComponent | None:
    """The gradients on this GPU (None under ZeRO-Offload: the partitions live in CPU RAM)."""
    lay, recipe, life = ts.lay, ts.recipe, ts.gradient_life
    notes.append(life.note)
    if lay.offload_optimizer:
        notes.append(OPTIMIZER_OFFLOADED_NOTE)
        return None
    g_div = lay.grads_divisor
    grads = ts.trainable_local * recipe.grad_bytes // g_div
    g_phases = life.phases if cal.GRADS_RESIDENT_ALL_STEP else ("optimizer_step",)
    return phased(
        "gradients",
        "gradients.bits",
        cite("ZeRO (Rajbhandari et al. 2020) sec. 3.1", recipe.source),
        same(
            g_phases,
            grads,
            lambda: (
                f"P_trainable_local x {recipe.grad_bytes} B" + (" / N (ZeRO-2/3)" if g_div > 1 else ""),
                f"{ts.trainable_local:,} x {recipe.grad_bytes} B"
                + (f" / {ts.dp}" if g_div > 1 else "")
                + f" = {grads:,} B",
            ),
        ),
        ts.role,
        bits=recipe.grad_bytes * 8,
    )
