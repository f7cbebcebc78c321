"""Model architecture (an HF-style config subset) and the exact parameter breakdown.

The breakdown is per module kind so that TP/PP sharding, LoRA targeting, QLoRA's
"what stays 16-bit" and MoE residency all work from one source of truth.
Counts follow the Hugging Face `modeling_*.py` module shapes (LlamaForCausalLM,
Qwen2/3, Qwen3Moe, Mixtral, DeepseekV2/V3, Gemma2/3, Phi3, GPT2, Falcon, GLM4, ...).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

BlockStyle = Literal[
    "llama", "gpt"
]  # llama: RMSNorm + gated MLP (SwiGLU/GeGLU); gpt: LayerNorm + 2-matrix MLP
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
# HF module names of the linear layers (what PEFT `target_modules` match); counts are the same for
# fused (qkv_proj, gate_up_proj) and split layouts, LoRA trainable counts are not.
ModuleNames = Literal[
    "llama", "mixtral", "deepseek", "gpt2", "falcon", "phi3", "chatglm", "glm", "internlm2", "baichuan"
]


# Upper bounds of the architecture fields: far above every published model (widths ~2^15, 128 layers,
# 256 experts, 256k vocab), so only impossible configs hit them.
MAX_WIDTH = 1 << 20
MAX_LAYERS = 4096
MAX_HEADS = 1 << 14
MAX_VOCAB = 1 << 24
MAX_EXPERTS = 1 << 14
MAX_POSITIONS = 1 << 27
MAX_EXTRA_PARAMS = 10**14

# fields of this project's own (no config.json has them): kept beside a config.json's keys when given with them
ARCHITECTURE_ONLY_FIELDS = frozenset(
    {
        "block_style",
        "gated_mlp",
        "o_bias",
        "qk_norm",
        "norm_has_bias",
        "norms_per_layer",
        "parametric_norms",
        "norm_fp32_scale",
        "attn_logit_softcapping",  # Gemma-2's config.json has these two under the same names
        "final_logit_softcapping",
        "parallel_attn_mlp",
        "learned_position_embeddings",
        "sliding_window_layers",
        "num_shared_experts",
        "shared_expert_gate",
        "router_score_bias",
        "first_k_dense_layers",
        "extra_params",
        "image_tokens",
        "module_names",
        "config_defaults",
    }
)


class Architecture(BaseModel):
    """HF-style architecture. Field names follow transformers' config.json keys.

    Every field is checked on its own (positive, bounded) and against the fields before it (heads divide
    the width, KV heads divide the heads, top-k within the experts, layer counts within the layers), so
    an impossible config is a validation error naming the field, never a confident answer."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    # Bounds: every count positive (or >= 0 where 0 means "none"), and below what any real model has by
    # orders of magnitude, so an impossible config is refused instead of answered (a billion layers would
    # also make the per-layer sums loop for minutes).
    hidden_size: int = Field(gt=0, le=MAX_WIDTH)
    num_hidden_layers: int = Field(gt=0, le=MAX_LAYERS)
    num_attention_heads: int = Field(gt=0, le=MAX_HEADS)
    num_key_value_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)  # None = MHA (= heads)
    head_dim: int | None = Field(
        default=None, gt=0, le=MAX_WIDTH, validate_default=True
    )  # None = hidden_size // heads
    intermediate_size: int = Field(gt=0, le=MAX_WIDTH)
    vocab_size: int = Field(gt=0, le=MAX_VOCAB)
    tie_word_embeddings: bool = False
    block_style: BlockStyle = "llama"
    gated_mlp: bool = True  # SwiGLU/GeGLU: gate+up+down (3 matrices); else up+down (2)
    attention_bias: bool = False  # bias on q/k/v (Qwen2: qkv bias; GPT-2: all linear biases)
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3/Gemma3: per-head RMSNorm on q and k (2*head_dim params per layer)
    norm_has_bias: bool = False  # LayerNorm with bias (GPT-2, Falcon)
    norms_per_layer: int = Field(default=2, ge=0, le=16)  # Gemma2/3 have 4 (pre/post attention and MLP)
    # OLMo-1 (modeling_olmo.OlmoLayerNorm): LayerNorm without weight or bias, so no norm parameters
    parametric_norms: bool = True
    # Memory-relevant implementation details (no parameters): modeling_gemma*.py GemmaRMSNorm computes
    # `x * (1 + weight.float())` in fp32; Gemma-2 soft-caps attention scores and final logits with tanh.
    norm_fp32_scale: bool = False
    attn_logit_softcapping: float | None = Field(default=None, gt=0)
    final_logit_softcapping: float | None = Field(default=None, gt=0)
    parallel_attn_mlp: bool = False  # Falcon/GPT-J: attention and MLP in parallel from one norm
    max_position_embeddings: int = Field(default=4096, gt=0, le=MAX_POSITIONS)
    learned_position_embeddings: bool = False  # GPT-2: wpe table of max_position_embeddings x h
    sliding_window: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)  # tokens
    # how many of the layers use the window (None = all when set)
    sliding_window_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS)
    # MoE (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3)
    num_experts: int | None = Field(default=None, gt=0, le=MAX_EXPERTS)  # routed experts per MoE layer
    num_experts_per_tok: int | None = Field(default=None, gt=0, le=MAX_EXPERTS)  # top-k
    moe_intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)  # per routed expert
    num_shared_experts: int = Field(default=0, ge=0, le=MAX_EXPERTS)
    # total for all shared experts (Qwen2-MoE style)
    shared_expert_intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    first_k_dense_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)  # DeepSeek: first k layers dense
    moe_layer_freq: int = Field(default=1, gt=0, le=MAX_LAYERS)  # every n-th layer after those is MoE
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate (h params) on the shared expert
    router_score_bias: bool = False  # DeepSeek-V3: gate.e_score_correction_bias (num_experts params)
    # MLA (DeepSeek-V2/V3)
    q_lora_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    kv_lora_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    qk_nope_head_dim: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    qk_rope_head_dim: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    v_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH, validate_default=True)
    # Multi-token prediction modules and other extras that ship in the checkpoint
    extra_params: int = Field(default=0, ge=0, le=MAX_EXTRA_PARAMS)
    # vision-language models: decoder tokens one image adds at the default resolution (no parameters)
    image_tokens: int = Field(default=0, ge=0, le=MAX_POSITIONS)
    module_names: ModuleNames = "llama"  # naming/fusing of the linear modules (see ModuleNames)
    # config.json keys a user's config left out whose transformers default was taken (MoE/MLA keys:
    # tools/catalog/config_keys.py FAMILY_DEFAULTS), and `vision_config` when a vision tower was not counted;
    # each is listed in the estimate's assumptions
    config_defaults: dict[str, int | str | None] = Field(default_factory=dict, max_length=64)

    @model_validator(mode="before")
    @classmethod
    def _from_config_json(cls, data: object) -> object:
        """A real config.json (any key that is not one of these fields: `model_type`, Mixtral's
        `num_local_experts`, DeepSeek's `n_routed_experts`, a vision model's `text_config` ...) is read through
        the Hub look-up's mapping (tools/catalog/hf_config.py), strictly: an unknown key is refused by name."""
        if isinstance(data, dict) and not data.keys() <= cls.model_fields.keys():
            from tools.catalog.hf_config import architecture_fields

            return architecture_fields(data, strict=True)
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools_for_numbers(cls, value: object, info: ValidationInfo) -> object:
        """JSON `true` is not a count: pydantic would take it as 1."""
        return reject_bool_for_number(cls, info.field_name, value)

    @field_validator("num_key_value_heads")
    @classmethod
    def _kv_heads_divide_heads(cls, value: int | None, info: ValidationInfo) -> int | None:
        heads = info.data.get("num_attention_heads")
        if value is None or heads is None:
            return value
        if value > heads:
            raise ValueError(f"{value} KV heads is more than num_attention_heads ({heads})")
        if heads % value:
            raise ValueError(
                f"{value} KV heads does not divide num_attention_heads ({heads}): each KV head serves"
                " a whole group of query heads"
            )
        return value

    @field_validator("head_dim")
    @classmethod
    def _head_dim_or_divisible_width(cls, value: int | None, info: ValidationInfo) -> int | None:
        hidden, heads = info.data.get("hidden_size"), info.data.get("num_attention_heads")
        if value is None and hidden is not None and heads is not None and hidden % heads:
            raise ValueError(
                f"not given, and hidden_size ({hidden}) is not divisible by num_attention_heads ({heads});"
                " state head_dim or use a width that is a multiple of the heads"
            )
        return value

    @field_validator("num_experts_per_tok")
    @classmethod
    def _top_k_within_experts(cls, value: int | None, info: ValidationInfo) -> int | None:
        experts = info.data.get("num_experts")
        if value is not None and experts is not None and value > experts:
            raise ValueError(f"top-k of {value} is more than num_experts ({experts})")
        return value

    @field_validator("first_k_dense_layers")
    @classmethod
    def _dense_layers_within_layers(cls, value: int, info: ValidationInfo) -> int:
        layers = info.data.get("num_hidden_layers")
        if layers is not None and value > layers:
            raise ValueError(f"{value} dense layers is more than num_hidden_layers ({layers})")
        return value

    @field_validator("sliding_window", mode="before")
    @classmethod
    def _zero_window_is_none(cls, value: object) -> object:
        """`sliding_window: 0` (as some config.json files write it) is a model without a window."""
        return None if value == 0 and not isinstance(value, bool) else value

    @field_validator("sliding_window_layers")
    @classmethod
    def _window_layers_within_layers(cls, value: int | None, info: ValidationInfo) -> int | None:
        layers = info.data.get("num_hidden_layers")
        if value is not None and layers is not None and value > layers:
            raise ValueError(f"{value} sliding-window layers is more than num_hidden_layers ({layers})")
        return value

    @model_validator(mode="after")
    def _defaults(self) -> Architecture:
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        return self

    @property
    def kv_heads(self) -> int:
        return int(self.num_key_value_heads or self.num_attention_heads)

    @property
    def d_head(self) -> int:
        return int(self.head_dim or self.hidden_size // self.num_attention_heads)

    @property
    def attention_kind(self) -> AttentionKind:
        if self.kv_lora_rank:
            return "mla"
        if self.kv_heads == 1:
            return "mqa"
        if self.kv_heads < self.num_attention_heads:
            return "gqa"
        return "mha"

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts and self.num_experts > 1)

    @property
    def num_moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        candidates = range(self.first_k_dense_layers, self.num_hidden_layers)
        return sum(1 for i in candidates if (i - self.first_k_dense_layers) % self.moe_layer_freq == 0)

    @property
    def num_dense_layers(self) -> int:
        return self.num_hidden_layers - self.num_moe_layers


def reject_bool_for_number(model: type[BaseModel], field_name: str | None, value: object) -> object:
    """Raise for a JSON boolean given to an int/float field of `model` (pydantic's lax mode takes `true`
    as 1); other values pass through unchanged for the field's own validation."""
    if value.__class__ is not bool:  # the common case, decided without looking the field up
        return value
    field = model.model_fields.get(field_name or "")
    if field is not None and _numeric(field.annotation):
        raise ValueError(f"{str(value).lower()} is a boolean; a number is accepted here")
    return value


def _numeric(annotation: object) -> bool:
    """True for int/float annotations (also `int | None`), false when bool is accepted."""
    args = getattr(annotation, "__args__", None) or (annotation,)
    return bool not in args and any(a in (int, float) for a in args)


class LinearShape(BaseModel):
    """One linear layer kind inside a transformer block: what LoRA can target."""

    name: str  # HF module name: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, ...
    in_features: int
    out_features: int
    count: int  # how many such modules in the whole model (layers x experts)
    bias: bool = False
    expert: bool = False  # inside a routed MoE expert
    column_parallel: bool = True  # TP splits its output (q/k/v/gate/up) vs its input (o/down)
    replicated: bool = False  # not sharded by TP (vLLM ReplicatedLinear: MLA q_a_proj/kv_a_proj, routers)

    @property
    def params(self) -> int:
        return self.count * (self.in_features * self.out_features + (self.out_features if self.bias else 0))


class ParamBreakdown(BaseModel):
    """Exact parameter counts by role. `total` = embedding + lm_head + layers + final norm + extras."""

    embedding: int  # token embeddings (+ learned position embeddings)
    lm_head: int  # 0 when tied
    final_norm: int
    attention_per_layer: int  # all attention params in one layer (incl. its norm(s)) -- average over layers
    mlp_dense_per_layer: int  # dense MLP of one dense layer
    moe_per_layer: int  # routed experts + shared experts + router, of one MoE layer
    expert_params_per_layer: int  # routed experts only, of one MoE layer
    active_expert_params_per_layer: int  # top-k routed + shared, what one token touches
    shared_expert_params_per_layer: int = 0  # shared experts (+ their gate) of one MoE layer
    norms_per_layer: int
    num_layers: int
    num_dense_layers: int
    num_moe_layers: int
    extra: int = 0
    linears: list[LinearShape]

    @property
    def layers_total(self) -> int:
        return (
            self.num_layers * (self.attention_per_layer + self.norms_per_layer)
            + self.num_dense_layers * self.mlp_dense_per_layer
            + self.num_moe_layers * self.moe_per_layer
        )

    @property
    def total(self) -> int:
        return self.embedding + self.lm_head + self.final_norm + self.layers_total + self.extra

    @property
    def active_per_token(self) -> int:
        """Parameters one token's forward touches (MoE: top-k + shared experts): compute, not memory."""
        # active_expert_params_per_layer includes the shared experts; expert_params_per_layer does not
        active_routed = self.active_expert_params_per_layer - self.shared_expert_params_per_layer
        routed_inactive = self.num_moe_layers * (self.expert_params_per_layer - active_routed)
        return self.total - routed_inactive


def param_breakdown(arch: Architecture) -> ParamBreakdown:
    """Count parameters exactly from the architecture (HF modeling_* module shapes)."""
    from tools.model.params import count_params  # implemented in tools/model/params.py

    return count_params(arch)
