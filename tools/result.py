"""Estimate: the output of the estimator tool (docs/reference.md)."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tools.accuracy import AccuracyBound
from tools.copies import instance
from tools.notes import Note
from tools.scenario import Scenario

ComponentName = (
    str  # weights, gradients, optimizer_states, master_weights, activations, logits, kv_cache, ...
)
ComponentKind = Literal["tensor", "overhead"]

# The estimator makes these with `constructed` (below; no validation): each model builds its validator and
# serializer on first use instead of at import, and the Estimate's serializer includes the rest, so a
# process that prints one Estimate (`vramwise estimate`) builds one schema, not ten.
_DEFERRED = ConfigDict(defer_build=True)

M = TypeVar("M", bound=BaseModel)


def constructed(cls: type[M], /, **values: Any) -> M:
    """`cls.model_construct(**values)` for checked values of every field of a model with no aliases,
    private attributes or post-init (the models below): the same instance, fields in declaration order,
    all marked as set, without model_construct's per-field look-up of aliases and defaults (~7 us -> ~3 us
    a model; an answer makes ~30). A field left out is a KeyError, never a silent default.
    tests/test_result_constructed.py compares it with model_construct."""
    fields = {name: values[name] for name in cls.__pydantic_fields__}
    if len(values) != len(fields):
        raise TypeError(f"{cls.__name__} has no field {sorted(values.keys() - fields.keys())}")
    return instance(cls, fields, set(fields))


class Component(BaseModel):
    """One thing resident on the most loaded GPU at the peak."""

    model_config = _DEFERRED

    name: ComponentName
    bytes: int = Field(ge=0)
    kind: ComponentKind
    formula: str  # symbols, units and numbers only, e.g. "P_local x 2 B" (prompts/<lang>/formulas.toml)
    substituted: str  # with the numbers, e.g. "6,738,415,616 x 2 B = 13,476,831,232 B"
    source: str  # paper/table or library file the formula follows
    # what it holds, as a code (tools/labels.py LABEL_CODES) and values; the words are each channel's
    label_code: str | None = None
    label_values: dict[str, object] = Field(default_factory=dict)
    # the English name ("AdamW m and v"), filled at the edge (service/agent/component_text.py) for JSON
    # readers; None straight out of tools.estimator
    label: str | None = None
    model_role: str | None = None  # RL: actor, critic, reference, reward; None for single-model jobs
    # a remark on it, as a code (tools/labels.py NOTE_CODES); the words are each channel's
    note_code: str | None = None
    # that remark in English, filled at the edge (service/agent/component_text.py) for JSON readers
    note: str | None = None


class PhasePeak(BaseModel):
    """Live tensor bytes at one moment of the step."""

    model_config = _DEFERRED

    phase: str  # end_of_forward, backward, optimizer_step, prefill, decode
    tensor_bytes: int = Field(ge=0)


class PerGpu(BaseModel):
    model_config = _DEFERRED

    tensor_peak_bytes: int = Field(ge=0)  # what torch.cuda.max_memory_allocated() would report
    total_bytes: int = Field(ge=0)  # tensor peak + runtime overhead: what nvidia-smi would show
    peak_phase: str
    phases: list[PhasePeak] = Field(default_factory=list)
    # which GPU this is in English ("PP stage 0 of 2 (first, 16 layers), TP rank 0 of 2"), filled at the
    # edge (service/agent/component_text.py) from gpu_role_parts; None straight out of tools.estimator
    gpu_role: str | None = None
    # the same as data: [{"code": "pp_stage", "values": {...}}, {"code": "tp_rank", ...}] (codes in
    # tools/labels.py GPU_ROLE_CODES; `single_gpu` for one GPU; empty only in an Estimate stored before); the words are each channel's
    gpu_role_parts: list[dict[str, Any]] = Field(default_factory=list)


class GpuInfo(BaseModel):
    model_config = _DEFERRED

    id: str
    name: str
    memory_bytes: int = Field(gt=0)
    vendor: str | None = None
    alias_note: str | None = None  # e.g. "'A100' taken as the 80 GB variant"


class Suggestion(BaseModel):
    """A concrete change to the scenario, with its own estimate."""

    model_config = _DEFERRED

    # the English words ("QLoRA: 4-bit NF4 base + LoRA, paged 8-bit AdamW"), filled at the service's edge
    # (service/agent/suggestion_text.py) from the codes below; None straight out of tools.planner
    change: str | None = None
    scenario_changes: dict[str, object]  # fields to apply to the scenario
    total_bytes: int = Field(ge=0)
    fits: bool
    num_gpus: int
    # the English cost line ("a single GPU; same result as ...; step time x1.33 (estimated); 15.1 GiB per
    # GPU"), filled at the edge from num_gpus, fidelity_rank, step_time_factor and total_bytes
    rationale: str | None = None
    # what the change is, as data (tools/planner.py CHANGE_CODES, MOVE_CODES, LAYOUT_CODES); None/empty
    # only in a Suggestion stored before they existed (its `change`/`rationale` are then what is shown)
    change_code: str | None = None
    change_values: dict[str, object] = Field(default_factory=dict)  # gpus, asked: the GPU counts it names
    moves: list[dict[str, Any]] = Field(default_factory=list)  # [{"code", "values"}], in order
    layout_parts: list[dict[str, Any]] = Field(default_factory=list)  # [{"code", "values"}]: the GPU layout
    fidelity_rank: int | None = None  # 0 same result .. 3 changes the job (tools/planner.py cost model)
    step_time_factor: float | None = None  # step-time multiplier vs the job as asked (estimated)


class Assumption(BaseModel):
    """A default the estimator chose: `code` names the sentence (prompts/<lang>/assumptions.toml, codes in
    tools/assumptions.py ASSUMPTION_CODES), `values` fill it (the words are each channel's)."""

    model_config = _DEFERRED

    field: str
    value: object
    # the English sentence, filled at the edge (service/agent/assumption_text.py) for JSON readers;
    # None straight out of tools.estimator
    reason: str | None = None
    # always set by the estimator and the service; None only in an Estimate stored before assumptions
    # had codes (its `reason` is then what every language shows)
    code: str | None = None
    values: dict[str, object] = Field(default_factory=dict)


class NoEffect(BaseModel):
    """A stated setting that does not change peak memory, and why: `code` names the explanation
    (prompts/<lang>/no_effect.json), `values` fill it (the words are each channel's)."""

    model_config = _DEFERRED

    field: str
    value: object
    code: str
    values: dict[str, object] = Field(default_factory=dict)


class ServingCapacity(BaseModel):
    """What a serving engine reserves and the KV room it makes (vLLM-style for HF generate)."""

    model_config = _DEFERRED

    gpu_memory_utilization: float
    reserved_bytes: int
    kv_cache_bytes: int  # what is left for KV blocks after weights, activations and overhead
    kv_bytes_per_token: int
    max_kv_tokens: int
    max_concurrent_sequences: int  # at the scenario's seq_len
    max_context_at_batch_1: int  # the longest single sequence the KV room holds, capped at max_model_len
    max_model_len: int | None = None  # the model's context window (max_position_embeddings)
    gpu_layers: int | None = None  # llama.cpp / ollama: layers on the GPU(s) (-ngl; n_layer + 1 = all)
    host_bytes: int = 0  # llama.cpp / ollama: weights and KV left in CPU RAM when layers are offloaded
    # the model card's rope scaling beyond max_model_len (catalog context_extension): "yarn x4.0", and the
    # context it allows, and how long one sequence the KV room would hold (uncapped)
    rope_scaling: str | None = None
    rope_scaled_context: int | None = None
    kv_context_at_batch_1: int | None = None


class Estimate(BaseModel):
    model_config = _DEFERRED

    scenario: Scenario
    per_gpu: PerGpu
    components: list[Component]
    gpu: GpuInfo
    fits: bool
    safety_margin: float
    # the card less the safety margin: total_bytes must stay under it to fit (channels draw this line)
    usable_bytes: int = Field(ge=0)
    headroom_bytes: int  # usable_bytes minus total_bytes (negative when it does not fit)
    min_gpus: int | None
    # the layout of the min_gpus configuration: scenario fields the planner set to get there
    # ({"num_gpus": 2, "zero_stage": 3}); {} = the job as stated; None = unknown or no fit
    min_gpus_changes: dict[str, object] | None = None
    suggestions: list[Suggestion] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    no_effect: list[NoEffect] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)
    serving: ServingCapacity | None = None
    params_total: int
    params_trainable: int
    params_active_per_token: int
    accuracy: AccuracyBound | None = None  # the measured error bound (benchmarks/accuracy), as data

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)
