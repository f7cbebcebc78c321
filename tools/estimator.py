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

from typing import TYPE_CHECKING, NamedTuple

from tools import calibration as cal
from tools.accuracy import AccuracyBound, accuracy_bound
from tools.assumptions import assumption
from tools.components.savers import saver_assumptions
from tools.cutoff import OverLimit, cutoff
from tools.footprint import ModelFootprint, model_footprint
from tools.no_effect import no_effect_notes
from tools.resolve import RL_TASKS, ResolvedScenario, resolve
from tools.result import Component, Estimate, GpuInfo, PerGpu, PhasePeak, ServingCapacity, constructed
from tools.round_trip import as_asked
from tools.rules.activations import inference_transient_entry
from tools.rules.gguf import GGUF_DTYPES, output_type, row_bytes
from tools.rules.kv_cache import kv_bytes_per_token, kv_specs
from tools.rules.overhead import engine_terms_on, overhead_bytes, overhead_components
from tools.rules.phases import peak_of
from tools.scenario import Scenario
from tools.unified_memory import for_the_device

if TYPE_CHECKING:  # imported where used: a training estimate never loads the serving engines' models
    from tools.serving import EngineInputs


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
    if not rs.training and rs.scenario.engine not in (None, ENGINE_DEFAULT):
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


def estimate(scenario: Scenario, *, plan: bool = True) -> Estimate:
    """Estimate the peak GPU memory of `scenario` on its most loaded GPU (see the module docstring)."""
    scenario = as_asked(scenario)  # an Estimate's scenario posted back: the job as first asked
    rs = resolve(scenario)
    pk = peak_for(rs)
    total = pk.total_bytes
    card = rs.gpu.memory_bytes
    budget = usable_bytes(card, rs.safety_margin)
    fits = total <= budget
    notes = list(rs.notes) + [n for n in pk.fp.notes if n not in rs.notes]

    serving = _serving(rs, pk.phase_components, pk.overhead) if not rs.training else None
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
        est = _with_engine(est, rs, pk)
    if plan:
        from tools.planner import plan as run_planner  # only when planning: keeps --no-plan start-up light

        result = for_the_device(run_planner(est, limit=PLAN_SEARCH_LIMIT), gpu.vendor)
        est.suggestions = list(result.suggestions)[:SUGGESTIONS_SHOWN]
        est.min_gpus = result.min_gpus
        est.min_gpus_changes = result.min_gpus_changes
    return est


SUGGESTIONS_SHOWN = 4  # the cheapest few the answer lists
PLAN_SEARCH_LIMIT = SUGGESTIONS_SHOWN  # the planner returns min_gpus and its layout separately


def _serving(rs: ResolvedScenario, phase_components, overhead) -> ServingCapacity | None:
    """vLLM-style KV capacity: reserved memory minus everything that is not KV (weights, the profile
    run's transient, CUDA context and NCCL)."""
    from tools.serving import serving_capacity

    lay = rs.layout
    stage_layers = lay.layer_split(rs.model.params.num_layers)[0]
    specs = kv_specs(rs.model.arch, layers=stage_layers, tp=lay.tp, dtype_bytes=rs.kv_dtype_bytes)
    per_token = kv_bytes_per_token(specs)
    if per_token <= 0:
        return None
    # vLLM's profile run: weights + the transient of one forward of max_num_batched_tokens tokens
    # + non-torch memory (CUDA context, NCCL); not the HF-style batched prefill of this scenario
    prefill = phase_components.get("prefill", [])
    static = sum(c.bytes for c in prefill if c.name in ("weights", "quant_metadata", "logits"))
    profile_tokens = min(cal.VLLM_PROFILE_TOKENS, rs.seq * rs.batch)
    transient, _ = inference_transient_entry(
        rs.model.arch, b=1, s=profile_tokens, act_bytes=rs.weight_format.compute_bytes, flash=True, tp=lay.tp
    )
    non_kv = static + transient + sum(c.bytes for c in overhead if c.name != "allocator_slack")
    cap = serving_capacity(
        gpu_memory_bytes=rs.gpu.memory_bytes,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        non_kv_bytes=non_kv,
        kv_bytes_per_token=per_token,
        seq_len=rs.seq,
    )
    # one sequence cannot be longer than the model's context window (vLLM max_model_len defaults to
    # max_position_embeddings), however many KV tokens fit: said beside the KV-room figure
    return cap.model_copy(update={"max_model_len": rs.model.arch.max_position_embeddings})


ENGINE_DEFAULT = "transformers"


def _engine_inputs(rs: ResolvedScenario, pk: Peak, engine: str) -> EngineInputs:
    """The per-GPU quantities an engine's memory model needs (tools.serving.EngineInputs)."""
    from tools.serving import EngineInputs

    arch, lay = rs.model.arch, rs.layout
    prefill = pk.phase_components.get("prefill", [])
    weights = sum(c.bytes for c in prefill if c.name in ("weights", "quant_metadata"))
    layer_split = engine in ("llama.cpp", "ollama")  # llama.cpp splits layers, not tensors
    tp = 1 if layer_split else lay.tp
    if layer_split:
        weights *= lay.tp  # the whole model: llama.cpp holds each layer on one card
    out_bytes = arch.vocab_size * arch.hidden_size * rs.weight_format.compute_bytes
    if rs.weight_dtype in GGUF_DTYPES:  # llama.cpp: the output matrix in its own GGUF type
        out_bytes = arch.vocab_size * row_bytes(output_type(rs.weight_dtype), arch.hidden_size)
    layers = rs.model.params.num_layers if layer_split else lay.layer_split(rs.model.params.num_layers)[0]
    kv_dtype = 2 if layer_split else rs.kv_dtype_bytes  # llama.cpp / ollama KV cache: f16
    per_token = kv_bytes_per_token(kv_specs(arch, layers=layers, tp=tp, dtype_bytes=kv_dtype))
    overhead = sum(c.bytes for c in pk.overhead if c.name != "allocator_slack")

    def activation(tokens: int) -> int:
        return inference_transient_entry(
            arch, b=1, s=tokens, act_bytes=rs.weight_format.compute_bytes, flash=True, tp=tp
        )[0]

    return EngineInputs(
        card_bytes=rs.gpu.memory_bytes,
        num_gpus=lay.num_gpus if layer_split else lay.tp,
        weights_bytes=weights,
        output_bytes=min(out_bytes, weights),
        num_layers=rs.model.params.num_layers,
        kv_bytes_per_token=max(1, per_token),
        seq_len=rs.seq,
        sequences=rs.batch,
        activation_bytes=activation,
        hidden_size=arch.hidden_size,
        vocab_size=arch.vocab_size,
        num_heads=arch.num_attention_heads,
        overhead_bytes=overhead,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        fraction_stated=not rs.assumed("gpu_memory_utilization"),
        max_num_batched_tokens=rs.scenario.max_num_batched_tokens,
        max_model_len=arch.max_position_embeddings,
    )


def _with_engine(est: Estimate, rs: ResolvedScenario, pk: Peak) -> Estimate:
    """Inference under a serving engine's own memory model (tools.serving.ENGINES); transformers keeps
    the HF generate model above. The engine in use is always stated."""
    from tools.serving import ENGINES

    engine = rs.scenario.engine
    if engine is None:
        est.assumptions = [
            *est.assumptions,
            assumption("engine", ENGINE_DEFAULT, "engine.default"),
        ]
        return est
    if engine not in ENGINES:
        return est
    result = ENGINES[engine].run(_engine_inputs(rs, pk, engine))
    components = [
        constructed(
            Component,
            name=t.name,
            bytes=t.bytes,
            kind=t.kind,
            formula=t.formula,
            substituted=t.substituted,
            source=t.source,
            label=None,
            label_code=t.label,
            label_values=dict(t.label_values),
            model_role=None,
            note_code=None,
            note=None,
        )
        for t in engine_terms_on(result.terms, rs.layout.runtime)
    ]
    tensor = sum(c.bytes for c in components if c.kind == "tensor")
    # the engine's defaults replace the generic ones (SGLang's mem_fraction_static is not vLLM's 0.9);
    # what the user stated is never overridden
    defaulted = {a.field for a in est.assumptions}
    engine_defaults = {
        f: assumption(f, v, code, **values)
        for f, v, code, values in result.assumptions
        if f in defaulted or getattr(rs.scenario, f, None) is None
    }
    kept = [a for a in est.assumptions if a.field not in engine_defaults]
    serving = constructed(
        ServingCapacity,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        reserved_bytes=result.reserved_bytes or result.total_bytes,
        kv_cache_bytes=result.kv_pool_bytes,
        kv_bytes_per_token=_engine_inputs(rs, pk, engine).kv_bytes_per_token,
        max_kv_tokens=result.max_kv_tokens,
        max_concurrent_sequences=result.max_concurrent_sequences,
        max_context_at_batch_1=result.max_context_tokens,
        max_model_len=rs.model.arch.max_position_embeddings,
    )
    est.components = components
    est.per_gpu = constructed(
        PerGpu,
        tensor_peak_bytes=tensor,
        total_bytes=result.total_bytes,
        peak_phase="serving",
        phases=[constructed(PhasePeak, phase="serving", tensor_bytes=tensor)],
        gpu_role=est.per_gpu.gpu_role,
        gpu_role_parts=est.per_gpu.gpu_role_parts,
    )
    est.fits = result.fits
    est.headroom_bytes = result.headroom_bytes
    est.min_gpus = rs.layout.num_gpus if result.fits else None
    est.serving = serving
    est.assumptions = [*kept, *engine_defaults.values()]
    est.notes = [*est.notes, *result.notes]
    return est


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
