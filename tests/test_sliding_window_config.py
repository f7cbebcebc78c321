"""Sliding-window keys of real config.json files, as the HF-config mapping (tools/catalog/hf_config.py) reads them.

transformers: Qwen2Config writes `sliding_window` but `use_sliding_window: false` (no window); when true,
layer i slides when i >= max_window_layers. Gemma-3: `sliding_window_pattern` 6 (5 local : 1 global) or
`layer_types`. Mistral-7B-v0.1: `sliding_window: 4096` on every layer. `sliding_window: 0` or null: none.
"""

from __future__ import annotations

from tools.catalog.hf_config import architecture_from_hf_config
from tools.model.architecture import Architecture

QWEN2_MOE = {  # Qwen/Qwen1.5-MoE-A2.7B config.json (transformers writes sliding_window null here)
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "intermediate_size": 5632,
    "vocab_size": 151936,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 21,
}
MISTRAL = {  # mistralai/Mistral-7B-v0.1 config.json
    "model_type": "mistral",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
}


def test_no_window_is_not_an_error() -> None:
    assert architecture_from_hf_config(QWEN2_MOE).sliding_window is None
    assert architecture_from_hf_config({**QWEN2_MOE, "sliding_window": 0}).sliding_window is None
    assert (
        architecture_from_hf_config({**QWEN2_MOE, "sliding_window": 4096}).sliding_window is None
    )  # flag off
    assert architecture_from_hf_config({**MISTRAL, "sliding_window": None}).sliding_window is None
    assert architecture_from_hf_config({**MISTRAL, "sliding_window": 0}).sliding_window is None
    # stated as an architecture: 0 is no window too
    arch = Architecture(
        hidden_size=2048,
        num_hidden_layers=4,
        num_attention_heads=16,
        intermediate_size=64,
        vocab_size=100,
        sliding_window=0,
    )
    assert arch.sliding_window is None


def test_qwen_max_window_layers() -> None:
    arch = architecture_from_hf_config({**QWEN2_MOE, "use_sliding_window": True, "sliding_window": 4096})
    # transformers Qwen2MoeConfig layer_types: layers 21, 22, 23 slide
    assert (arch.sliding_window, arch.sliding_window_layers) == (4096, 3)


def test_mistral_window_on_every_layer() -> None:
    arch = architecture_from_hf_config(MISTRAL)
    assert arch.sliding_window == 4096 and arch.sliding_window_layers is None  # None = every layer


def test_gemma3_pattern_and_layer_types() -> None:
    text = {  # google/gemma-3-27b-pt config.json text_config
        "hidden_size": 5376,
        "num_hidden_layers": 62,
        "num_attention_heads": 32,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "intermediate_size": 21504,
        "vocab_size": 262208,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "max_position_embeddings": 131072,
    }
    arch = architecture_from_hf_config({"model_type": "gemma3", "text_config": text})
    assert (arch.sliding_window, arch.sliding_window_layers) == (1024, 52)  # 62 layers: 52 local, 10 global
    types = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(62)]
    listed = architecture_from_hf_config(
        {"model_type": "gemma3", "text_config": {**text, "layer_types": types}}
    )
    assert listed.sliding_window_layers == 52
