"""Scenario: the input of the estimator tool, and what an agent must produce.

Field names and meanings are fixed by docs/reference.md; extensions are additive.
`None` means "not stated by the user": the estimator fills a default and records it
as an assumption, so every default is visible in the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from tools.copies import copy_with
from tools.model.architecture import Architecture, reject_bool_for_number
from tools.rules.gguf import GGUF_DTYPES

Task = Literal["inference", "full_finetune", "pretrain", "freeze", "lora", "qlora", "ppo", "grpo", "dpo"]
WeightDtype = Literal[
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "int8",
    "int4",
    "nf4",
    # llama.cpp GGUF file types (tools/rules/gguf.py: per-tensor ggml block mixes)
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q5_k_s",
    "q5_1",
    "q5_0",
    "q4_k_m",
    "q4_k_s",
    "q4_1",
    "q4_0",
    "iq4_nl",
    "iq4_xs",
    "q3_k_l",
    "q3_k_m",
    "q3_k_s",
    "iq3_m",
    "iq3_s",
    "iq3_xs",
    "iq3_xxs",
    "q2_k",
    "q2_k_s",
    "iq2_m",
    "iq2_s",
    "iq2_xs",
    "iq2_xxs",
    "iq1_m",
    "iq1_s",
    # ExLlamaV2 at `weight_bits` average bits per weight
    "exl2",
]
PrecisionRecipe = Literal["fp32", "amp", "mixed", "megatron", "bf16"]
Optimizer = Literal[
    "adamw",
    "adamw_8bit",
    "paged_adamw_8bit",
    "paged_adamw",
    "sgd",
    "sgd_momentum",
    "adafactor",
    "lion",
    "adamw_torch",
]
AttentionImpl = Literal["flash", "eager"]
Recompute = Literal["none", "full", "selective"]
QuantMethod = Literal["bnb", "gptq", "awq", "fp8", "gguf", "exl2"]
KvDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8"]
OffloadTarget = Literal["none", "cpu", "nvme"]
ServingEngine = Literal["transformers", "vllm", "sglang", "llama.cpp", "ollama"]
CrossEntropyImpl = Literal["standard", "chunked", "fused_linear"]
PipelineSchedule = Literal["1f1b", "interleaved", "gpipe"]

MAX_NAME_CHARS = 200  # model/GPU names and module names: the longest real id is under 100 characters
MAX_LORA_TARGETS = 64

TASKS: tuple[str, ...] = Task.__args__  # type: ignore[attr-defined]
# The task families every layer branches on (resolve, planner, parser): defined once, here.
TRAINING_TASKS: frozenset[str] = frozenset(t for t in TASKS if t != "inference")
RL_TASKS: frozenset[str] = frozenset({"ppo", "grpo", "dpo"})
ADAPTER_TASKS: frozenset[str] = frozenset({"lora", "qlora"})
WEIGHT_DTYPES: tuple[str, ...] = WeightDtype.__args__  # type: ignore[attr-defined]
RECIPES: tuple[str, ...] = PrecisionRecipe.__args__  # type: ignore[attr-defined]
OPTIMIZERS: tuple[str, ...] = Optimizer.__args__  # type: ignore[attr-defined]
# the fields a resolution may fill (tools/resolution/, tools/rl.py): what `filled` may name
FILLABLE_FIELDS: tuple[str, ...] = (
    "model",
    "params",
    "task",
    "gpu",
    "num_gpus",
    "batch_size",
    "seq_len",
    "weight_dtype",
    "precision_recipe",
    "optimizer",
    "quant_method",
    "double_quant",
    "lora_rank",
    "lora_targets",
    "trainable_layers",
    "recompute",
    "gradient_checkpointing",
    "attention",
    "zero_stage",
    "tp",
    "pp_microbatches",
    "kv_dtype",
    "gpu_memory_utilization",
    "safety_margin",
    "max_new_tokens",  # RL rollouts (tools/rl.py)
    "num_generations",
    "rollout_batch_size",
)


class Scenario(BaseModel):
    """One question about GPU memory, fully structured."""

    # NaN/Infinity are not numbers of a job: refused, never silently carried into the arithmetic
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # --- what model -------------------------------------------------------------------------
    model: str | None = Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="catalog id or alias (llama-2-7b, Qwen2.5-7B, 7B, 70亿)",
    )
    params: int | None = Field(default=None, gt=0, description="total parameters; filled from the catalog")
    architecture: Architecture | None = Field(
        default=None, description="explicit HF-style config; overrides the catalog"
    )

    # --- what job -----------------------------------------------------------------------------
    task: Task | None = Field(
        default=None, description="inference, full_finetune, pretrain, freeze, lora, qlora, ppo, grpo, dpo"
    )
    gpu: str | None = Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="GPU catalog id or alias (a100-80gb, 4090, H20, 910B)",
    )
    num_gpus: int | None = Field(default=None, ge=1, le=100_000)
    batch_size: int | None = Field(
        default=None, ge=1, le=1_000_000, description="micro-batch per data-parallel rank"
    )
    seq_len: int | None = Field(
        default=None, ge=1, le=10_000_000, description="tokens per sequence / context length"
    )

    # --- numerics ---------------------------------------------------------------------------
    weight_dtype: WeightDtype | None = None
    precision_recipe: PrecisionRecipe | None = None
    optimizer: Optimizer | None = None
    quant_method: QuantMethod | None = Field(
        default=None, description="how int8/int4 weights are stored: bnb, gptq, awq"
    )
    quant_group_size: int | None = Field(
        default=None, ge=1, description="GPTQ/AWQ group (128), NF4 block (64)"
    )
    double_quant: bool | None = Field(
        default=None, description="QLoRA double quantisation of the absmax constants"
    )
    weight_bits: float | None = Field(
        default=None, gt=1.0, le=8.5, description="EXL2 average bits per weight (4.65)"
    )

    # --- fine-tuning ----------------------------------------------------------------------------
    lora_rank: int | None = Field(default=None, ge=1, le=65536)
    lora_targets: list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] | None = Field(
        default=None, max_length=MAX_LORA_TARGETS, description="q_proj, v_proj, ... or all-linear"
    )
    dora: bool = False
    trainable_layers: int | None = Field(
        default=None, ge=0, description="freeze tuning: last N layers trainable"
    )

    # --- activations ------------------------------------------------------------------------------
    gradient_checkpointing: bool | None = None
    recompute: Recompute | None = Field(
        default=None, description="none, full, selective; full == gradient_checkpointing"
    )
    attention: AttentionImpl | None = None

    # --- parallelism ---------------------------------------------------------------------------
    zero_stage: int | None = Field(default=None, ge=0, le=3)
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    cp: int | None = Field(default=None, ge=1, description="context parallel size")
    ep: int | None = Field(default=None, ge=1, description="expert parallel size")
    sequence_parallel: bool | None = None
    offload_optimizer: OffloadTarget | None = None
    offload_params: OffloadTarget | None = None
    pp_microbatches: int | None = Field(
        default=None, ge=1, description="micro-batches per step under PP (1F1B)"
    )
    pp_schedule: PipelineSchedule | None = Field(
        default=None, description="1f1b (Megatron default), interleaved (virtual stages), gpipe"
    )
    pp_virtual_stages: int | None = Field(
        default=None, ge=1, description="model chunks per PP rank under the interleaved schedule"
    )

    # --- memory savers ----------------------------------------------------------------------------
    activation_offloading: bool | None = Field(
        default=None,
        description="saved activations copied to CPU (torchtune enable_activation_offloading, unsloth)",
    )
    cross_entropy: CrossEntropyImpl | None = Field(
        default=None,
        description="standard (HF fp32 logits), chunked (torchtune CEWithChunkedOutputLoss), "
        "fused_linear (Liger fused linear cross-entropy)",
    )
    optimizer_in_backward: bool | None = Field(
        default=None, description="optimizer step per parameter in backward (torchtune optimizer_in_bwd)"
    )
    packing: bool | None = Field(default=None, description="sample packing into seq_len-token rows")
    fp8_training: bool | None = Field(default=None, description="torchao float8 linears (H100-class)")

    # --- inference / serving / RL --------------------------------------------------------------
    kv_dtype: KvDtype | None = None
    max_new_tokens: int | None = Field(default=None, ge=0)
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0.0, le=1.0, description="vLLM-style reservation"
    )
    engine: ServingEngine | None = Field(
        default=None,
        description="serving engine whose memory model applies: transformers (HF generate), vllm, sglang, "
        "llama.cpp, ollama",
    )
    images: int | None = Field(
        default=None, ge=0, le=10_000, description="images per sequence (vision-language models)"
    )
    max_num_batched_tokens: int | None = Field(
        default=None, ge=1, description="vLLM tokens per scheduler step (SGLang chunked_prefill_size)"
    )
    num_generations: int | None = Field(default=None, ge=1, description="GRPO samples per prompt")
    rollout_batch_size: int | None = Field(
        default=None, ge=1, description="prompts per RL rollout on one rank"
    )
    reward_model: str | None = Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="RL reward model id (defaults to the policy's size)",
    )
    critic_model: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    reference_offload: bool | None = None

    # --- verdict ---------------------------------------------------------------------------------
    safety_margin: float | None = Field(
        default=None, ge=0.0, lt=1.0, description="fraction of the card kept free"
    )

    # --- things people mention that do NOT change peak memory (explained, never silently ignored)
    epochs: float | None = None
    gradient_accumulation_steps: int | None = Field(default=None, ge=1)
    learning_rate: float | None = None
    lora_alpha: float | None = None
    lora_dropout: float | None = None
    warmup_steps: int | None = None
    global_batch_size: int | None = Field(default=None, ge=1)

    # --- round trip ------------------------------------------------------------------------------
    filled: list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] | None = Field(
        default=None,
        max_length=len(FILLABLE_FIELDS),
        description="the fields the estimator filled with a default (an Estimate's scenario); posted back, "
        "a listed field whose value is still that default is read as not stated (tools/round_trip.py)",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools_for_numbers(cls, value: object, info: ValidationInfo) -> object:
        """JSON `true` is not a batch size: pydantic's lax mode would take it as 1."""
        return reject_bool_for_number(cls, info.field_name, value)

    @field_validator("filled")
    @classmethod
    def _fillable(cls, value: list[str] | None) -> list[str] | None:
        """`filled` names only fields a resolution fills: anything else is refused by name."""
        unknown = sorted(set(value or ()) - set(FILLABLE_FIELDS))
        if unknown:
            raise ValueError(f"filled names {', '.join(unknown)}; accepted: {', '.join(FILLABLE_FIELDS)}")
        return value

    @model_validator(mode="after")
    def _inference_formats(self) -> Scenario:
        """GGUF and EXL2 name their own storage (the resolver takes the method from the dtype)."""
        dtype = self.weight_dtype
        if dtype in GGUF_DTYPES or dtype == "exl2":
            method = "gguf" if dtype in GGUF_DTYPES else "exl2"
            if self.quant_method not in (None, method):
                raise ValueError(f"weight_dtype {dtype} is stored by {method}, not {self.quant_method}")
            if dtype == "exl2" and self.weight_bits is None:
                raise ValueError(
                    "weight_dtype exl2 needs weight_bits, the average bits per weight (e.g. 4.65)"
                )
            if self.task not in (None, "inference"):
                raise ValueError(
                    f"{dtype} is an inference format (llama.cpp/ollama GGUF, ExLlamaV2 EXL2); "
                    "train from the 16-bit checkpoint (lora) or a bitsandbytes 4-bit base (qlora)"
                )
        elif self.quant_method in ("gguf", "exl2"):
            raise ValueError(
                f"quant_method {self.quant_method} needs a GGUF file type or exl2 as weight_dtype"
            )
        return self

    def merged(self, **changes: Any) -> Scenario:
        """A copy with `changes` applied (follow-up questions, planner candidates)."""
        # the fields as they are, not dumped: a nested model (the architecture) is taken as the validated
        # instance it is (pydantic does not re-validate instances), every other field is validated again
        data = {name: getattr(self, name) for name in Scenario.model_fields}
        data.update(changes)
        return Scenario.model_validate(data)

    def merged_checked(self, known: dict[Hashable, Any] | None = None, /, **changes: Any) -> Scenario:
        """`merged(**changes)` of a scenario that is itself valid (validated): only the changed fields are
        validated, then the scenario-level checks; the same scenario as merged() gives. Whatever this
        path refuses goes through merged(), so an error is worded exactly as merged() words it.
        `known`: validated values by (field, type and value given), kept by the caller across calls
        (a field's validation reads only its own value); the scenario-level checks run on every call."""
        known = {} if known is None else known
        new = self.updated(changes)
        pending = []
        for name, value in changes.items():
            key = _value_key(name, value)
            got = known.get(key, _UNKNOWN) if key is not None else _UNKNOWN
            if got is _UNKNOWN:
                pending.append((name, value, key))
            else:
                new.__dict__[name] = list(got) if isinstance(got, list) else got
        try:
            for name, value, key in pending:
                # the field's own validation, then the model-level checks on the scenario with every change
                Scenario.__pydantic_validator__.validate_assignment(new, name, value)
                if key is not None:
                    got = new.__dict__[name]
                    known[key] = list(got) if isinstance(got, list) else got
            if not pending:  # every value known: the model-level checks alone, as an assignment runs them
                for check in _model_checks():
                    check(new)
        except ValueError:  # pydantic's ValidationError included
            return self.merged(**changes)
        return new

    def updated(self, changes: dict[str, Any]) -> Scenario:
        """`model_copy(update=changes)`: the values taken as they are (not validated), marked as set."""
        return copy_with(self, changes)

    def stated(self) -> dict[str, Any]:
        """Only what was stated (non-None, non-default)."""
        return self.model_dump(exclude_none=True, exclude_defaults=True)


_UNKNOWN = object()


def _value_key(name: str, value: Any) -> Hashable | None:
    """A key of a field's given value: equal for equal values of the same type (1, 1.0 and True differ);
    None for a value that cannot be a key."""
    if type(value) is list:
        value = (list, *value)
    key = (name, type(value), value)
    try:
        hash(key)
    except TypeError:
        return None
    return key


@cache
def _model_checks() -> tuple[Callable[[Scenario], Any], ...]:
    """The scenario-level checks an assignment runs (the model's `after` validators), in order; a `before`
    or `wrap` model validator would need the raw input, which merged_checked does not have."""
    decorators = Scenario.__pydantic_decorators__.model_validators.values()
    if any(d.info.mode != "after" for d in decorators):
        raise TypeError("merged_checked supports only mode='after' model validators")
    return tuple(d.func for d in decorators)
