"""A user's Hugging Face `config.json` -> `Architecture`.

One small reader per `model_type` family, each mapping that family's config keys (and its
transformers `*Config` defaults, which apply when a key is absent) onto `Architecture`.
Unknown model types are read from the standard keys; a missing key is an error naming it.
DeepSeek-V3's multi-token-prediction module (`num_nextn_predict_layers`) is not counted:
inference engines do not load it unless MTP speculative decoding is enabled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tools.errors import ScenarioError
from tools.model.architecture import Architecture

Config = Mapping[str, Any]
ACCEPTED = (
    "an HF config.json (object, JSON text or file path) with hidden_size, num_hidden_layers, "
    "num_attention_heads, intermediate_size and vocab_size (or the model type's own names for them)"
)


def _need(cfg: Config, *keys: str) -> Any:
    """The first present key of `keys`; ScenarioError naming the first one otherwise."""
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    model_type = cfg.get("model_type", "unknown")
    raise ScenarioError(
        "architecture",
        f"config.json (model_type '{model_type}') has no '{keys[0]}'",
        accepted=ACCEPTED,
        code="config_key_missing",
        values={"model_type": model_type, "key": keys[0]},
    )


def _get(cfg: Config, key: str, default: Any) -> Any:
    value = cfg.get(key)
    return default if value is None else value


def _llama_like(cfg: Config, *, tie_default: bool = False, **overrides: Any) -> dict[str, Any]:
    """Keys shared by LlamaConfig and its relatives (Mistral, Qwen2/3, Gemma, Phi-3, DeepSeek, ...)."""
    fields: dict[str, Any] = {
        "hidden_size": _need(cfg, "hidden_size"),
        "num_hidden_layers": _need(cfg, "num_hidden_layers"),
        "num_attention_heads": _need(cfg, "num_attention_heads"),
        "num_key_value_heads": cfg.get("num_key_value_heads"),
        "head_dim": cfg.get("head_dim"),
        "intermediate_size": _need(cfg, "intermediate_size"),
        "vocab_size": _need(cfg, "vocab_size"),
        "tie_word_embeddings": bool(_get(cfg, "tie_word_embeddings", tie_default)),
        "max_position_embeddings": int(_get(cfg, "max_position_embeddings", 4096)),
        "sliding_window": _window(cfg),
        "sliding_window_layers": _sliding_layers(cfg, _qwen_window_layers(cfg)),
    }
    fields.update(overrides)
    return fields


def _window(cfg: Config) -> int | None:
    """The local-attention window: `sliding_window` 0 or null, or `use_sliding_window: false` (what
    transformers writes for Qwen2/Qwen2-MoE, whose Qwen2Config defaults it to false), is no window."""
    qwen = str(cfg.get("model_type", "")).startswith("qwen")
    if not cfg.get("use_sliding_window", not qwen) or not cfg.get("sliding_window"):
        return None
    return int(cfg["sliding_window"])


def _qwen_window_layers(cfg: Config) -> int | None:
    """transformers Qwen2Config/Qwen3Config layer_types: layer i slides when use_sliding_window and
    i >= max_window_layers."""
    if _window(cfg) is None or cfg.get("max_window_layers") is None:
        return None
    return max(0, int(_need(cfg, "num_hidden_layers")) - int(cfg["max_window_layers"]))


def _sliding_layers(cfg: Config, default: int | None) -> int | None:
    """Layers using the local window: transformers >= 4.53 lists them in `layer_types`."""
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        return sum(1 for kind in layer_types if kind == "sliding_attention")
    return default


def _llama(cfg: Config) -> dict[str, Any]:
    # modeling_llama.LlamaAttention: q/k/v/o all take bias=config.attention_bias; MLP bias=config.mlp_bias
    bias = bool(cfg.get("attention_bias", False))
    return _llama_like(cfg, attention_bias=bias, o_bias=bias, mlp_bias=bool(cfg.get("mlp_bias", False)))


def _qwen2(cfg: Config) -> dict[str, Any]:
    return _llama_like(cfg, attention_bias=True)  # modeling_qwen2: q/k/v bias=True, o_proj bias=False


def _qwen3(cfg: Config) -> dict[str, Any]:
    return _llama_like(
        cfg, head_dim=_get(cfg, "head_dim", 128), qk_norm=True, attention_bias=bool(cfg.get("attention_bias"))
    )


def _qwen2_moe(cfg: Config) -> dict[str, Any]:
    return _llama_like(
        cfg,
        attention_bias=True,
        num_experts=_need(cfg, "num_experts"),
        num_experts_per_tok=_need(cfg, "num_experts_per_tok"),
        moe_intermediate_size=_need(cfg, "moe_intermediate_size"),
        shared_expert_intermediate_size=cfg.get("shared_expert_intermediate_size"),
        shared_expert_gate=bool(cfg.get("shared_expert_intermediate_size")),
        moe_layer_freq=int(_get(cfg, "decoder_sparse_step", 1)),
    )


def _qwen3_moe(cfg: Config) -> dict[str, Any]:
    fields = _qwen3(cfg)
    fields.update(
        num_experts=_need(cfg, "num_experts"),
        num_experts_per_tok=_need(cfg, "num_experts_per_tok"),
        moe_intermediate_size=_need(cfg, "moe_intermediate_size"),
        moe_layer_freq=int(_get(cfg, "decoder_sparse_step", 1)),
    )
    return fields


def _mixtral(cfg: Config) -> dict[str, Any]:
    return _llama_like(
        cfg,
        num_experts=_need(cfg, "num_local_experts"),
        num_experts_per_tok=_need(cfg, "num_experts_per_tok"),
        module_names="mixtral",
    )


def _deepseek(cfg: Config) -> dict[str, Any]:
    routed = cfg.get("n_routed_experts")
    return _llama_like(
        cfg,
        num_key_value_heads=cfg.get("num_attention_heads"),  # MLA: every head has its own (decompressed) K/V
        head_dim=None,
        attention_bias=bool(cfg.get("attention_bias", False)),
        q_lora_rank=cfg.get("q_lora_rank"),
        kv_lora_rank=_need(cfg, "kv_lora_rank"),
        qk_nope_head_dim=_need(cfg, "qk_nope_head_dim"),
        qk_rope_head_dim=_need(cfg, "qk_rope_head_dim"),
        v_head_dim=_need(cfg, "v_head_dim"),
        num_experts=routed,
        num_experts_per_tok=cfg.get("num_experts_per_tok") if routed else None,
        moe_intermediate_size=cfg.get("moe_intermediate_size") if routed else None,
        num_shared_experts=int(_get(cfg, "n_shared_experts", 0)) if routed else 0,
        first_k_dense_layers=int(_get(cfg, "first_k_dense_replace", 0)) if routed else 0,
        moe_layer_freq=int(_get(cfg, "moe_layer_freq", 1)),
        router_score_bias=cfg.get("topk_method") == "noaux_tc",  # DeepSeek-V3 e_score_correction_bias
        module_names="deepseek",
    )


def _gemma(cfg: Config) -> dict[str, Any]:
    return _llama_like(cfg, tie_default=True, head_dim=_get(cfg, "head_dim", 256))


def _gemma2(cfg: Config) -> dict[str, Any]:
    layers = int(_need(cfg, "num_hidden_layers"))
    return _llama_like(
        cfg,
        tie_default=True,
        head_dim=_get(cfg, "head_dim", 256),
        norms_per_layer=4,  # input, post_attention, pre_feedforward, post_feedforward (modeling_gemma2)
        sliding_window=_get(cfg, "sliding_window", 4096),
        sliding_window_layers=_sliding_layers(cfg, layers // 2),  # every other layer is local
    )


def _gemma3_text(cfg: Config) -> dict[str, Any]:
    layers = int(_get(cfg, "num_hidden_layers", 26))
    pattern = int(_get(cfg, "sliding_window_pattern", 6))  # 5 local : 1 global
    defaults = {"vocab_size": 262208, "num_hidden_layers": 26, "num_attention_heads": 8}
    merged = {**defaults, **{k: v for k, v in cfg.items() if v is not None}}
    return _llama_like(
        merged,
        tie_default=True,
        head_dim=_get(cfg, "head_dim", 256),
        qk_norm=True,
        norms_per_layer=4,
        sliding_window=_get(cfg, "sliding_window", 4096),
        sliding_window_layers=_sliding_layers(cfg, layers - layers // pattern),
    )


def _gemma3(cfg: Config) -> dict[str, Any]:
    text = cfg.get("text_config")
    if not isinstance(text, Mapping):
        raise ScenarioError(
            "architecture",
            "gemma3 config.json has no 'text_config'",
            accepted=ACCEPTED,
            code="config_key_missing",
            values={"model_type": "gemma3", "key": "text_config"},
        )
    return _gemma3_text({"model_type": "gemma3_text", **text})


def _phi3(cfg: Config) -> dict[str, Any]:
    return _llama_like(cfg, module_names="phi3")


def _glm(cfg: Config) -> dict[str, Any]:
    # transformers modeling_glm: q/k/v bias=config.attention_bias, o_proj no bias, fused gate_up_proj
    return _llama_like(cfg, attention_bias=bool(_get(cfg, "attention_bias", True)), module_names="glm")


def _glm4(cfg: Config) -> dict[str, Any]:
    fields = _glm(cfg)
    fields["norms_per_layer"] = 4  # modeling_glm4 adds post_self_attn_layernorm and post_mlp_layernorm
    return fields


def _chatglm(cfg: Config) -> dict[str, Any]:
    """THUDM modeling_chatglm (ChatGLM2/3, GLM-4 original repos)."""
    heads = int(_need(cfg, "num_attention_heads"))
    groups = cfg.get("multi_query_group_num") if cfg.get("multi_query_attention") else None
    hidden = int(_need(cfg, "hidden_size"))
    return {
        "hidden_size": hidden,
        "num_hidden_layers": _need(cfg, "num_layers", "num_hidden_layers"),
        "num_attention_heads": heads,
        "num_key_value_heads": groups,
        "head_dim": _get(cfg, "kv_channels", hidden // heads),
        "intermediate_size": _need(cfg, "ffn_hidden_size", "intermediate_size"),
        "vocab_size": _need(cfg, "padded_vocab_size", "vocab_size"),
        "tie_word_embeddings": bool(_get(cfg, "tie_word_embeddings", False)),
        "attention_bias": bool(_get(cfg, "add_qkv_bias", False)),
        "o_bias": bool(_get(cfg, "add_bias_linear", False)),
        "mlp_bias": bool(_get(cfg, "add_bias_linear", False)),
        "norm_has_bias": not bool(_get(cfg, "rmsnorm", True)),
        "max_position_embeddings": int(_get(cfg, "seq_length", 8192)),
        "module_names": "chatglm",
    }


def _internlm2(cfg: Config) -> dict[str, Any]:
    bias = bool(_get(cfg, "bias", True))  # InternLM2Config default bias=True (wqkv, wo)
    return _llama_like(cfg, attention_bias=bias, o_bias=bias, module_names="internlm2")


def _baichuan(cfg: Config) -> dict[str, Any]:
    return _llama_like(
        {**cfg, "max_position_embeddings": cfg.get("max_position_embeddings") or cfg.get("model_max_length")},
        module_names="baichuan",
    )


def _gpt2(cfg: Config) -> dict[str, Any]:
    hidden = int(_need(cfg, "n_embd", "hidden_size"))
    return {
        "hidden_size": hidden,
        "num_hidden_layers": _need(cfg, "n_layer", "num_hidden_layers"),
        "num_attention_heads": _need(cfg, "n_head", "num_attention_heads"),
        "intermediate_size": _get(cfg, "n_inner", 4 * hidden),  # GPT2MLP: n_inner or 4 * n_embd
        "vocab_size": _get(cfg, "vocab_size", 50257),
        "tie_word_embeddings": bool(_get(cfg, "tie_word_embeddings", True)),
        "block_style": "gpt",
        "gated_mlp": False,
        "attention_bias": True,
        "o_bias": True,
        "mlp_bias": True,
        "norm_has_bias": True,
        "learned_position_embeddings": True,
        "max_position_embeddings": _get(cfg, "n_positions", 1024),
        "module_names": "gpt2",
    }


def _falcon(cfg: Config) -> dict[str, Any]:
    """modeling_falcon: fused query_key_value, parallel attention/MLP, LayerNorm with bias."""
    hidden = int(_need(cfg, "hidden_size", "n_embd"))
    heads = int(_need(cfg, "num_attention_heads", "n_head"))
    new_arch = bool(cfg.get("new_decoder_architecture", False))
    if new_arch:
        kv = int(_get(cfg, "num_kv_heads", _get(cfg, "n_head_kv", heads)))
        norms = int(_get(cfg, "num_ln_in_parallel_attn", 2))  # ln_attn + ln_mlp
    else:
        kv = 1 if cfg.get("multi_query", True) else heads
        norms = 1 if cfg.get("parallel_attn", True) else 2  # input_layernorm (+ post_attention_layernorm)
    bias = bool(cfg.get("bias", False))
    return {
        "hidden_size": hidden,
        "num_hidden_layers": _need(cfg, "num_hidden_layers", "n_layer"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": _get(cfg, "ffn_hidden_size", 4 * hidden),
        "vocab_size": _get(cfg, "vocab_size", 65024),
        "tie_word_embeddings": bool(_get(cfg, "tie_word_embeddings", True)),
        "block_style": "gpt",
        "gated_mlp": False,
        "attention_bias": bias,
        "o_bias": bias,
        "mlp_bias": bias,
        "norm_has_bias": True,
        "norms_per_layer": norms,
        "parallel_attn_mlp": bool(cfg.get("parallel_attn", True)) or new_arch,
        "max_position_embeddings": _get(cfg, "max_position_embeddings", 2048),
        "module_names": "falcon",
    }


READERS: dict[str, Callable[[Config], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _llama,
    "yi": _llama,
    "Yi": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe,
    "mixtral": _mixtral,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gemma3": _gemma3,
    "phi3": _phi3,
    "glm": _glm,
    "glm4": _glm4,
    "chatglm": _chatglm,
    "internlm2": _internlm2,
    "baichuan": _baichuan,
    "gpt2": _gpt2,
    "falcon": _falcon,
    "RefinedWeb": _falcon,
    "RefinedWebModel": _falcon,
}


def _load_config(config: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    text = str(config)
    if isinstance(config, str) and text.lstrip().startswith("{"):
        source = text
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ScenarioError(
                "architecture",
                f"no config.json at '{text}'",
                accepted=ACCEPTED,
                code="config_not_found",
                values={"path": text},
            )
        source = path.read_text(encoding="utf-8")
    try:
        loaded = json.loads(source)
    except json.JSONDecodeError as err:
        raise ScenarioError(
            "architecture",
            f"config.json is not valid JSON ({err.msg})",
            accepted=ACCEPTED,
            code="config_not_json",
            values={"detail": err.msg},
        ) from None
    if not isinstance(loaded, dict):
        raise ScenarioError(
            "architecture", "config.json must be a JSON object", accepted=ACCEPTED, code="config_not_object"
        )
    return loaded


def architecture_from_hf_config(config: Mapping[str, Any] | str | Path) -> Architecture:
    """Parse an HF config.json (dict, JSON text, file or folder path) into an `Architecture`."""
    cfg = _load_config(config)
    model_type = str(cfg.get("model_type") or "")
    reader = READERS.get(model_type) or READERS.get(model_type.lower()) or _llama
    fields = reader(cfg)
    try:
        return Architecture.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ScenarioError(
            "architecture",
            f"config.json value for '{where}' is invalid: {first['msg']}",
            accepted=ACCEPTED,
            code="config_value_invalid",
            values={"key": where, "detail": first["msg"]},
        ) from None
