"""Activations on one GPU: what autograd saves in training, the no-grad forward transient otherwise.

Training (tools.rules.activations.stage_activations): the saved tensors of this stage's layers at the end of
forward, the recomputed layer's tensors during its backward under full recompute, and the final norm
before the LM head. A frozen weight's matmul saves no input, so LoRA saves only what its targeted
linears need (tools.rules.activations.SaveMask) and freeze tuning saves nothing below its first trainable
layer (no tensor there requires grad).
Inference / frozen forward (tools.rules.activations.inference_transient): the largest live set inside one
layer of a no-grad forward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from tools.call_memo import memo_args
from tools.components.phased import Entry, PhasedComponent, phased
from tools.components.step import ModelStep, TrainStep, trainable_layers_on_stage
from tools.model.lora import decoder_linears
from tools.rules.activations import (
    FULL_MASK,
    SaveMask,
    StageActivations,
    final_norm_bytes,
    inference_transient_entry,
    stage_activations,
)
from tools.rules.quant import Bnb4bitFormat, BnbInt8Format

if TYPE_CHECKING:
    from tools.resolve import ModelRef

TRANSIENT_LABEL = "forward_transient"  # label code (tools/labels.py)
TRANSIENT_SOURCE = "largest live set inside one layer of a no-grad forward; calibration.INFERENCE_TRANSIENT_*"


def save_mask(ts: TrainStep) -> SaveMask:
    """Which inputs the trained model's layers save for backward."""
    spec, rs = ts.trainable, ts.rs
    if not (ts.adapters and spec.targets):
        return FULL_MASK
    mask = SaveMask.for_targets(spec.targets, own_input_copies=ts.recipe.autocast_copies)
    if (rs.scenario.lora_dropout or 0.0) > 0:
        mask = mask._replace(own_input_copies=True, lora_dropout=True)
    if isinstance(ts.fmt, Bnb4bitFormat | BnbInt8Format):
        mask = mask._replace(base_saves_inputs=True)  # bnb MatMul4Bit / MatMul8bitLt keep their input
    if rs.scenario.dora:
        pb = ts.pb
        dora_out = sum(
            lin.count * lin.out_features
            for lin in decoder_linears(pb)
            if lin.name in spec.targets and not lin.expert
        )
        mask = mask._replace(dora_out_features=dora_out // max(1, pb.num_layers))
    return mask


class TrainingActivations(NamedTuple):
    """The stage's saved activations and the final norm's, with the recomputed layer's live bytes."""

    stage: StageActivations
    final_norm: int

    @property
    def kept(self) -> int:
        return self.stage.kept + self.final_norm

    def entry(self, with_live: bool) -> Entry:
        """At the end of forward (kept only) or at the recomputed layer's backward (kept + live)."""
        act, final_norm = self.stage, self.final_norm
        total = self.kept + (act.live if with_live else 0)

        def texts() -> tuple[str, str]:
            formula = act.formula if with_live else act.kept_formula
            head, _, per_layer = (act.substituted if with_live else act.kept_substituted).partition(
                "; A_layer = "
            )
            if final_norm:
                formula = formula.replace(";", " + A_final_norm;", 1)
                head += f" + {final_norm:,} B = {total:,} B"
            return formula, head + (f"; A_layer = {per_layer}" if per_layer else "")

        return total, texts


def training_activations(ts: TrainStep) -> TrainingActivations:
    rs, lay, recipe, pb, stage = ts.rs, ts.lay, ts.recipe, ts.pb, ts.stage
    s_local = max(1, ts.seq // lay.cp)
    act_layers = stage.n_layers
    if not ts.adapters and ts.trainable.params < pb.total:
        act_layers = trainable_layers_on_stage(ts.trainable, pb, stage)
    residual_bytes = (
        ts.fmt.compute_bytes if ts.adapters else recipe.residual_bytes
    )  # 16-bit base: 16-bit residual
    act = _stage_activations(
        ts.model,
        b=ts.batch,
        s=s_local,
        act_bytes=recipe.activation_bytes,
        residual_bytes=residual_bytes,
        flash=rs.flash,
        kernel=rs.attention_kernel,
        tp=lay.tp,
        sp=lay.sequence_parallel,
        recompute=rs.recompute,
        n_layers=act_layers,
        in_flight=stage.in_flight,
        mask=save_mask(ts),
    )
    final_norm = 0
    if stage.last and act_layers:  # the final norm's saved tensors (its output feeds the LM head)
        final_norm = final_norm_bytes(
            ts.arch,
            tokens=ts.batch * s_local,
            act_bytes=recipe.activation_bytes,
            residual_bytes=residual_bytes,
            trains=ts.full,
        )
    return TrainingActivations(act, final_norm)


@memo_args  # a planner search asks the same stage of many candidates (keyed on the model by identity)
def _stage_activations(model: ModelRef, **settings: Any) -> StageActivations:
    return stage_activations(model.arch, **settings)


@memo_args
def transient_entry(model: ModelRef, **settings: Any) -> Entry:
    """`tools.rules.activations.inference_transient_entry` of `model`'s architecture, shared by the
    candidates of a planner search."""
    return inference_transient_entry(model.arch, **settings)


def activations_part(
    ts: TrainStep, acts: TrainingActivations, recompute_moment: bool
) -> PhasedComponent | None:
    """The backward phase is the recomputed layer's moment (kept + live) when that is the larger one."""
    rs = ts.rs
    return phased(
        "activations",
        "activations.kind",
        acts.stage.source,
        {"end_of_forward": acts.entry(False), "backward": acts.entry(recompute_moment)},
        ts.role,
        recompute=rs.recompute,
        kernel=rs.attention_kernel,
    )


def forward_transient(ms: ModelStep, at: dict[str, Entry]) -> PhasedComponent | None:
    """The no-grad forward transient at each phase (entries from
    tools.rules.activations.inference_transient_entry)."""
    return phased("activations", TRANSIENT_LABEL, TRANSIENT_SOURCE, at, ms.role)
