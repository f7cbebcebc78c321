"""Phases of a step and the peak: memory is the maximum over moments, not the sum of everything.

Training: `end_of_forward` (all activations saved, loss computed), `backward` (loss backward: the
activations are still alive and the logits' gradients appear), `optimizer_step` (all gradients,
states and the step's temporaries). Inference: `prefill` (prompt KV + the prompt's forward transient),
`decode` (the full KV cache + one token's transient). RL tasks add their own phases (tools/rl.py).
The reported peak is the phase with the most live tensor bytes; its components are what is resident then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tools.result import Component, PhasePeak

TRAINING_PHASES = ("end_of_forward", "backward", "optimizer_step")
INFERENCE_PHASES = ("prefill", "decode")


def peak_of(phases: Mapping[str, Sequence[Component]]) -> tuple[str, list[Component], list[PhasePeak]]:
    """(peak phase, its components, every phase's tensor bytes in order). Ties go to the earlier phase."""
    peaks = [
        PhasePeak.model_construct(phase=name, tensor_bytes=sum(c.bytes for c in comps))
        for name, comps in phases.items()
    ]
    best = max(peaks, key=lambda p: p.tensor_bytes)
    return best.phase, list(phases[best.phase]), peaks
