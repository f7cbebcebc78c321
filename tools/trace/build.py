"""Build the real Hugging Face model for an `Architecture`, on fake tensors (no weights, no memory).

Each family is a small rule that says whether it describes an architecture and how to write
the transformers config for it (field names from transformers' `configuration_*.py`). The
model is constructed under `FakeTensorMode`, so a 70B model costs no memory on this machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tools.model.architecture import Architecture

DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _common(a: Architecture) -> dict[str, Any]:
    """Fields every Llama-style transformers config shares (LlamaConfig names)."""
    return {
        "hidden_size": a.hidden_size,
        "intermediate_size": a.intermediate_size,
        "num_hidden_layers": a.num_hidden_layers,
        "num_attention_heads": a.num_attention_heads,
        "num_key_value_heads": a.kv_heads,
        "head_dim": a.d_head,
        "vocab_size": a.vocab_size,
        "tie_word_embeddings": a.tie_word_embeddings,
        "max_position_embeddings": a.max_position_embeddings,
    }


@dataclass(frozen=True)
class Family:
    """One transformers model family: does it describe `arch`, and its config."""

    name: str
    config_class: str  # transformers class name
    matches: Callable[[Architecture], bool]
    fields: Callable[[Architecture], dict[str, Any]]
    fp32_ok: bool = True  # MoE experts use torch._grouped_mm, which is 16-bit only
    sdpa_ok: bool = True  # transformers has an SDPA attention path for this family

    def config(self, arch: Architecture) -> Any:
        import transformers

        return getattr(transformers, self.config_class)(**self.fields(arch))


def _moe(a: Architecture) -> dict[str, Any]:
    return {
        **_common(a),
        "num_experts": a.num_experts,
        "num_local_experts": a.num_experts,
        "num_experts_per_tok": a.num_experts_per_tok,
        "moe_intermediate_size": a.moe_intermediate_size or a.intermediate_size,
        "decoder_sparse_step": a.moe_layer_freq,
        "mlp_only_layers": [],
    }


def _mixtral(a: Architecture) -> dict[str, Any]:
    fields = _common(a)
    # modeling_mixtral: every expert is a full SwiGLU of `intermediate_size`
    fields["intermediate_size"] = a.moe_intermediate_size or a.intermediate_size
    return {
        **fields,
        "num_local_experts": a.num_experts,
        "num_experts_per_tok": a.num_experts_per_tok,
        "sliding_window": a.sliding_window,
    }


def _gpt2(a: Architecture) -> dict[str, Any]:
    return {
        "n_embd": a.hidden_size,
        "n_layer": a.num_hidden_layers,
        "n_head": a.num_attention_heads,
        "n_inner": a.intermediate_size,
        "vocab_size": a.vocab_size,
        "n_positions": a.max_position_embeddings,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
    }


def _gemma2(a: Architecture) -> dict[str, Any]:
    return {**_common(a), "sliding_window": a.sliding_window or 4096, "tie_word_embeddings": True}


def _with_window(a: Architecture) -> dict[str, Any]:
    return {**_common(a), "sliding_window": a.sliding_window}


def _qwen2(a: Architecture) -> dict[str, Any]:
    return {**_common(a), "use_sliding_window": False}


def _gemma3(a: Architecture) -> dict[str, Any]:
    return {**_common(a), "sliding_window": a.sliding_window or 512}


def _deepseek_v3(a: Architecture) -> dict[str, Any]:
    fields = _common(a)
    fields.pop("head_dim")  # DeepseekV3Config derives it from qk_rope_head_dim (RoPE part of q/k)
    return {
        **fields,
        "n_routed_experts": a.num_experts,
        "num_experts_per_tok": a.num_experts_per_tok,
        "moe_intermediate_size": a.moe_intermediate_size,
        "n_shared_experts": a.num_shared_experts,
        "first_k_dense_replace": a.first_k_dense_layers,
        "q_lora_rank": a.q_lora_rank,
        "kv_lora_rank": a.kv_lora_rank,
        "qk_nope_head_dim": a.qk_nope_head_dim,
        "qk_rope_head_dim": a.qk_rope_head_dim,
        "v_head_dim": a.v_head_dim,
        "n_group": 1,
        "topk_group": 1,
    }


# Most specific first: the first family whose rule matches describes the architecture.
FAMILIES: tuple[Family, ...] = (
    Family("gpt2", "GPT2Config", lambda a: a.block_style == "gpt" and a.learned_position_embeddings, _gpt2),
    Family("deepseek_v3", "DeepseekV3Config", lambda a: bool(a.kv_lora_rank), _deepseek_v3, fp32_ok=False),
    Family("qwen3_moe", "Qwen3MoeConfig", lambda a: a.is_moe and a.qk_norm, _moe, fp32_ok=False),
    Family(
        "qwen2_moe", "Qwen2MoeConfig", lambda a: a.is_moe and a.num_shared_experts > 0, _moe, fp32_ok=False
    ),
    Family("mixtral", "MixtralConfig", lambda a: a.is_moe, _mixtral, fp32_ok=False),
    Family("gemma3", "Gemma3TextConfig", lambda a: a.norms_per_layer == 4 and a.qk_norm, _gemma3),
    Family("gemma2", "Gemma2Config", lambda a: a.norms_per_layer == 4, _gemma2, sdpa_ok=False),
    Family("qwen3", "Qwen3Config", lambda a: a.qk_norm, _common),
    Family("qwen2", "Qwen2Config", lambda a: a.attention_bias, _qwen2),
    Family("mistral", "MistralConfig", lambda a: a.sliding_window is not None, _with_window),
    Family("phi3", "Phi3Config", lambda a: False, _common),  # fused qkv/gate_up: by name only
    Family("llama", "LlamaConfig", lambda a: True, _common),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


def family_for(arch: Architecture, name: str | None = None) -> Family:
    """The family named `name`, or the first whose rule matches `arch`."""
    if name is not None:
        for family in FAMILIES:
            if family.name == name:
                return family
        from tools.errors import ScenarioError

        raise ScenarioError("family", f"unknown model family {name!r}", accepted=", ".join(FAMILY_NAMES))
    return next(f for f in FAMILIES if f.matches(arch))


def build_model(
    arch: Architecture,
    dtype: str,
    attention: str,
    fake_mode: Any | None,
    family: str | None = None,
) -> torch.nn.Module:
    """The transformers causal-LM for `arch` in `dtype`, built inside `fake_mode` (None = real)."""
    from contextlib import nullcontext

    from transformers import AutoModelForCausalLM

    fam = family_for(arch, family)
    config = fam.config(arch)
    kwargs: dict[str, Any] = {"dtype": DTYPES[dtype], "attn_implementation": attention}
    if arch.is_moe:
        kwargs["experts_implementation"] = "grouped_mm"  # transformers' GPU default; no data-dependent shapes
    with fake_mode if fake_mode is not None else nullcontext():
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    return model
