"""Model architecture (an HF-style config subset) and the exact parameter breakdown.

The breakdown is per module kind so that TP/PP sharding, LoRA targeting, QLoRA's
"what stays 16-bit" and MoE residency all work from one source of truth.
Counts follow the Hugging Face `modeling_*.py` module shapes (LlamaForCausalLM,
Qwen2/3, Qwen3Moe, Mixtral, DeepseekV2/V3, Gemma2/3, Phi3, GPT2, Falcon, GLM4, ...).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

BlockStyle = Literal[
    "llama", "gpt"
]  # llama: RMSNorm + gated MLP (SwiGLU/GeGLU); gpt: LayerNorm + 2-matrix MLP
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
# HF module names of the linear layers (what PEFT `target_modules` match); counts are the same for
# fused (qkv_proj, gate_up_proj) and split layouts, LoRA trainable counts are not.
ModuleNames = Literal[
    "llama", "mixtral", "deepseek", "gpt2", "falcon", "phi3", "chatglm", "glm", "internlm2", "baichuan"
]


class Architecture(BaseModel):
    """HF-style architecture. Field names follow transformers' config.json keys."""

    model_config = ConfigDict(extra="ignore")

    hidden_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int | None = Field(default=None, gt=0)  # None = MHA (= num_attention_heads)
    head_dim: int | None = Field(default=None, gt=0)  # None = hidden_size // num_attention_heads
    intermediate_size: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    tie_word_embeddings: bool = False
    block_style: BlockStyle = "llama"
    gated_mlp: bool = True  # SwiGLU/GeGLU: gate+up+down (3 matrices); else up+down (2)
    attention_bias: bool = False  # bias on q/k/v (Qwen2: qkv bias; GPT-2: all linear biases)
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3/Gemma3: per-head RMSNorm on q and k (2*head_dim params per layer)
    norm_has_bias: bool = False  # LayerNorm with bias (GPT-2, Falcon)
    norms_per_layer: int = 2  # Gemma2/3 have 4 (pre/post attention and MLP)
    # OLMo-1 (modeling_olmo.OlmoLayerNorm): LayerNorm without weight or bias, so no norm parameters
    parametric_norms: bool = True
    # Memory-relevant implementation details (no parameters): modeling_gemma*.py GemmaRMSNorm computes
    # `x * (1 + weight.float())` in fp32; Gemma-2 soft-caps attention scores and final logits with tanh.
    norm_fp32_scale: bool = False
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    parallel_attn_mlp: bool = False  # Falcon/GPT-J: attention and MLP in parallel from one norm
    max_position_embeddings: int = 4096
    learned_position_embeddings: bool = False  # GPT-2: wpe table of max_position_embeddings x h
    sliding_window: int | None = None  # tokens; applies to `sliding_window_layers` layers
    sliding_window_layers: int | None = None  # how many of the layers use the window (None = all when set)
    # MoE (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3)
    num_experts: int | None = None  # routed experts per MoE layer
    num_experts_per_tok: int | None = None  # top-k
    moe_intermediate_size: int | None = None  # per routed expert
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None  # total for all shared experts (Qwen2-MoE style)
    first_k_dense_layers: int = 0  # DeepSeek: first k layers use a dense MLP of intermediate_size
    moe_layer_freq: int = 1
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate (h params) on the shared expert
    router_score_bias: bool = False  # DeepSeek-V3: gate.e_score_correction_bias (num_experts params)
    # MLA (DeepSeek-V2/V3)
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Multi-token prediction modules and other extras that ship in the checkpoint
    extra_params: int = 0
    # vision-language models: decoder tokens one image adds at the default resolution (no parameters)
    image_tokens: int = 0
    module_names: ModuleNames = "llama"  # naming/fusing of the linear modules (see ModuleNames)

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
    from tools.params import count_params  # implemented in tools/params.py

    return count_params(arch)
