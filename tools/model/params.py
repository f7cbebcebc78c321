"""Exact parameter counts from an HF-style architecture.

Counted (each following the module shapes of transformers' `modeling_*.py`):
token embeddings (+ GPT-2's learned position table), LM head (0 when tied), every linear
layer of attention (standard q/k/v/o or fused qkv; DeepSeek MLA), dense MLP (gated or
2-matrix), MoE (routed experts, shared experts, router, Qwen2-MoE shared-expert gate,
DeepSeek-V3 score-correction bias), per-layer norms (RMSNorm: h; LayerNorm: 2h), qk-norm,
final norm, and `extra_params` (e.g. DeepSeek-V3's MTP module).
Not counted: buffers that are not parameters (rotary inv_freq, causal masks).

The per-layer linears are reported as `LinearShape`s with HF module names, so LoRA
trainable counts (PEFT: r * (in + out) per targeted linear) and TP sharding use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.model.architecture import Architecture, LinearShape, ParamBreakdown


@dataclass(frozen=True)
class ModuleNaming:
    """HF module names of one model family; `qkv` set = fused q/k/v, `gate_up` set = fused gate+up."""

    q: str = "q_proj"
    k: str = "k_proj"
    v: str = "v_proj"
    o: str = "o_proj"
    qkv: str | None = None
    gate: str = "gate_proj"
    up: str = "up_proj"
    down: str = "down_proj"
    gate_up: str | None = None
    # 2-matrix MLP (GPT-style)
    fc_in: str = "up_proj"
    fc_out: str = "down_proj"
    # MoE: routed experts may be named differently from the dense MLP (Mixtral: w1/w3/w2)
    expert_gate: str | None = None
    expert_up: str | None = None
    expert_down: str | None = None
    router: str = "gate"
    router_is_linear: bool = True  # nn.Linear (PEFT-targetable) vs a bare weight (DeepSeek MoEGate)


# Names from: modeling_llama.py / modeling_mistral.py / modeling_qwen2(_moe).py / modeling_qwen3(_moe).py /
# modeling_gemma*.py / modeling_deepseek.py (llama), modeling_mixtral.py (experts w1/w3/w2),
# modeling_gpt2.py (Conv1D c_attn/c_proj/c_fc/c_proj), modeling_falcon.py, modeling_phi3.py (qkv_proj,
# gate_up_proj), THUDM modeling_chatglm.py (query_key_value, dense_h_to_4h fused gate+up), modeling_glm.py,
# internlm2 modeling_internlm2.py (wqkv, wo, w1/w3/w2), Baichuan2 modeling_baichuan.py (W_pack).
NAMINGS: dict[str, ModuleNaming] = {
    "llama": ModuleNaming(),
    "mixtral": ModuleNaming(expert_gate="w1", expert_up="w3", expert_down="w2"),
    "deepseek": ModuleNaming(router_is_linear=False),  # MoEGate holds a bare weight, not nn.Linear
    "gpt2": ModuleNaming(qkv="c_attn", o="c_proj", fc_in="c_fc", fc_out="c_proj"),
    "falcon": ModuleNaming(qkv="query_key_value", o="dense", fc_in="dense_h_to_4h", fc_out="dense_4h_to_h"),
    "phi3": ModuleNaming(qkv="qkv_proj", gate_up="gate_up_proj"),
    "chatglm": ModuleNaming(qkv="query_key_value", o="dense", gate_up="dense_h_to_4h", down="dense_4h_to_h"),
    "glm": ModuleNaming(gate_up="gate_up_proj"),
    "internlm2": ModuleNaming(qkv="wqkv", o="wo", gate="w1", up="w3", down="w2"),
    "baichuan": ModuleNaming(qkv="W_pack"),
}


def _linear(
    name: str,
    in_f: int,
    out_f: int,
    count: int,
    *,
    bias: bool = False,
    expert: bool = False,
    column: bool = True,
    replicated: bool = False,
) -> LinearShape:
    return LinearShape(
        name=name,
        in_features=in_f,
        out_features=out_f,
        count=count,
        bias=bias,
        expert=expert,
        column_parallel=column,
        replicated=replicated,
    )


def _sum(linears: list[LinearShape]) -> int:
    return sum(lin.params for lin in linears)


class StandardAttention:
    """q/k/v/o (or fused qkv) with MHA/GQA/MQA heads: modeling_llama.LlamaAttention and relatives."""

    def linears(self, arch: Architecture, naming: ModuleNaming, layers: int) -> list[LinearShape]:
        h, hd = arch.hidden_size, arch.d_head
        q_out, kv_out = arch.num_attention_heads * hd, arch.kv_heads * hd
        bias = arch.attention_bias
        if (
            naming.qkv
        ):  # fused: one Linear(h, (n_heads + 2 * kv_heads) * head_dim); count equals the split one
            qkv = [_linear(naming.qkv, h, q_out + 2 * kv_out, layers, bias=bias)]
        else:
            qkv = [
                _linear(naming.q, h, q_out, layers, bias=bias),
                _linear(naming.k, h, kv_out, layers, bias=bias),
                _linear(naming.v, h, kv_out, layers, bias=bias),
            ]
        return [*qkv, _linear(naming.o, q_out, h, layers, bias=arch.o_bias, column=False)]

    def norm_params(self, arch: Architecture) -> int:
        # Qwen3/Gemma3: q_norm and k_norm are RMSNorm(head_dim) (modeling_qwen3.Qwen3Attention)
        return 2 * arch.d_head if arch.qk_norm else 0


class MultiHeadLatentAttention:
    """DeepSeek-V2/V3 MLA: modeling_deepseek.DeepseekV2Attention (q_lora_rank None -> plain q_proj)."""

    def linears(self, arch: Architecture, naming: ModuleNaming, layers: int) -> list[LinearShape]:
        h, nh = arch.hidden_size, arch.num_attention_heads
        nope, rope = int(arch.qk_nope_head_dim or 0), int(arch.qk_rope_head_dim or 0)
        v_dim = int(arch.v_head_dim or arch.d_head)
        kv_rank = int(arch.kv_lora_rank or 0)
        q_head = nope + rope
        bias = arch.attention_bias
        if arch.q_lora_rank:
            q = [
                _linear("q_a_proj", h, arch.q_lora_rank, layers, bias=bias, replicated=True),
                _linear("q_b_proj", arch.q_lora_rank, nh * q_head, layers),
            ]
        else:
            q = [_linear("q_proj", h, nh * q_head, layers)]
        return [
            *q,
            _linear("kv_a_proj_with_mqa", h, kv_rank + rope, layers, bias=bias, replicated=True),
            _linear("kv_b_proj", kv_rank, nh * (nope + v_dim), layers),
            _linear("o_proj", nh * v_dim, h, layers, bias=arch.o_bias, column=False),
        ]

    def norm_params(self, arch: Architecture) -> int:
        # kv_a_layernorm (RMSNorm(kv_lora_rank)) and q_a_layernorm (RMSNorm(q_lora_rank)) when q is low-rank
        return int(arch.kv_lora_rank or 0) + int(arch.q_lora_rank or 0)


def _attention_for(arch: Architecture) -> StandardAttention | MultiHeadLatentAttention:
    return MultiHeadLatentAttention() if arch.kv_lora_rank else StandardAttention()


def _mlp_linears(
    arch: Architecture, naming: ModuleNaming, intermediate: int, count: int, *, expert: bool = False
) -> list[LinearShape]:
    """One MLP (dense, routed expert or shared expert) x `count`: gated = gate/up/down, else up/down."""
    h, bias = arch.hidden_size, arch.mlp_bias
    if not arch.gated_mlp:  # GPT-2 / Falcon: Linear(h, I) -> act -> Linear(I, h)
        return [
            _linear(naming.fc_in, h, intermediate, count, bias=bias, expert=expert),
            _linear(naming.fc_out, intermediate, h, count, bias=bias, expert=expert, column=False),
        ]
    gate = (naming.expert_gate if expert else None) or naming.gate
    up = (naming.expert_up if expert else None) or naming.up
    down = (naming.expert_down if expert else None) or naming.down
    if naming.gate_up and not expert:  # Phi-3 / GLM: one Linear(h, 2I) holding gate and up
        first = [_linear(naming.gate_up, h, 2 * intermediate, count, bias=bias, expert=expert)]
    else:
        first = [
            _linear(gate, h, intermediate, count, bias=bias, expert=expert),
            _linear(up, h, intermediate, count, bias=bias, expert=expert),
        ]
    return [*first, _linear(down, intermediate, h, count, bias=bias, expert=expert, column=False)]


def _merge(linears: list[LinearShape]) -> list[LinearShape]:
    """Merge entries of the same module kind (same name, shape, flags) by adding their counts."""
    merged: dict[tuple[object, ...], LinearShape] = {}
    for lin in linears:
        key = (
            lin.name,
            lin.in_features,
            lin.out_features,
            lin.bias,
            lin.expert,
            lin.column_parallel,
            lin.replicated,
        )
        if key in merged:
            merged[key] = merged[key].model_copy(update={"count": merged[key].count + lin.count})
        else:
            merged[key] = lin
    return list(merged.values())


def _norm_size(arch: Architecture, dim: int) -> int:
    # RMSNorm: weight only; LayerNorm: weight + bias (GPT-2, Falcon); OLMo-1's norm has neither
    if not arch.parametric_norms:
        return 0
    return dim * (2 if arch.norm_has_bias else 1)


def count_params(arch: Architecture) -> ParamBreakdown:
    """Exact parameter breakdown of `arch` (see module docstring for what is counted)."""
    naming = NAMINGS[arch.module_names]
    h, layers = arch.hidden_size, arch.num_hidden_layers
    n_moe, n_dense = arch.num_moe_layers, arch.num_dense_layers

    # embeddings: wte (V x h) [+ GPT-2 wpe (max_positions x h)]
    embedding = arch.vocab_size * h
    if arch.learned_position_embeddings:
        embedding += arch.max_position_embeddings * h
    lm_head = 0 if arch.tie_word_embeddings else arch.vocab_size * h

    attention = _attention_for(arch)
    attn_linears = attention.linears(arch, naming, layers)
    attention_per_layer = _sum(attention.linears(arch, naming, 1)) + attention.norm_params(arch)

    dense_linears = _mlp_linears(arch, naming, arch.intermediate_size, n_dense) if n_dense else []
    mlp_dense_per_layer = _sum(_mlp_linears(arch, naming, arch.intermediate_size, 1))

    moe_linears: list[LinearShape] = []
    moe_per_layer = expert_per_layer = active_per_layer = shared_per_layer = 0
    if arch.is_moe:
        n_exp = int(arch.num_experts or 0)
        top_k = int(arch.num_experts_per_tok or 1)
        moe_i = int(arch.moe_intermediate_size or arch.intermediate_size)
        one_expert = _sum(_mlp_linears(arch, naming, moe_i, 1, expert=True))
        expert_per_layer = n_exp * one_expert
        moe_linears += _mlp_linears(arch, naming, moe_i, n_exp * n_moe, expert=True)
        # shared experts: Qwen2-MoE gives their total width; DeepSeek n_shared_experts x moe_intermediate_size
        shared_i = arch.shared_expert_intermediate_size or arch.num_shared_experts * moe_i
        if shared_i:
            shared_per_layer = _sum(_mlp_linears(arch, naming, shared_i, 1))
            moe_linears += _mlp_linears(arch, naming, shared_i, n_moe)
        if arch.shared_expert_gate:  # Qwen2-MoE: shared_expert_gate = Linear(h, 1, bias=False)
            shared_per_layer += h
            moe_linears.append(_linear("shared_expert_gate", h, 1, n_moe, replicated=True))
        router = h * n_exp  # router: Linear(h, E, bias=False) / MoEGate.weight (E x h)
        if naming.router_is_linear:
            moe_linears.append(_linear(naming.router, h, n_exp, n_moe, replicated=True))
        if arch.router_score_bias:  # DeepSeek-V3 MoEGate.e_score_correction_bias (E,)
            router += n_exp
        moe_per_layer = expert_per_layer + shared_per_layer + router
        active_per_layer = top_k * one_expert + shared_per_layer

    norms_per_layer = arch.norms_per_layer * _norm_size(arch, h)
    return ParamBreakdown(
        embedding=embedding,
        lm_head=lm_head,
        final_norm=_norm_size(arch, h),
        attention_per_layer=attention_per_layer,
        mlp_dense_per_layer=mlp_dense_per_layer,
        moe_per_layer=moe_per_layer,
        expert_params_per_layer=expert_per_layer,
        active_expert_params_per_layer=active_per_layer,
        shared_expert_params_per_layer=shared_per_layer,
        norms_per_layer=norms_per_layer,
        num_layers=layers,
        num_dense_layers=n_dense,
        num_moe_layers=n_moe,
        extra=arch.extra_params,
        linears=_merge(attn_linears + dense_linears + moe_linears),
    )


def total_params(arch: Architecture) -> int:
    return count_params(arch).total
