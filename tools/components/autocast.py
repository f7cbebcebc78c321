"""16-bit autocast copies of fp32 weights (amp recipes): torch.autocast's weight cast cache plus the
copies autograd saves for backward (DOMAIN.md sec. 3): P_matmul_local x 2 B of what is cast."""

from __future__ import annotations

from tools import calibration as cal
from tools.components.phased import FWD_BWD, PhasedComponent, phased, same
from tools.components.step import TrainStep


def _cast_weights(ts: TrainStep) -> tuple[int, str]:
    """(elements, what) of the fp32 weights the autocast region casts to 16 bits."""
    if ts.adapters:
        return ts.trainable_local, "P_adapter"
    if ts.lay.zero_stage >= 3:
        return ts.loc.largest_gathered, "P_largest_layer"
    if ts.rs.task == "freeze":
        return ts.trainable_local, "P_trainable_local"
    # F.embedding is not autocast: no copy of the table
    return ts.loc.linear_local + ts.loc.head_matmul, "P_matmul_local"


def autocast_copies(ts: TrainStep) -> PhasedComponent | None:
    if not ts.recipe.autocast_copies:
        return None
    copied, what = _cast_weights(ts)
    cb = copied * cal.AUTOCAST_COPY_BYTES
    return phased(
        "autocast_weight_copies",
        "autocast_weight_copies",
        "torch.autocast weight cast cache + autograd saved tensors (DOMAIN.md sec. 3)",
        same(
            # full recompute: checkpointed layers save no weight copies for backward and the cast
            # cache is cleared when the autocast region (forward + loss) exits (traced: 0 GiB at the
            # peak, llama-3-8b amp b8 s1024 gc)
            ("end_of_forward",) if ts.rs.recompute == "full" else FWD_BWD,
            cb,
            lambda: (
                f"{what} x {cal.AUTOCAST_COPY_BYTES} B",
                f"{copied:,} x {cal.AUTOCAST_COPY_BYTES} B = {cb:,} B",
            ),
        ),
        ts.role,
    )
