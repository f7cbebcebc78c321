"""JSON pastes: a DeepSpeed config, a saved training_args.json, a model's config.json.

DeepSpeed key names: deepspeed/runtime/zero/config.py and docs/_pages/config-json.md (DeepSpeed repository);
config.json: the Hugging Face model config, read by tools/catalog/hf_config.py.
"""

from __future__ import annotations

from typing import Any

from service.agent.paste.reading import NOT_UNDERSTOOD, Reading
from service.agent.paste.tables import SKIP, To, apply, flatten
from service.agent.paste.values import as_bool, as_int, as_optimizer

MODELLED_BY_DEFAULT = "modelled_by_default"  # a buffer size the estimator sizes with DeepSpeed's defaults


def _device(value: Any) -> str:
    text = str(value).strip().lower()
    if text in ("cpu", "nvme", "none"):
        return text
    raise ValueError(text)


def _buffer(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, MODELLED_BY_DEFAULT)


def _half(name: str) -> Any:
    def handler(reading: Reading, key: str, value: Any) -> None:
        if as_bool(value):
            reading.use(key, "precision_recipe", "mixed")  # 16-bit weights + fp32 master (ZeRO paper 3.1)
            reading.use(key, "weight_dtype", name)
        else:
            reading.ignore(key, "no_memory_effect")

    return handler


def _cpu_offload(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "offload_optimizer", "cpu")
    else:
        reading.ignore(key, "no_memory_effect")


def _partitioned_activations(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, NOT_UNDERSTOOD if as_bool(value) else "no_memory_effect")


DEEPSPEED: dict[str, Any] = {
    "zero_optimization.stage": To("zero_stage", as_int),
    "zero_optimization.offload_optimizer.device": To("offload_optimizer", _device),
    "zero_optimization.offload_param.device": To("offload_params", _device),
    "zero_optimization.offload_optimizer.pin_memory": SKIP,
    "zero_optimization.offload_param.pin_memory": SKIP,
    "zero_optimization.offload_optimizer.nvme_path": SKIP,
    "zero_optimization.offload_param.nvme_path": SKIP,
    "zero_optimization.cpu_offload": _cpu_offload,
    "zero_optimization.stage3_prefetch_bucket_size": _buffer,
    "zero_optimization.stage3_max_live_parameters": _buffer,
    "zero_optimization.stage3_max_reuse_distance": _buffer,
    "zero_optimization.stage3_param_persistence_threshold": _buffer,
    "zero_optimization.reduce_bucket_size": _buffer,
    "zero_optimization.allgather_bucket_size": _buffer,
    "zero_optimization.sub_group_size": _buffer,
    "zero_optimization.contiguous_gradients": _buffer,
    "zero_optimization.overlap_comm": _buffer,
    "zero_optimization.reduce_scatter": SKIP,
    "zero_optimization.allgather_partitions": SKIP,
    "zero_optimization.round_robin_gradients": SKIP,
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": SKIP,
    "zero_optimization.stage3_gather_fp16_weights_on_model_save": SKIP,
    "bf16.enabled": _half("bf16"),
    "fp16.enabled": _half("fp16"),
    "fp16.*": SKIP,
    "train_micro_batch_size_per_gpu": To("batch_size", as_int),
    "gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "train_batch_size": To("global_batch_size", as_int),
    "optimizer.type": To("optimizer", as_optimizer),
    "optimizer.params.*": SKIP,
    "scheduler.*": SKIP,
    "gradient_clipping": SKIP,
    "steps_per_print": SKIP,
    "wall_clock_breakdown": SKIP,
    "zero_allow_untested_optimizer": SKIP,
    "activation_checkpointing.partition_activations": _partitioned_activations,
    "activation_checkpointing.cpu_checkpointing": _partitioned_activations,
    "activation_checkpointing.*": SKIP,
    "communication_data_type": SKIP,
    "prescale_gradients": SKIP,
}


def read_deepspeed_dict(reading: Reading, data: dict[str, Any], prefix: str = "") -> None:
    items = [(prefix + key, value) for key, value in flatten(data)]
    table = {prefix + key: handler for key, handler in DEEPSPEED.items()} if prefix else DEEPSPEED
    apply(reading, items, table)
    reading.facts["deepspeed"] = True


def read_deepspeed(data: dict[str, Any]) -> Reading:
    reading = Reading("deepspeed-json")
    read_deepspeed_dict(reading, data)
    reading.fields.setdefault("task", "full_finetune")
    reading.assume("deepspeed_training")
    return reading


def read_training_args(data: dict[str, Any]) -> Reading:
    from service.agent.paste.hf_args import HF_TRAINER, finish_hf

    reading = Reading("hf-trainer-args")
    apply(reading, flatten(data), HF_TRAINER)
    finish_hf(reading)
    return reading


# config.json keys with no bearing on memory (token ids, initialisation, dropout at inference, versions)
_CONFIG_SKIP = frozenset(
    {
        "attention_dropout",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "use_cache",
        "initializer_range",
        "rope_theta",
        "transformers_version",
        "max_window_layers",
        "hidden_dropout",
        "attention_bias_dropout",
    }
)
_CONFIG_ALIASES = frozenset(
    {
        "n_embd",
        "n_layer",
        "n_head",
        "n_positions",
        "n_inner",
        "num_local_experts",
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "n_routed_experts",
        "n_shared_experts",
        "shared_expert_intermediate_size",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "multi_query",
        "num_kv_heads",
        "new_decoder_architecture",
        "text_config",
        "layer_types",
        "first_k_dense_replace",
        "sliding_window_pattern",
        "rms_norm_eps",
        "hidden_act",
        "model_type",
        "architectures",
        "rope_scaling",
        "use_sliding_window",
    }
)


def read_hf_config(data: dict[str, Any]) -> Reading:
    from tools.catalog.hf_config import architecture_from_hf_config
    from tools.model.architecture import Architecture

    reading = Reading("hf-config-json")
    architecture = architecture_from_hf_config(data)
    known = set(Architecture.model_fields) | _CONFIG_ALIASES
    for key, value in data.items():
        if key in known:
            reading.use(key, "architecture", architecture)
        elif key == "torch_dtype" or key == "dtype":
            try:
                from service.agent.paste.values import as_dtype

                reading.use(key, "weight_dtype", as_dtype(value))
            except ValueError:
                reading.ignore(key, "value_not_understood")
        elif key == "quantization_config" and isinstance(value, dict):
            _quantization(reading, key, value)
        elif key in _CONFIG_SKIP:
            reading.ignore(key, "no_memory_effect")
        elif key == "_name_or_path" and value:
            reading.use(key, "model", str(value))
        else:
            reading.ignore_unknown(key)
    reading.fields["architecture"] = architecture
    reading.fields.setdefault("task", "inference")
    reading.assume("config_inference")
    return reading


def _quantization(reading: Reading, key: str, config: dict[str, Any]) -> None:
    method = str(config.get("quant_method", "")).lower()
    bits = config.get("bits")
    if method in ("gptq", "awq") and bits == 4:
        reading.use(key, "weight_dtype", "int4")
        reading.use(key, "quant_method", method)
        if isinstance(config.get("group_size"), int) and config["group_size"] > 0:
            reading.use(key, "quant_group_size", config["group_size"])
    elif method == "fp8":
        reading.use(key, "weight_dtype", "fp8")
        reading.use(key, "quant_method", "fp8")
    elif method == "bitsandbytes" and config.get("load_in_4bit"):
        reading.use(key, "weight_dtype", "nf4")
        reading.use(key, "quant_method", "bnb")
    else:
        reading.ignore(key, NOT_UNDERSTOOD)
