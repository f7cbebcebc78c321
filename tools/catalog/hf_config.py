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

from tools.catalog.config_keys import FAMILY_DEFAULTS, ReadConfig, refuse_unread
from tools.errors import ScenarioError
from tools.model.architecture import ARCHITECTURE_ONLY_FIELDS, Architecture

Config = Mapping[str, Any]
ACCEPTED = (
    "an HF config.json (object, JSON text or file path) with hidden_size, num_hidden_layers, "
    "num_attention_heads, intermediate_size and vocab_size (or the model type's own names for them)"
)


def _need(cfg: Config, *keys: str) -> Any:
    """The first present key of `keys`; ScenarioError naming the first one otherwise."""
    values = [cfg.get(key) for key in keys]  # each name read (accepted), the first present one taken
    for value in values:
        if value is not None:
            return value
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


def _family(cfg: Config, family: str, key: str) -> Any:
    """`key` of a MoE/MLA config, or the family's transformers default when the config lacks it (recorded:
    the estimate lists it in its assumptions)."""
    default = FAMILY_DEFAULTS[family][key]
    if isinstance(cfg, ReadConfig):
        return cfg.family_default(key, default)
    return cfg.get(key, default)


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
        # Gemma/Gemma-2/3, Qwen3: q/k/v bias = config.attention_bias (a family's reader overrides it)
        "attention_bias": bool(cfg.get("attention_bias", False)),
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
    shared = _family(cfg, "qwen2_moe", "shared_expert_intermediate_size")
    return _llama_like(
        cfg,
        attention_bias=True,
        num_experts=_family(cfg, "qwen2_moe", "num_experts"),
        num_experts_per_tok=_family(cfg, "qwen2_moe", "num_experts_per_tok"),
        moe_intermediate_size=_family(cfg, "qwen2_moe", "moe_intermediate_size"),
        shared_expert_intermediate_size=shared,
        shared_expert_gate=bool(shared),
        moe_layer_freq=int(_family(cfg, "qwen2_moe", "decoder_sparse_step") or 1),
    )


def _qwen3_moe(cfg: Config) -> dict[str, Any]:
    fields = _qwen3(cfg)
    fields.update(
        num_experts=_family(cfg, "qwen3_moe", "num_experts"),
        num_experts_per_tok=_family(cfg, "qwen3_moe", "num_experts_per_tok"),
        moe_intermediate_size=_family(cfg, "qwen3_moe", "moe_intermediate_size"),
        moe_layer_freq=int(_family(cfg, "qwen3_moe", "decoder_sparse_step") or 1),
    )
    return fields


def _mixtral(cfg: Config) -> dict[str, Any]:
    return _llama_like(
        cfg,
        num_experts=_family(cfg, "mixtral", "num_local_experts"),
        num_experts_per_tok=_family(cfg, "mixtral", "num_experts_per_tok"),
        module_names="mixtral",
    )


def _deepseek(cfg: Config) -> dict[str, Any]:
    """DeepSeek-V2/V3 (MLA, shared + routed experts); a key the config lacks takes the transformers default
    of its version (tools/catalog/config_keys.py FAMILY_DEFAULTS), a key given as null means none."""
    family = "deepseek_v3" if cfg.get("model_type") == "deepseek_v3" else "deepseek_v2"

    def key(name: str) -> Any:
        return _family(cfg, family, name)

    routed = key("n_routed_experts")
    top_k = cfg.get("num_experts_per_tok")
    if top_k is None and family == "deepseek_v3":
        top_k = key("num_experts_per_tok")
    return _llama_like(
        cfg,
        num_key_value_heads=cfg.get("num_attention_heads"),  # MLA: every head has its own (decompressed) K/V
        head_dim=None,
        attention_bias=bool(cfg.get("attention_bias", False)),
        q_lora_rank=key("q_lora_rank"),
        kv_lora_rank=key("kv_lora_rank"),
        qk_nope_head_dim=key("qk_nope_head_dim"),
        qk_rope_head_dim=key("qk_rope_head_dim"),
        v_head_dim=key("v_head_dim"),
        num_experts=routed,
        num_experts_per_tok=top_k if routed else None,
        moe_intermediate_size=key("moe_intermediate_size") if routed else None,
        num_shared_experts=int(key("n_shared_experts") or 0) if routed else 0,
        first_k_dense_layers=int(key("first_k_dense_replace") or 0) if routed else 0,
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
    missing = {k: v for k, v in defaults.items() if dict.get(cfg, k) is None}
    merged = cfg.with_values(missing) if isinstance(cfg, ReadConfig) else {**cfg, **missing}
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
    return _gemma3_text(ReadConfig({"model_type": "gemma3_text", **text}))


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
    positions = {"max_position_embeddings": cfg.get("max_position_embeddings") or cfg.get("model_max_length")}
    merged = cfg.with_values(positions) if isinstance(cfg, ReadConfig) else {**cfg, **positions}
    return _llama_like(merged, module_names="baichuan")


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
    "qwen2_vl": _qwen2,  # the language model of Qwen2-VL / Qwen2.5-VL is Qwen2's (q/k/v bias)
    "qwen2_5_vl": _qwen2,
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


# vision-language wrappers whose language model is under `text_config`: that model's type when it names none
TEXT_MODEL_TYPES = {"gemma3": "gemma3_text", "llava": "llama", "llava_next": "llama", "mistral3": "mistral"}
# a config without a known model_type: the family its MoE/MLA/GPT-2 keys name
_READERS_BY_KEY = (
    ("num_local_experts", _mixtral),
    ("n_routed_experts", _deepseek),
    ("kv_lora_rank", _deepseek),
    ("num_experts", _qwen3_moe),
    ("n_embd", _gpt2),
)


def _reader_for(cfg: Config) -> Callable[[Config], dict[str, Any]]:
    model_type = str(cfg.get("model_type") or "")
    reader = READERS.get(model_type) or READERS.get(model_type.lower())
    if reader is not None:
        return reader
    return next((r for key, r in _READERS_BY_KEY if key in cfg), _llama)


def architecture_fields(config: Mapping[str, Any], *, strict: bool) -> dict[str, Any]:
    """The `Architecture` fields of an HF config.json: its language model (a vision model's `text_config`)
    read by its family's reader, this project's own fields given beside them kept, and the family defaults
    taken for absent MoE/MLA keys in `config_defaults`. `strict`: a key no reader reads and no list accepts
    (tools/catalog/config_keys.py) is refused by name, with the accepted keys near it."""
    outer = ReadConfig(dict(config))
    cfg, text = outer, dict.get(outer, "text_config")
    if isinstance(text, Mapping) and dict.get(outer, "hidden_size") is None:
        outer.get("text_config")
        inner_type = text.get("model_type") or TEXT_MODEL_TYPES.get(str(outer.get("model_type")), "llama")
        cfg = ReadConfig({**text, "model_type": inner_type})
    own = {k: dict.get(cfg, k) for k in cfg if k in ARCHITECTURE_ONLY_FIELDS}
    try:
        fields = _reader_for(cfg)(cfg)
    except ScenarioError as err:
        if strict and err.code == "config_key_missing":  # a misspelling of the missing key: named first
            refuse_unread(cfg, ARCHITECTURE_ONLY_FIELDS, missing=str(err.values["key"]))
        raise
    except (TypeError, ValueError, ArithmeticError) as err:  # a list where a count belongs; 0 heads
        raise ScenarioError(
            "architecture",
            f"config.json has a value of the wrong type ({err})",
            accepted=ACCEPTED,
            code="config_value_invalid",
            values={"key": "?", "detail": str(err)},
        ) from None
    if strict:
        _refuse_unknown(outer, cfg)
    fields.update(own)
    defaults = dict(own.get("config_defaults") or {}) | cfg.defaults
    if dict.get(outer, "vision_config") is not None:
        defaults["vision_config"] = "not counted"  # the language model alone: said in the assumptions
    if defaults:
        fields["config_defaults"] = defaults
    return {k: v for k, v in fields.items() if v is not None}


def _refuse_unknown(outer: ReadConfig, cfg: ReadConfig) -> None:
    if cfg is not outer:
        refuse_unread(outer, ("text_config",))
    refuse_unread(cfg, ARCHITECTURE_ONLY_FIELDS)


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
    """Parse an HF config.json (dict, JSON text, file or folder path) into an `Architecture`: the Hub look-up's
    reading, where a key this project does not know is passed over (a new transformers key must not stop a
    look-up); a user's explicit `architecture` is read strictly (`architecture_fields(strict=True)`)."""
    fields = architecture_fields(_load_config(config), strict=False)
    try:
        return Architecture.model_validate(fields)
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
