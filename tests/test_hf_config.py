"""HF config.json -> Architecture, checked against the catalog's exact counts.

The config dicts below carry the keys of the real config.json files on the Hugging Face Hub
(trimmed of keys that do not affect shapes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.catalog import architecture_from_hf_config, get_model
from tools.errors import ScenarioError
from tools.model.params import count_params

LLAMA2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}
QWEN25_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "max_position_embeddings": 131072,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
}
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_attention_heads": 32,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "vocab_size": 151936,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 768,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "tie_word_embeddings": False,
    "attention_bias": False,
    "max_position_embeddings": 40960,
}
QWEN15_MOE = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1,
    "tie_word_embeddings": False,
}
MIXTRAL = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "max_position_embeddings": 32768,
}
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_hidden_layers": 27,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "num_experts_per_tok": 6,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "q_lora_rank": None,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 102400,
    "topk_method": "greedy",
    "tie_word_embeddings": False,
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "num_hidden_layers": 61,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "topk_method": "noaux_tc",
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
}
GPT2 = {
    "model_type": "gpt2",
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "n_inner": None,
    "n_positions": 1024,
    "vocab_size": 50257,
}
FALCON_7B = {
    "model_type": "falcon",
    "hidden_size": 4544,
    "num_hidden_layers": 32,
    "num_attention_heads": 71,
    "multi_query": True,
    "parallel_attn": True,
    "new_decoder_architecture": False,
    "bias": False,
    "vocab_size": 65024,
}
GEMMA3_27B = {
    "model_type": "gemma3",
    "text_config": {
        "model_type": "gemma3_text",
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "sliding_window": 1024,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    },
    "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "image_size": 896, "patch_size": 14},
}
GEMMA2_2B = {
    "model_type": "gemma2",
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_attention_heads": 8,
    "num_hidden_layers": 26,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 256000,
    "sliding_window": 4096,
}
PHI3_MINI = {
    "model_type": "phi3",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32064,
    "tie_word_embeddings": False,
}
GLM4_9B = {
    "model_type": "chatglm",
    "hidden_size": 4096,
    "ffn_hidden_size": 13696,
    "num_layers": 40,
    "num_attention_heads": 32,
    "kv_channels": 128,
    "multi_query_attention": True,
    "multi_query_group_num": 2,
    "padded_vocab_size": 151552,
    "add_qkv_bias": True,
    "add_bias_linear": False,
    "rmsnorm": True,
    "seq_length": 131072,
}
INTERNLM25_7B = {
    "model_type": "internlm2",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 92544,
    "bias": False,
    "tie_word_embeddings": False,
}
BAICHUAN2_13B = {
    "model_type": "baichuan",
    "hidden_size": 5120,
    "intermediate_size": 13696,
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "vocab_size": 125696,
    "model_max_length": 4096,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize(
    "config,model_id",
    [
        (LLAMA2_7B, "llama-2-7b"),
        (QWEN25_7B, "qwen2.5-7b"),
        (QWEN3_30B_A3B, "qwen3-30b-a3b"),
        (QWEN15_MOE, "qwen1.5-moe-a2.7b"),
        (MIXTRAL, "mixtral-8x7b"),
        (DEEPSEEK_V2_LITE, "deepseek-v2-lite"),
        (DEEPSEEK_V3, "deepseek-v3"),
        (GPT2, "gpt2"),
        (FALCON_7B, "falcon-7b"),
        (GEMMA3_27B, "gemma-3-27b"),
        (GEMMA2_2B, "gemma-2-2b"),
        (PHI3_MINI, "phi-3-mini"),
        (GLM4_9B, "glm-4-9b"),
        (INTERNLM25_7B, "internlm2.5-7b"),
        (BAICHUAN2_13B, "baichuan2-13b"),
    ],
)
def test_config_matches_catalog_count(config: dict[str, object], model_id: str) -> None:
    arch = architecture_from_hf_config(config)
    spec = get_model(model_id)
    assert count_params(arch).total == spec.params
    # same linear module kinds, so LoRA targets and counts agree
    assert count_params(arch).linears == spec.breakdown.linears


def test_mla_and_moe_fields() -> None:
    arch = architecture_from_hf_config(DEEPSEEK_V3)
    assert arch.attention_kind == "mla"
    assert (arch.num_moe_layers, arch.num_dense_layers) == (58, 3)
    assert arch.router_score_bias
    assert not architecture_from_hf_config(DEEPSEEK_V2_LITE).router_score_bias


def test_gpt2_defaults() -> None:
    arch = architecture_from_hf_config(GPT2)
    assert arch.intermediate_size == 4 * 768  # n_inner None -> 4 * n_embd
    assert arch.tie_word_embeddings and arch.learned_position_embeddings
    assert count_params(arch).total == 124_439_808


def test_qwen2_sliding_window_off_when_unused() -> None:
    assert architecture_from_hf_config(QWEN25_7B).sliding_window is None


def test_file_folder_and_json_text(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA2_7B), encoding="utf-8")
    expected = count_params(architecture_from_hf_config(LLAMA2_7B)).total
    assert count_params(architecture_from_hf_config(path)).total == expected
    assert count_params(architecture_from_hf_config(str(path))).total == expected
    assert count_params(architecture_from_hf_config(tmp_path)).total == expected
    assert count_params(architecture_from_hf_config(json.dumps(LLAMA2_7B))).total == expected


def test_unknown_model_type_uses_standard_keys() -> None:
    config = {**LLAMA2_7B, "model_type": "my_custom_llama"}
    assert count_params(architecture_from_hf_config(config)).total == 6_738_415_616


def test_missing_key_is_named() -> None:
    config = {k: v for k, v in LLAMA2_7B.items() if k != "intermediate_size"}
    with pytest.raises(ScenarioError) as err:
        architecture_from_hf_config(config)
    assert err.value.field == "architecture"
    assert "'intermediate_size'" in err.value.message
    with pytest.raises(ScenarioError) as err:
        architecture_from_hf_config({k: v for k, v in GPT2.items() if k != "n_embd"})
    assert "'n_embd'" in err.value.message


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"no config\.json"):
        architecture_from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        architecture_from_hf_config(bad)
    with pytest.raises(ScenarioError, match="hidden_size"):
        architecture_from_hf_config({**LLAMA2_7B, "hidden_size": -1})
    with pytest.raises(ScenarioError, match="text_config"):
        architecture_from_hf_config({"model_type": "gemma3"})


def test_sliding_window_layers() -> None:
    g3 = architecture_from_hf_config(GEMMA3_27B)
    assert (g3.sliding_window, g3.sliding_window_layers) == (1024, 62 - 62 // 6)  # 5 local : 1 global
    g2 = architecture_from_hf_config(GEMMA2_2B)
    assert (g2.sliding_window, g2.sliding_window_layers) == (4096, 13)  # every other layer
    # transformers >= 4.53 writes the per-layer kinds out
    listed = {**GEMMA2_2B, "layer_types": ["sliding_attention", "full_attention"] * 13}
    assert architecture_from_hf_config(listed).sliding_window_layers == 13
    mistral = {**LLAMA2_7B, "model_type": "mistral", "sliding_window": 4096}
    assert architecture_from_hf_config(mistral).sliding_window == 4096
