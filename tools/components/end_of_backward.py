"""End of backward: with gradients from backward on (HF Trainer, one micro-batch), the end of backward,
with every gradient and the first layer's activations still alive, can exceed the fused optimizer step;
it is reported with the step (same gradients and states).

The embedding's backward (torch embedding_dense_backward) builds its gradient in a temporary and
accumulates it into .grad. Tied (the LM head's gradient is already there): 2 x V x h x B_grad beyond all
gradients (traced gemma-2-2b fp32: 4.39 GiB = 2 x 256000 x 2304 x 4 B); untied: 1 x (traced llama-3-8b:
2.03 GiB of temporaries while its own .grad, 0.98 GiB, was not yet there).
"""

from __future__ import annotations

from tools.components.activations import TrainingActivations
from tools.components.phased import PhasedComponent, cite, phased
from tools.components.step import TrainStep


def _embedding_gradient_temporary(ts: TrainStep) -> tuple[int, int]:
    """(copies, bytes) of the embedding gradient built in backward (0 off the first stage / frozen)."""
    if not (ts.stage.first and ts.full):
        return 0, 0
    copies = 1 if ts.pb.lm_head else 2
    return copies, copies * (ts.pb.embedding // ts.lay.tp) * ts.recipe.grad_bytes


def end_of_backward(
    ts: TrainStep, acts: TrainingActivations, step_temporaries: int
) -> PhasedComponent | None:
    """The end-of-backward temporaries at the optimizer step, when they exceed the step's own
    temporaries (`step_temporaries` bytes, which they then replace)."""
    layer_full = acts.stage.layer_full
    k, emb_tail = _embedding_gradient_temporary(ts)
    tail = max(layer_full, emb_tail)
    spec, lay = ts.trainable, ts.lay
    if not (ts.gradient_life.name == "from_backward" and spec.params and tail > step_temporaries):
        return None
    if lay.offload_optimizer:
        return None

    def texts() -> tuple[str, str]:
        if layer_full >= emb_tail:
            return "A_first_layer", f"{tail:,} B"
        return (
            f"G_embedding = {k} x V x h x B_grad",
            f"{k} x {ts.pb.embedding // lay.tp:,} x {ts.recipe.grad_bytes} B = {tail:,} B",
        )

    return phased(
        "end_of_backward_temporaries",
        "end_of_backward_temporaries",
        cite(acts.stage.source, "torch embedding_dense_backward"),
        {"optimizer_step": (tail, texts)},
        ts.role,
    )
