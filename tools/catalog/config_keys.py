"""Which config.json keys a reader of tools/catalog/hf_config.py reads, which are known to be irrelevant, and
the transformers defaults of the MoE/MLA keys a config may leave out.

`ReadConfig` records every key a family's reader asks for (present or not): what it read, and what it would
have read, is what that family accepts. Keys known to change no memory figure (dtypes, token ids, RoPE and
norm constants, dropout, router loss weights ...) are accepted and ignored; the sliding-window keys are
accepted here and mapped by the readers. A user's explicit `architecture` refuses any other key by name, with
the accepted keys near it (a misspelt `num_hiden_layers` is never dropped without a word).
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches
from typing import Any

from tools.errors import ScenarioError


class ReadConfig(dict[str, Any]):
    """A config.json object that records the keys read through `get` and `[]` (present or absent), and the
    family defaults taken for keys it lacks (`defaults`: key -> value, shown as assumptions)."""

    def __init__(self, data: dict[str, Any], read: set[str] | None = None) -> None:
        super().__init__(data)
        self.read: set[str] = set() if read is None else read
        self.defaults: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def with_values(self, values: dict[str, Any]) -> ReadConfig:
        """This config with `values` over it (a family's defaults, a renamed key), recording into the same
        set of read keys and defaults."""
        merged = ReadConfig({**dict(self.items()), **values}, self.read)
        merged.defaults = self.defaults
        return merged

    def family_default(self, key: str, default: Any) -> Any:
        """The key's value; when the config lacks the key, the family's transformers default, recorded."""
        if key in self:
            return self.get(key)
        self.read.add(key)
        self.defaults[key] = default
        return default


# transformers' config defaults of the MoE / MLA keys (taken, and listed in the assumptions, when a config
# leaves the key out): models/mixtral/configuration_mixtral.py MixtralConfig; models/qwen2_moe/
# configuration_qwen2_moe.py Qwen2MoeConfig; models/qwen3_moe/configuration_qwen3_moe.py Qwen3MoeConfig;
# models/deepseek_v2/configuration_deepseek_v2.py DeepseekV2Config; models/deepseek_v3/
# configuration_deepseek_v3.py DeepseekV3Config
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "mixtral": {"num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2_moe": {
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "decoder_sparse_step": 1,
    },
    "qwen3_moe": {
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "decoder_sparse_step": 1,
    },
    "deepseek_v2": {
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "moe_intermediate_size": 1407,
        "first_k_dense_replace": 0,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
    },
    "deepseek_v3": {
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
    },
}

# accepted here, mapped by the readers (_llama_like, _gemma2, _gemma3_text): the local-attention window
SLIDING_WINDOW_KEYS = frozenset(
    {
        "sliding_window",
        "sliding_window_pattern",
        "layer_types",
        "use_sliding_window",
        "max_window_layers",
        "_sliding_window_pattern",  # Gemma-3 checkpoints' spelling
        "sliding_window_size",  # Gemma-2-9B's config.json repeats the window under this name
    }
)

# keys that change no memory figure of the estimate: accepted and ignored
IGNORED_KEYS = frozenset(
    {
        # identity, dtype and bookkeeping (transformers PretrainedConfig)
        "_name_or_path",
        "architectures",
        "auto_map",
        "model_type",
        "torch_dtype",
        "dtype",
        "transformers_version",
        "tokenizer_class",
        "use_cache",
        "return_dict",
        "output_attentions",
        "output_hidden_states",
        "torchscript",
        "is_encoder_decoder",
        "is_decoder",
        "pruned_heads",
        "id2label",
        "label2id",
        "problem_type",
        "task_specific_params",
        "use_bfloat16",
        "chunk_size_feed_forward",
        "quantization_config",  # the storage is the scenario's weight_dtype / quant_method
        "_attn_implementation",
        "attn_implementation",
        "cache_implementation",
        "_from_model_config",
        "gradient_checkpointing",  # the scenario's own gradient_checkpointing decides
        "ignore_index",
        "classifier_dropout",
        # token ids
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "unk_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "image_token_id",
        "image_token_index",
        "video_token_id",
        "vision_start_token_id",
        "vision_end_token_id",
        "vision_token_id",
        "boi_token_index",
        "eoi_token_index",
        # positions and norms (no parameters, no activations of their own)
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "rope_local_base_freq",
        "rope_interleave",
        "partial_rotary_factor",
        "rotary_pct",
        "rotary_emb_base",
        "original_max_position_embeddings",
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "initializer_range",
        "initializer_factor",
        "query_pre_attn_scalar",
        "hidden_act",
        "hidden_activation",
        "activation_function",
        "pretraining_tp",
        "n_ctx",  # GPT-2: the same as n_positions
        "alibi",  # Falcon: ALiBi instead of RoPE (no parameters)
        "apply_residual_connection_post_layernorm",
        # ChatGLM (THUDM modeling_chatglm): kernel and numerics switches
        "apply_query_key_layer_scaling",
        "attention_softmax_in_fp32",
        "bias_dropout_fusion",
        "fp32_residual_connection",
        "layernorm_epsilon",
        "rope_ratio",
        "original_rope",
        "post_layer_norm",
        "z_loss_weight",  # Baichuan 2 training loss
        # dropout (inference; LoRA dropout is the scenario's lora_dropout)
        "attention_dropout",
        "hidden_dropout",
        "hidden_dropout_prob",
        "attention_probs_dropout_prob",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "summary_type",
        "summary_use_proj",
        "summary_activation",
        "summary_proj_to_labels",
        "summary_first_dropout",
        "scale_attn_weights",
        "reorder_and_upcast_attn",
        "scale_attn_by_inverse_layer_idx",
        # MoE routing (which experts run, not how many are resident)
        "router_aux_loss_coef",
        "output_router_logits",
        "router_jitter_noise",
        "norm_topk_prob",
        "scoring_func",
        "routed_scaling_factor",
        "n_group",
        "topk_group",
        "ep_size",
        "aux_loss_alpha",
        "seq_aux",
        "mlp_only_layers",
        "num_nextn_predict_layers",  # DeepSeek-V3 MTP: not loaded unless MTP decoding is on
        # vision-language wrappers: the vision tower is listed in the assumptions, not counted
        "vision_config",
        "projector_hidden_act",
        "multimodal_projector_bias",
        "vision_feature_layer",
        "vision_feature_select_strategy",
        "image_seq_length",
        "mm_tokens_per_image",
        "spatial_merge_size",
    }
)


def refuse_unread(cfg: ReadConfig, extra_accepted: Iterable[str] = (), *, missing: str | None = None) -> None:
    """ScenarioError naming the first key no reader read and no list accepts, with the near accepted keys.
    `missing`: the reader stopped at this absent key (its read keys are then partial): only a key that looks
    like it (a misspelling) is named."""
    accepted = cfg.read | IGNORED_KEYS | SLIDING_WINDOW_KEYS | set(extra_accepted)
    unknown = sorted(k for k in cfg if k not in accepted)
    if missing is not None:
        unknown = [k for k in unknown if get_close_matches(missing, [k], n=1, cutoff=0.75)]
    if not unknown:
        return
    model_type = str(dict.get(cfg, "model_type") or "llama")
    near = get_close_matches(unknown[0], sorted(accepted), n=3, cutoff=0.75)
    read = ", ".join(sorted(cfg.read))
    raise ScenarioError(
        "architecture",
        f"config.json key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown)} "
        f"{'are' if len(unknown) > 1 else 'is'} not a key of model_type '{model_type}'",
        suggestions=near,
        accepted=f"the keys of model_type '{model_type}' ({read}), the sliding-window keys, and keys of no "
        "effect on memory (torch_dtype, architectures, token ids, rope_scaling, norms' eps, dropout ...)",
        code="config_key_unknown",
        values={"key": unknown[0], "model_type": model_type},
    )
