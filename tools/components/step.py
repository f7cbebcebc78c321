"""What every component of one model's step reads: the resolved job, the model, its stage on this GPU."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from tools.components.local import LocalParams
from tools.lora import full_trainable
from tools.optimizers import OptimizerRule, TrainableSpec
from tools.parallel import Layout, Stage
from tools.phases import GradsFromBackward, GradsWholeStep, gradient_lifetime
from tools.precision import Recipe
from tools.quant import WeightFormat

if TYPE_CHECKING:
    from tools.resolve import ModelRef, ResolvedScenario


@dataclass(frozen=True)
class ModelStep:
    """One model on the most loaded GPU of `stage`: inputs shared by its components."""

    rs: ResolvedScenario
    model: ModelRef
    stage: Stage
    role: str | None
    fmt: WeightFormat  # frozen / inference weights
    batch: int
    seq: int
    loc: LocalParams

    @property
    def lay(self) -> Layout:
        return self.rs.layout

    @property
    def arch(self):
        return self.model.arch

    @property
    def pb(self):
        return self.model.params

    @property
    def vocab_local(self) -> int:
        """Vocabulary entries of the vocab-parallel LM head on one TP rank."""
        return -(-self.arch.vocab_size // self.lay.tp)


@dataclass(frozen=True)
class TrainStep(ModelStep):
    """A training step of one model: its trainable set, recipe, optimizer and local trainable share."""

    spec: TrainableSpec | None = None  # None: every parameter trains
    adapters: bool = False  # LoRA-style: frozen base in `fmt`, adapters in the recipe's bytes

    @property
    def recipe(self) -> Recipe:
        assert self.rs.recipe is not None
        return self.rs.recipe

    @property
    def opt(self) -> OptimizerRule:
        assert self.rs.optimizer is not None
        return self.rs.optimizer

    @cached_property
    def trainable(self) -> TrainableSpec:
        return self.spec or full_trainable(self.pb, self.arch.hidden_size)

    @property
    def full(self) -> bool:
        """Every parameter trains (full fine-tuning, pretraining)."""
        return not self.adapters and self.trainable.params >= self.pb.total

    @property
    def dp(self) -> int:
        return self.lay.dp

    @cached_property
    def trainable_local(self) -> int:
        """Trainable parameters held by this GPU (adapters: their TP/PP share; freeze: the trainable
        layers among this stage's; full: every local parameter)."""
        spec, pb, stage = self.trainable, self.pb, self.stage
        if self.adapters:
            return round(spec.params * stage.n_layers / pb.num_layers / self.lay.tp)
        if spec.params >= pb.total:
            return self.loc.total
        return round(trainable_layers_on_stage(spec, pb, stage) * self.loc.layer_local)

    @property
    def trainable_share(self) -> float:
        """This GPU's share of the trainable parameters (scales optimizer states computed globally)."""
        spec = self.trainable
        return self.trainable_local / spec.params if spec.params else 0.0

    @cached_property
    def gradient_life(self) -> GradsWholeStep | GradsFromBackward:
        """How long gradients live: the framework decides (tools.phases.gradient_lifetime)."""
        lay = self.lay
        return gradient_lifetime(
            zero_stage=lay.zero_stage,
            recipe=self.recipe.name,
            model_parallel=lay.tp * lay.pp * lay.cp > 1,
            accumulation_steps=self.rs.scenario.gradient_accumulation_steps or 1,
        )


def trainable_layers_on_stage(spec: TrainableSpec, pb, stage: Stage) -> int:
    """Freeze tuning: how many of this stage's layers are among the last trainable ones."""
    per_layer = pb.layers_total / pb.num_layers
    n_train = round(spec.params / per_layer) if per_layer else 0
    lo, hi = stage.first_layer, stage.first_layer + stage.n_layers
    return max(0, min(hi, pb.num_layers) - max(lo, pb.num_layers - n_train))
