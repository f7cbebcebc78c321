"""Scenario in, Estimate out: the deterministic, cited GPU-memory estimate of one job.

    estimate(scenario, *, plan=True) -> Estimate

1. `tools.resolve.resolve`: validate, fill defaults (each recorded as an Assumption), pick the rules.
2. Per-model footprint by phase (`tools.footprint.model_footprint`; RL tasks: `tools.rl.rl_footprint(rs)`,
   which composes actor/critic/reference/reward footprints and returns a ModelFootprint).
3. Peak = the phase with most live tensor bytes (`tools.rules.phases.peak_of`); its components are what is
   resident then and sum to `per_gpu.tensor_peak_bytes`.
4. Runtime overhead (`tools.rules.overhead`): CUDA context, allocator slack, NCCL buffers; tensor + overhead
   components sum to `per_gpu.total_bytes`.
5. Verdict: fits when total <= (1 - safety_margin) x card memory; headroom = that budget - total.
6. Inference: vLLM-style serving capacity (`tools.serving`). Then stated settings that do not change
   memory (`tools.no_effect`) and, with plan=True, the planner's suggestions and min_gpus (`tools.planner`).
"""

from __future__ import annotations

from typing import NamedTuple

from tools.accuracy import AccuracyBound, accuracy_bound
from tools.components.savers import saver_assumptions
from tools.cutoff import OverLimit, cutoff
from tools.footprint import ModelFootprint, model_footprint
from tools.no_effect import no_effect_notes
from tools.resolve import RL_TASKS, ResolvedScenario, resolve
from tools.result import Component, Estimate, GpuInfo, PerGpu, PhasePeak, constructed
from tools.round_trip import as_asked
from tools.rules.overhead import overhead_bytes, overhead_components
from tools.rules.phases import peak_of
from tools.scenario import Scenario
from tools.unified_memory import for_the_device


def footprint_for(rs: ResolvedScenario) -> ModelFootprint:
    """The job's footprint on its most loaded GPU (RL tasks composed by tools.rl)."""
    if rs.task in RL_TASKS:
        from tools.rl import rl_footprint  # RL jobs only: keeps the start-up of the others light

        return rl_footprint(rs)
    return model_footprint(rs)


class Peak(NamedTuple):
    """Steps 2-4 of the module docstring: the footprint by phase, the peak phase and what is resident then."""

    fp: ModelFootprint
    phase_components: dict[str, list[Component]]
    peak_phase: str
    tensors: list[Component]  # resident at the peak; sum = tensor_bytes
    phases: list[PhasePeak]
    overhead: list[Component]
    tensor_bytes: int
    total_bytes: int  # tensors + overhead


def peak_for(rs: ResolvedScenario) -> Peak:
    """The peak of a resolved scenario, without the verdict, notes or planner (tools.no_effect compares
    peaks of variants of one scenario with it: estimate() itself would recurse into the notes)."""
    fp = footprint_for(rs)
    phase_components = fp.components_by_phase()
    peak_phase, tensors, phases = peak_of(phase_components)
    tensor_peak = sum(c.bytes for c in tensors)
    overhead = overhead_components(rs.layout, tensor_peak_bytes=tensor_peak, training=rs.training)
    total = tensor_peak + sum(c.bytes for c in overhead)
    return Peak(fp, phase_components, peak_phase, tensors, phases, overhead, tensor_peak, total)


def usable_bytes(memory_bytes: int, safety_margin: float) -> int:
    """What a job may use of a card: its memory less the safety margin (the verdict's budget)."""
    return int(memory_bytes * (1.0 - safety_margin))


class Fit(NamedTuple):
    """What the planner compares for a candidate: `estimate(scenario, plan=False)`'s resolved scenario,
    per-GPU total and verdict, computed without the components, notes or serving capacity."""

    scenario: Scenario
    total_bytes: int
    fits: bool
    # the verdict came from a resident-state bound (tools/cutoff.py, OverLimit.resident): weights, master
    # weights, optimizer states and gradients alone already overflow; the total is that bound with its overhead
    resident_over: bool = False


def fit_of(scenario: Scenario) -> Fit:
    """The verdict of `estimate(scenario, plan=False)` (same total, same fits) at a fraction of its cost:
    phase sums straight from the footprint's parts (peak_of's rule: the first phase with the most
    tensor bytes), overhead as a sum (tools.rules.overhead.overhead_bytes)."""
    scenario = as_asked(scenario)
    return _fit(resolve(scenario), scenario)


def _fit(rs: ResolvedScenario, scenario: Scenario) -> Fit:
    if not rs.training and rs.scenario.engine not in (None, "transformers"):
        # a serving engine's own memory model decides the verdict (tools.serving.ENGINES)
        est = estimate(scenario, plan=False)
        return Fit(scenario=rs.scenario, total_bytes=est.per_gpu.total_bytes, fits=est.fits)
    total = _total_bytes(rs, max(_tensor_bytes_by_phase(footprint_for(rs))))
    return Fit(scenario=rs.scenario, total_bytes=total, fits=total <= _usable(rs))


def _total_bytes(rs: ResolvedScenario, tensor_peak: int) -> int:
    """A tensor peak plus the runtime overhead it brings (tools.rules.overhead.overhead_bytes)."""
    return tensor_peak + overhead_bytes(rs.layout, tensor_peak_bytes=tensor_peak, training=rs.training)


def _usable(rs: ResolvedScenario) -> int:
    return usable_bytes(rs.gpu.memory_bytes, rs.safety_margin)


def verdict_of(scenario: Scenario) -> Fit:
    """`fit_of(scenario)`, stopped early when a lower bound of the peak already cannot fit (tools/cutoff.py):
    then `fits` is False and `total_bytes` is that bound with its overhead, not the total (the planner
    compares the totals of fitting candidates only)."""
    rs = resolve(scenario)
    if not rs.training:
        return _fit(rs, scenario)
    usable = _usable(rs)
    try:
        with cutoff(lambda bound: _total_bytes(rs, bound) > usable):
            return _fit(rs, scenario)
    except OverLimit as over:
        return Fit(
            scenario=rs.scenario,
            total_bytes=_total_bytes(rs, over.bound),
            fits=False,
            resident_over=over.resident,
        )


def _tensor_bytes_by_phase(fp: ModelFootprint) -> list[int]:
    """Per phase of `fp`, the sum of `fp.components_at(phase)` bytes (a part's entry counts when
    positive, as an int), in one pass over the parts."""
    index = {ph: i for i, ph in enumerate(fp.phases)}
    totals = [0] * len(fp.phases)
    for part in fp.parts:
        for ph, entry in part.at.items():
            i = index.get(ph)
            if i is not None and entry[0] > 0:
                totals[i] += int(entry[0])
    return totals


def estimate(scenario: Scenario, *, plan: bool = True, run_planner: bool = True) -> Estimate:
    """Estimate the peak GPU memory of `scenario` on its most loaded GPU (see the module docstring).

    `run_planner=False` with `plan=True`: the planned estimate less what the planner adds (suggestions,
    min_gpus), which `add_plan` then adds (the service traces the two apart: service/hub.py)."""
    scenario = as_asked(scenario)  # an Estimate's scenario posted back: the job as first asked
    rs = resolve(scenario)
    pk = peak_for(rs)
    total = pk.total_bytes
    card = rs.gpu.memory_bytes
    budget = usable_bytes(card, rs.safety_margin)
    fits = total <= budget
    notes = list(rs.notes) + [n for n in pk.fp.notes if n not in rs.notes]

    serving = None
    if not rs.training:  # imported here: a training estimate never loads the serving engines' models
        from tools.serving_answer import serving_figure

        serving = serving_figure(rs, pk.phase_components, pk.overhead)
    # the job as asked: the gradient-accumulation note estimates it again (the resolved scenario's filled values
    # would read as stated ones, a parameter count's size label as another model)
    no_effect = _no_effect(scenario)
    gpu = rs.gpu
    est = constructed(
        Estimate,
        scenario=rs.scenario,
        per_gpu=constructed(
            PerGpu,
            tensor_peak_bytes=pk.tensor_bytes,
            total_bytes=total,
            peak_phase=pk.peak_phase,
            phases=pk.phases,
            gpu_role=None,  # the English text is filled at the edge
            gpu_role_parts=list(pk.fp.gpu_role),
        ),
        components=pk.tensors + pk.overhead,
        gpu=constructed(
            GpuInfo,
            id=gpu.id,
            name=gpu.name,
            memory_bytes=card,
            vendor=gpu.vendor,
            alias_note=None,  # the English note is filled at the edge
        ),
        fits=fits,
        safety_margin=rs.safety_margin,
        usable_bytes=budget,
        headroom_bytes=budget - total,
        min_gpus=rs.layout.num_gpus if fits else None,
        min_gpus_changes=None,
        suggestions=[],
        # what lora_dropout 0.05 would add is one more peak computation: only for planned (answered) estimates
        assumptions=rs.assumptions
        + saver_assumptions(rs, _dropout_extra(scenario, rs, pk.tensor_bytes) if plan else None),
        no_effect=no_effect,
        notes=notes,
        serving=serving,
        params_total=rs.model.params.total,
        params_trainable=rs.trainable.params if rs.trainable else 0,
        params_active_per_token=rs.model.params.active_per_token,
        accuracy=_accuracy(),
    )
    if not rs.training:
        from tools.serving_answer import with_engine

        est = with_engine(est, rs, pk)
    return add_plan(est) if plan and run_planner else est


def add_plan(est: Estimate) -> Estimate:
    """The planner's suggestions (the cheapest few) and min_gpus, set on `est` (which it returns)."""
    from tools.planner import plan as run_planner  # only when planning: keeps --no-plan start-up light

    result = for_the_device(run_planner(est, limit=PLAN_SEARCH_LIMIT), est.gpu.vendor)
    est.suggestions = list(result.suggestions)[:SUGGESTIONS_SHOWN]
    est.min_gpus = result.min_gpus
    est.min_gpus_changes = result.min_gpus_changes
    return est


SUGGESTIONS_SHOWN = 4  # the cheapest few the answer lists
PLAN_SEARCH_LIMIT = SUGGESTIONS_SHOWN  # the planner returns min_gpus and its layout separately


def _dropout_extra(scenario: Scenario, rs: ResolvedScenario, tensor_bytes: int) -> int | None:
    """What lora_dropout = 0.05 would add to this LoRA job's peak (None when dropout was stated): the job as
    asked (`scenario`, not the resolved one: its filled values would read as stated, and a model given by
    its parameter count would be read again by its size label, another shape) with that dropout."""
    if rs.task not in ("lora", "qlora") or rs.scenario.lora_dropout is not None:
        return None
    # the peak's tensor bytes straight from the footprint's parts (fit_of's sums): no component texts
    with_dropout = footprint_for(resolve(scenario.merged(lora_dropout=0.05)))
    return max(_tensor_bytes_by_phase(with_dropout)) - tensor_bytes


def _no_effect(scenario: Scenario) -> list:
    return no_effect_notes(scenario)


def _accuracy() -> AccuracyBound | None:
    """The measured error bound of the accuracy benchmark (tools/accuracy.py), when one was written."""
    try:
        return accuracy_bound()
    except (OSError, ValueError):  # no summary written yet
        return None
