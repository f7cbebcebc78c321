"""What every component of one model's step reads: the resolved job, the model, its stage on this GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tools.components.local import LocalParams
from tools.model.lora import full_trainable
from tools.rules.optimizers import OptimizerRule, TrainableSpec
from tools.rules.parallel import Layout, Stage
from tools.rules.phases import GradsFromBackward, GradsWholeStep, gradient_lifetime
from tools.rules.precision import Recipe
from tools.rules.quant import WeightFormat

if TYPE_CHECKING:
    from tools.model.architecture import Architecture, ParamBreakdown
    from tools.resolve import ModelRef, ResolvedScenario


@dataclass(slots=True)
class ModelStep:
    """One model on the most loaded GPU of `stage`: inputs shared by its components (read-only once
    built; slots, not frozen, so that building one per candidate of the planner stays cheap)."""

    rs: ResolvedScenario
    model: ModelRef
    stage: Stage
    role: str | None
    fmt: WeightFormat  # frozen / inference weights
    batch: int
    seq: int
    loc: LocalParams
    # read by every component: set once from the fields above (plain attributes, no call per read)
    lay: Layout = field(init=False)
    arch: Architecture = field(init=False)
    pb: ParamBreakdown = field(init=False)
    dp: int = field(init=False)  # data-parallel ranks (the ZeRO divisor N)

    def __post_init__(self) -> None:
        self.lay = lay = self.rs.layout
        self.arch = self.model.arch
        self.pb = self.model.params
        self.dp = lay.dp

    @property
    def vocab_local(self) -> int:
        """Vocabulary entries of the vocab-parallel LM head on one TP rank."""
        return -(-self.arch.vocab_size // self.lay.tp)


@dataclass(slots=True)
class TrainStep(ModelStep):
    """A training step of one model: its trainable set, recipe, optimizer and local trainable share."""

    spec: TrainableSpec | None = None  # None: every parameter trains
    adapters: bool = False  # LoRA-style: frozen base in `fmt`, adapters in the recipe's bytes
    recipe: Recipe = field(init=False)
    opt: OptimizerRule = field(init=False)
    trainable: TrainableSpec = field(init=False)  # `spec`, or every parameter
    full: bool = field(init=False)  # every parameter trains (full fine-tuning, pretraining)
    # trainable parameters held by this GPU (adapters: their TP/PP share; freeze: the trainable layers
    # among this stage's; full: every local parameter), and their share of the trainable set
    trainable_local: int = field(init=False)
    trainable_share: float = field(init=False)
    # how long gradients live: the framework decides (tools.rules.phases.gradient_lifetime)
    gradient_life: GradsWholeStep | GradsFromBackward = field(init=False)

    def __post_init__(self) -> None:
        ModelStep.__post_init__(self)  # (slots=True classes cannot use the zero-argument super())
        rs, pb, lay = self.rs, self.pb, self.lay
        assert rs.recipe is not None and rs.optimizer is not None
        self.recipe, self.opt = rs.recipe, rs.optimizer
        self.trainable = spec = self.spec or full_trainable(pb, self.arch.hidden_size)
        self.full = not self.adapters and spec.params >= pb.total
        self.trainable_local = local = self._trainable_local(spec)
        self.trainable_share = local / spec.params if spec.params else 0.0
        self.gradient_life = gradient_lifetime(
            zero_stage=lay.zero_stage,
            recipe=rs.recipe.name,
            model_parallel=lay.tp * lay.pp * lay.cp > 1,
            accumulation_steps=rs.scenario.gradient_accumulation_steps or 1,
        )

    def _trainable_local(self, spec: TrainableSpec) -> int:
        pb, stage = self.pb, self.stage
        if self.adapters:
            return round(spec.params * stage.n_layers / pb.num_layers / self.lay.tp)
        if spec.params >= pb.total:
            return self.loc.total
        return round(trainable_layers_on_stage(spec, pb, stage) * self.loc.layer_local)


def trainable_layers_on_stage(spec: TrainableSpec, pb, stage: Stage) -> int:
    """Freeze tuning: how many of this stage's layers are among the last trainable ones."""
    per_layer = pb.layers_total / pb.num_layers
    n_train = round(spec.params / per_layer) if per_layer else 0
    lo, hi = stage.first_layer, stage.first_layer + stage.n_layers
    return max(0, min(hi, pb.num_layers) - max(lo, pb.num_layers - n_train))
