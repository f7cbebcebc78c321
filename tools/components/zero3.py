"""ZeRO-3 gathered parameters: the largest unit all-gathered at once plus the prefetch bucket
(DeepSpeed stage3.py, stage3_prefetch_bucket_size 5e7; FSDP FULL_SHARD), and in backward the unreduced
gradients of that unit (DeepSpeed estimate_zero3_model_states_mem_needs: largest_layer_memory)."""

from __future__ import annotations

from tools import calibration as cal
from tools.components.phased import PhasedComponent, phased
from tools.components.step import TrainStep


def zero3_gathered(ts: TrainStep) -> PhasedComponent | None:
    lay, recipe, loc = ts.lay, ts.recipe, ts.loc
    if lay.zero_stage < 3 or not (ts.dp > 1 or lay.offload_params):
        return None
    wb = ts.fmt.compute_bytes if ts.adapters else recipe.weight_bytes
    live = loc.largest_gathered + min(cal.ZERO3_PREFETCH_BUCKET_ELEMENTS, loc.largest_gathered)
    gathered = live * wb
    bwd = gathered + (0 if ts.adapters else loc.largest_gathered * recipe.grad_bytes)
    return phased(
        "zero3_gathered_params",
        "zero3_gathered_params",
        "DeepSpeed stage3.py (stage3_prefetch_bucket_size 5e7) / FSDP FULL_SHARD all-gather; "
        "DeepSpeed estimate_zero3_model_states_mem_needs largest_layer_memory",
        {
            "end_of_forward": (
                gathered,
                lambda: (
                    "(P_largest_layer + min(P_prefetch, P_largest_layer)) x B_w",
                    f"{live:,} x {wb} B = {gathered:,} B",
                ),
            ),
            "backward": (
                bwd,
                lambda: (
                    "P_gathered x B_w + P_largest_layer x B_grad",
                    f"{live:,} x {wb} B + {loc.largest_gathered:,} x {recipe.grad_bytes} B = {bwd:,} B",
                ),
            ),
        },
        ts.role,
    )
