"""Exact parameter counts (tools.model.params.count_params) against hand-checked and published figures."""

from __future__ import annotations

import pytest

from tools.catalog import get_model
from tools.model.architecture import Architecture, param_breakdown
from tools.model.params import count_params

LLAMA2_7B = Architecture(
    hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, intermediate_size=11008, vocab_size=32000
)


def test_llama2_7b_by_hand() -> None:
    h, i, v, layers = 4096, 11008, 32000, 32
    per_layer = 4 * h * h + 3 * h * i + 2 * h  # q,k,v,o + gate,up,down + 2 RMSNorm
    expected = v * h + layers * per_layer + h + v * h  # embed + layers + final norm + untied lm_head
    assert expected == 6_738_415_616  # HF safetensors count of meta-llama/Llama-2-7b-hf
    b = count_params(LLAMA2_7B)
    assert b.total == expected
    assert b.embedding == b.lm_head == v * h
    assert b.attention_per_layer == 4 * h * h
    assert b.mlp_dense_per_layer == 3 * h * i
    assert b.norms_per_layer == 2 * h
    assert param_breakdown(LLAMA2_7B).total == expected  # the contract entry point delegates here


def test_gpt2_by_hand() -> None:
    # wte 50257x768 + wpe 1024x768 + 12 x (c_attn 768x2304+2304, c_proj 768x768+768, c_fc 768x3072+3072,
    # c_proj 3072x768+768, ln_1/ln_2 2x(768+768)) + ln_f 1536; lm_head tied
    per_layer = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 4 * 768
    expected = 50257 * 768 + 1024 * 768 + 12 * per_layer + 2 * 768
    assert expected == 124_439_808
    assert get_model("gpt2").params == expected
    names = [
        (lin.name, lin.in_features, lin.out_features, lin.bias) for lin in get_model("gpt2").breakdown.linears
    ]
    assert names == [
        ("c_attn", 768, 2304, True),
        ("c_proj", 768, 768, True),
        ("c_fc", 768, 3072, True),
        ("c_proj", 3072, 768, True),
    ]


def test_lora_count_from_linears_matches_peft() -> None:
    # PEFT LoRA adds A (r x in) and B (out x r) per targeted nn.Linear: r * (in + out)
    r = 8
    lins = [lin for lin in count_params(LLAMA2_7B).linears if lin.name in ("q_proj", "v_proj")]
    assert sum(lin.count * r * (lin.in_features + lin.out_features) for lin in lins) == 4_194_304
    # Llama-3-8B (GQA: v_proj is 4096 -> 1024): 32 x 8 x ((4096+4096) + (4096+1024)) = 3,407,872
    lins = [lin for lin in get_model("llama-3-8b").breakdown.linears if lin.name in ("q_proj", "v_proj")]
    assert sum(lin.count * r * (lin.in_features + lin.out_features) for lin in lins) == 3_407_872


def test_linears_plus_non_linear_parts_sum_to_total() -> None:
    """Every parameter is either in a LinearShape or in a listed non-linear tensor (nothing lost or doubled)."""
    for model_id in (
        "llama-2-7b",
        "qwen2.5-7b",
        "mixtral-8x7b",
        "deepseek-v3",
        "gemma-3-1b",
        "falcon-7b",
        "gpt2",
    ):
        spec = get_model(model_id)
        arch, b = spec.architecture, spec.breakdown
        attention_norms = (
            2 * arch.d_head if arch.qk_norm else int(arch.kv_lora_rank or 0) + int(arch.q_lora_rank or 0)
        )
        moegate = 0  # DeepSeek MoEGate: bare (E x h) weight (+ e_score_correction_bias), not an nn.Linear
        if arch.module_names == "deepseek":
            moegate = int(arch.num_experts or 0) * (arch.hidden_size + (1 if arch.router_score_bias else 0))
        non_linear = (
            b.embedding
            + b.lm_head
            + b.final_norm
            + b.extra
            + b.num_layers * (b.norms_per_layer + attention_norms)
            + b.num_moe_layers * moegate
        )
        assert sum(lin.params for lin in b.linears) + non_linear == b.total, model_id


def test_fused_layout_counts_equal_split() -> None:
    # Phi-3 stores qkv_proj and gate_up_proj fused; the count equals the split Llama layout
    phi = get_model("phi-3-mini").architecture
    split = phi.model_copy(update={"module_names": "llama"})
    assert count_params(phi).total == count_params(split).total == 3_821_079_552
    fused = {lin.name: (lin.in_features, lin.out_features) for lin in count_params(phi).linears}
    assert fused["qkv_proj"] == (3072, 3 * 3072)
    assert fused["gate_up_proj"] == (3072, 2 * 8192)


def test_qk_norm_and_four_norms() -> None:
    gemma = get_model("gemma-3-1b").architecture  # qk_norm + 4 norms per layer
    b = count_params(gemma)
    assert b.norms_per_layer == 4 * 1152
    plain = count_params(gemma.model_copy(update={"qk_norm": False}))
    assert b.total - plain.total == 26 * 2 * 256  # q_norm + k_norm = RMSNorm(head_dim) each, 26 layers


def test_qwen2_qkv_bias() -> None:
    arch = get_model("qwen2.5-7b").architecture
    no_bias = count_params(arch.model_copy(update={"attention_bias": False}))
    # q bias 3584 + k bias 512 + v bias 512 per layer, 28 layers
    assert count_params(arch).total - no_bias.total == 28 * (3584 + 2 * 4 * 128)


def test_mixtral_moe_counts_and_active() -> None:
    b = get_model("mixtral-8x7b").breakdown
    one_expert = 3 * 4096 * 14336
    assert b.expert_params_per_layer == 8 * one_expert
    assert b.moe_per_layer == 8 * one_expert + 4096 * 8  # + router Linear(h, 8)
    assert b.active_expert_params_per_layer == 2 * one_expert
    assert b.total == 46_702_792_704
    # Mistral's "12.9B active" for Mixtral-8x7B
    assert b.active_per_token == 12_879_925_248
    names = {lin.name: lin.count for lin in b.linears}
    assert names["w1"] == names["w2"] == names["w3"] == 32 * 8
    assert names["gate"] == 32


def test_qwen2_moe_shared_expert_and_gate() -> None:
    b = get_model("qwen1.5-moe-a2.7b").breakdown
    h = 2048
    assert (
        b.shared_expert_params_per_layer == 3 * h * 5632 + h
    )  # shared MLP + shared_expert_gate Linear(h, 1)
    assert b.moe_per_layer == 60 * 3 * h * 1408 + b.shared_expert_params_per_layer + h * 60
    assert b.total == 14_315_784_192
    # Qwen: "2.7B activated" (excl. embeddings? the card says 2.7B); ours incl. embedding+head
    assert 2.6e9 < b.active_per_token - b.embedding - b.lm_head + 2 * h * 151936 < 2.9e9


def test_deepseek_mla_shapes() -> None:
    lite = {lin.name: lin for lin in get_model("deepseek-v2-lite").breakdown.linears}
    assert (lite["q_proj"].in_features, lite["q_proj"].out_features) == (2048, 16 * 192)
    assert (lite["kv_a_proj_with_mqa"].out_features, lite["kv_a_proj_with_mqa"].replicated) == (576, True)
    assert lite["kv_b_proj"].out_features == 16 * (128 + 128)
    assert lite["o_proj"].in_features == 16 * 128 and not lite["o_proj"].column_parallel
    assert "gate" not in lite  # MoEGate is a bare weight, not an nn.Linear PEFT could target
    v3 = get_model("deepseek-v3")
    names = {lin.name for lin in v3.breakdown.linears}
    assert {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"} <= names
    b = v3.breakdown
    assert b.num_dense_layers == 3 and b.num_moe_layers == 58
    # attention: q_a 7168x1536 + q_a_norm 1536 + q_b 1536x(128*192) + kv_a 7168x576 + kv_a_norm 512
    #            + kv_b 512x(128*256) + o 16384x7168
    assert b.attention_per_layer == (
        7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    )
    assert b.moe_per_layer == 256 * 3 * 7168 * 2048 + 3 * 7168 * 2048 + 256 * 7168 + 256  # + score bias
    assert abs(b.total - 671e9) / 671e9 < 0.005  # model card: 671B main model
    assert abs(b.active_per_token - 37e9) / 37e9 < 0.02  # model card: 37B activated


def test_deepseek_v3_with_mtp_module_is_685b() -> None:
    arch = get_model("deepseek-v3").architecture
    b = count_params(arch)
    h, v = 7168, 129280
    moe_layer = b.attention_per_layer + b.norms_per_layer + b.moe_per_layer
    # MTP module (num_nextn_predict_layers=1): enorm + hnorm + eh_proj (2h -> h) + one MoE layer
    # + shared_head.norm, and the checkpoint stores its own embed_tokens and shared_head.head copies
    mtp = 2 * h + 2 * h * h + moe_layer + h + 2 * v * h
    with_mtp = count_params(arch.model_copy(update={"extra_params": mtp}))
    assert with_mtp.extra == mtp == 13_463_426_304
    assert abs(with_mtp.total - 685e9) / 685e9 < 0.005  # model card: 671B + 14B MTP = 685B


def test_falcon_parallel_block_one_layernorm() -> None:
    b = get_model("falcon-7b").breakdown
    assert b.norms_per_layer == 2 * 4544  # one LayerNorm (weight + bias) feeds attention and MLP
    qkv = next(lin for lin in b.linears if lin.name == "query_key_value")
    assert qkv.out_features == (71 + 2) * 64  # multi-query: one K and one V head
    assert b.total == 6_921_720_704


def test_tied_embeddings_have_no_head() -> None:
    b = get_model("llama-3.2-1b").breakdown
    assert b.lm_head == 0
    assert b.total == 1_235_814_400


@pytest.mark.parametrize("layers,first_k,freq,moe", [(27, 1, 1, 26), (61, 3, 1, 58), (24, 0, 2, 12)])
def test_moe_layer_count(layers: int, first_k: int, freq: int, moe: int) -> None:
    arch = Architecture(
        hidden_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=128,
        vocab_size=100,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        first_k_dense_layers=first_k,
        moe_layer_freq=freq,
    )
    b = count_params(arch)
    assert (b.num_moe_layers, b.num_dense_layers) == (moe, layers - moe)
    experts = next(lin for lin in b.linears if lin.expert)
    assert experts.count == 4 * moe
