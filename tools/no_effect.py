"""Stated settings that do NOT change peak memory, recognised and explained (never silently ignored).

Each rule answers one question for one Scenario field: "given this value, which explanation
applies, and with which numbers?". The answer is data (an explanation code and its values); the
texts, per language, are `prompts/<lang>/no_effect.json`, rendered by the channels
(service/agent/render.py no_effect_text).

Why these have no effect (or only the stated small one):
- epochs, learning_rate, warmup_steps, lora_alpha: scalars or loop counts, no tensor changes size.
- gradient_accumulation_steps: activations are freed after each micro-batch's backward, so the NUMBER of
  steps never scales memory. Going from 1 to > 1 can: HF Trainer without ZeRO/Megatron frees gradients
  after each step (zero_grad(set_to_none=True)) and keeps .grad between micro-batches when accumulating
  (tools.rules.phases.gradient_lifetime), so the peak can gain up to P_trainable x grad bytes. The note states
  the tool's own figures for 1 step vs the stated value (GradAccumRule).
- global_batch_size = micro-batch x accumulation x DP: only the micro-batch is on one GPU at once.
- lora_dropout: PEFT uses nn.Identity for p = 0 (peft/tuners/lora/layer.py update_layer); p > 0
  keeps a dropped copy of each targeted module's input (+ mask) for backward: an activation cost the
  estimator counts (GiB-scale at long sequences: llama-2-7b r=8 q,v b4 s2048 +2.00 GiB).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal, NamedTuple

from tools.errors import ScenarioError
from tools.result import NoEffect
from tools.scenario import Scenario
from tools.units import fmt_gib

Language = Literal["en", "zh"]
LANGUAGES: tuple[str, ...] = ("en", "zh")


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _data_parallel_size(s: Scenario) -> int:
    """DP = num_gpus / (TP x PP x CP): the ranks that split the global batch (Megatron's layout)."""
    model_parallel = (s.tp or 1) * (s.pp or 1) * (s.cp or 1)
    return max(1, (s.num_gpus or 1) // model_parallel)


class Explanation(NamedTuple):
    """Why a stated setting leaves the peak unchanged: a template key and its values."""

    template_key: str
    variables: dict[str, Any]


class ScalarRule(NamedTuple):
    """A setting that never changes any tensor size: one template."""

    field: str

    def explain(self, s: Scenario, value: Any) -> Explanation:
        return Explanation(self.field, {"value": _fmt(value), "micro_batch": s.batch_size or 1})


class AccumulationFigures(NamedTuple):
    """The tool's peak with gradient_accumulation_steps = 1 and with the stated value (same scenario)."""

    tensor_one: int
    total_one: int
    tensor_stated: int
    total_stated: int
    gradients: int  # the gradient bytes of the stated job (0 for inference / offloaded gradients)
    whole_step_anyway: bool  # the framework keeps gradients for the whole step even with 1 step


def _peak_of_scenario(s: Scenario) -> tuple[int, int, int, bool]:
    """(tensor peak, total, gradient bytes, gradients whole-step at 1 step) of `s`.

    tools.estimator.peak_for, the estimate without its no-effect notes: estimate() calls no_effect_notes,
    so calling estimate() here would recurse. tests/test_no_effect.py checks these against estimate().
    """
    from tools.estimator import peak_for
    from tools.resolve import resolve
    from tools.rules.phases import gradient_lifetime

    rs = resolve(s)
    pk = peak_for(rs)
    grads = max(
        (c.bytes for comps in pk.phase_components.values() for c in comps if c.name == "gradients"),
        default=0,
    )
    lay = rs.layout
    whole_step = rs.recipe is not None and (
        gradient_lifetime(
            zero_stage=lay.zero_stage,
            recipe=rs.recipe.name,
            model_parallel=lay.tp * lay.pp * lay.cp > 1,
            accumulation_steps=1,
        ).name
        == "whole_step"
    )
    return pk.tensor_bytes, pk.total_bytes, grads, whole_step


@lru_cache(maxsize=256)
def _accumulation_figures_cached(scenario_json: str) -> AccumulationFigures | None:
    s = Scenario.model_validate_json(scenario_json)
    try:
        tensor_one, total_one, _, whole_step = _peak_of_scenario(
            s.model_copy(update={"gradient_accumulation_steps": 1})
        )
        tensor_stated, total_stated, grads, _ = _peak_of_scenario(s)
    except ScenarioError:  # an incomplete scenario: the note is given without figures
        return None
    return AccumulationFigures(tensor_one, total_one, tensor_stated, total_stated, grads, whole_step)


def accumulation_figures(s: Scenario) -> AccumulationFigures | None:
    """The tool's figures for `s` with 1 accumulation step and with its own (cached per scenario: the
    estimator and the Chinese renderer both ask for the same scenario)."""
    return _accumulation_figures_cached(s.model_dump_json(exclude_none=True))


class GradAccumRule(NamedTuple):
    """1 step: nothing to say but the lifetime; > 1: the tool's peak with 1 step vs the stated value.

    The number of steps beyond 1 never matters (activations are freed per micro-batch); 1 -> > 1 adds the
    gradients to the forward/backward peak only where the framework frees them after each step
    (HF Trainer, tools.rules.phases.GradsFromBackward)."""

    field: str = "gradient_accumulation_steps"

    def explain(self, s: Scenario, value: Any) -> Explanation:
        variables: dict[str, Any] = {"value": _fmt(value), "micro_batch": s.batch_size or 1}
        if int(value) <= 1:
            return Explanation("gradient_accumulation_steps_one", variables)
        fig = accumulation_figures(s)
        if fig is None:
            return Explanation("gradient_accumulation_steps", variables)
        variables.update(
            total=fmt_gib(fig.total_stated),
            total_one=fmt_gib(fig.total_one),
            tensor=fmt_gib(fig.tensor_stated),
            tensor_one=fmt_gib(fig.tensor_one),
            delta=fmt_gib(fig.tensor_stated - fig.tensor_one),
            gradients=fmt_gib(fig.gradients),
        )
        if fig.tensor_stated > fig.tensor_one:
            return Explanation("gradient_accumulation_steps_resident", variables)
        if fig.whole_step_anyway:
            return Explanation("gradient_accumulation_steps_whole_step", variables)
        return Explanation("gradient_accumulation_steps_same", variables)


class LoraDropoutRule(NamedTuple):
    """p = 0: PEFT's nn.Identity, nothing at all; p > 0: an activation cost (counted by the estimator), stated."""

    field: str = "lora_dropout"

    def explain(self, s: Scenario, value: Any) -> Explanation:
        key = "lora_dropout_zero" if float(value) == 0.0 else "lora_dropout_positive"
        return Explanation(key, {"value": _fmt(value)})


class GlobalBatchRule(NamedTuple):
    """global batch = micro-batch x accumulation x DP; only the micro-batch sets the peak."""

    field: str = "global_batch_size"

    def explain(self, s: Scenario, value: Any) -> Explanation:
        micro = s.batch_size or 1
        dp = _data_parallel_size(s)
        variables: dict[str, Any] = {"value": _fmt(value), "micro_batch": micro, "dp": dp}
        if s.gradient_accumulation_steps is None:
            variables["grad_accum_implied"] = max(1, -(-int(value) // (micro * dp)))
            return Explanation("global_batch_size_implied", variables)
        accum = s.gradient_accumulation_steps
        product = micro * accum * dp
        variables.update(grad_accum=accum, product=product)
        key = "global_batch_size" if product == int(value) else "global_batch_size_mismatch"
        return Explanation(key, variables)


RULES: tuple[ScalarRule | GradAccumRule | LoraDropoutRule | GlobalBatchRule, ...] = (
    ScalarRule("epochs"),
    GradAccumRule(),
    ScalarRule("learning_rate"),
    ScalarRule("lora_alpha"),
    LoraDropoutRule(),
    ScalarRule("warmup_steps"),
    GlobalBatchRule(),
)
NO_EFFECT_FIELDS: tuple[str, ...] = tuple(r.field for r in RULES)


def no_effect_notes(scenario: Scenario) -> list[NoEffect]:
    """One NoEffect per stated setting that does not change peak memory, with its explanation's code."""
    notes: list[NoEffect] = []
    for rule in RULES:
        value = getattr(scenario, rule.field)
        if value is None:
            continue
        explanation = rule.explain(scenario, value)
        notes.append(
            NoEffect(
                field=rule.field, value=value, code=explanation.template_key, values=explanation.variables
            )
        )
    return notes
