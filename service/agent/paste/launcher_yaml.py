"""accelerate config YAML and torchtune recipe YAML: their keys as Scenario fields.

accelerate: keys of `accelerate config` (src/accelerate/commands/config/cluster.py; LLaMA-Factory's
examples/accelerate/fsdp_config.yaml); torchtune: recipes/configs/*/*.yaml (torchtune repository).
"""

from __future__ import annotations

import re
from typing import Any

from service.agent.paste.reading import NO_MEMORY_EFFECT, NOT_UNDERSTOOD, Reading
from service.agent.paste.tables import SKIP, To, apply, flatten
from service.agent.paste.training_yaml import deepspeed_file
from service.agent.paste.values import as_bool, as_float, as_int, as_optimizer, as_targets

UNSET_VALUE = "unset_value"  # null in the file: the framework's default applies

# FSDP sharding strategies by name or number (torch.distributed.fsdp.ShardingStrategy)
_SHARDING = {
    "full_shard": 3,
    "1": 3,
    "hybrid_shard": 3,
    "4": 3,
    "shard_grad_op": 2,
    "2": 2,
    "no_shard": 0,
    "3": 0,
}


def _sharding(value: Any) -> int:
    return _SHARDING[str(value).strip().lower()]


def _offload_both(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "offload_params", "cpu")
        reading.use(key, "offload_optimizer", "cpu")
    else:
        reading.ignore(key, NO_MEMORY_EFFECT)


def _reshard(reading: Reading, key: str, value: Any) -> None:
    if str(value).strip().upper() in ("FULL_SHARD", "HYBRID_SHARD") or value is True:
        reading.use(key, "zero_stage", 3)
    elif str(value).strip().upper() == "SHARD_GRAD_OP" or value is False:
        reading.use(key, "zero_stage", 2)
    else:
        raise ValueError(value)


def _distributed(reading: Reading, key: str, value: Any) -> None:
    kind = str(value).strip().upper()
    reading.facts["distributed"] = kind
    if kind == "MULTI_GPU":
        reading.use(key, "zero_stage", 0)  # plain DDP: every rank holds everything
    elif kind in ("FSDP", "DEEPSPEED", "NO"):
        reading.used[key] = "zero_stage" if kind != "NO" else "num_gpus"
        if kind == "NO":
            reading.fields["num_gpus"] = 1
    else:
        raise ValueError(kind)


def _mixed_precision(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text in ("bf16", "fp16"):
        # accelerate autocasts over the model as loaded (fp32 unless the script says otherwise)
        reading.use(key, "precision_recipe", "amp")
    elif text in ("no", "none"):
        reading.ignore(key, NO_MEMORY_EFFECT)
    elif text == "fp8":
        reading.use(key, "fp8_training", True)
    else:
        raise ValueError(text)


ACCELERATE: dict[str, Any] = {
    "distributed_type": _distributed,
    "num_processes": To("num_gpus", as_int),
    "mixed_precision": _mixed_precision,
    "fsdp_config.fsdp_sharding_strategy": To("zero_stage", _sharding),
    "fsdp_config.fsdp_reshard_after_forward": _reshard,
    "fsdp_config.fsdp_offload_params": _offload_both,
    "fsdp_config.fsdp_activation_checkpointing": To("gradient_checkpointing", as_bool),
    "deepspeed_config.zero_stage": To("zero_stage", as_int),
    "deepspeed_config.offload_optimizer_device": To("offload_optimizer", str),
    "deepspeed_config.offload_param_device": To("offload_params", str),
    "deepspeed_config.gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "deepspeed_config.deepspeed_config_file": deepspeed_file,
    "deepspeed_config.zero3_init_flag": SKIP,
    "deepspeed_config.zero3_save_16bit_model": SKIP,
    "deepspeed_config.deepspeed_multinode_launcher": SKIP,
    "fsdp_config.*": SKIP,
    **{
        name: SKIP
        for name in (
            "compute_environment",
            "debug",
            "downcast_bf16",
            "machine_rank",
            "main_training_function",
            "num_machines",
            "rdzv_backend",
            "same_network",
            "tpu_env",
            "tpu_use_cluster",
            "tpu_use_sudo",
            "use_cpu",
            "gpu_ids",
            "main_process_ip",
            "main_process_port",
            "enable_cpu_affinity",
            "dynamo_config.dynamo_backend",
        )
    },
}


def read_accelerate(data: dict[str, Any]) -> Reading:
    reading = Reading("accelerate-yaml")
    apply(reading, flatten(data), ACCELERATE)
    reading.fields.setdefault("task", "full_finetune")
    reading.assume("launcher_training")
    return reading


def torchtune_model(component: str) -> tuple[str, str]:
    """`torchtune.models.llama3_1.lora_llama3_1_8b` -> (task, catalog name `llama3.1-8b`)."""
    builder = str(component).rsplit(".", 1)[-1]
    task = "full_finetune"
    for prefix, named in (("qlora_", "qlora"), ("lora_", "lora")):
        if builder.startswith(prefix):
            task, builder = named, builder[len(prefix) :]
            break
    name = re.sub(r"(\d)_(\d)", r"\1.\2", builder).replace("_", "-")
    return task, name


def _model_component(reading: Reading, key: str, value: Any) -> None:
    task, name = torchtune_model(str(value))
    reading.use(key, "model", name)
    reading.used[key] = "model, task"
    reading.facts["task"] = task


def _attn_modules(value: Any) -> list[str]:
    return [{"output_proj": "o_proj"}.get(name, name) for name in as_targets(value)]


def _lora_mlp(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.facts["lora_mlp"] = key
    else:
        reading.ignore(key, NO_MEMORY_EFFECT)


def _if_true(field: str, setting: Any) -> Any:
    def handler(reading: Reading, key: str, value: Any) -> None:
        if value is None:
            reading.ignore(key, UNSET_VALUE)
        elif as_bool(value):
            reading.use(key, field, setting)
        else:
            reading.use(key, field, False) if setting is True else reading.ignore(key, NO_MEMORY_EFFECT)

    return handler


def _true_not_modelled(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, NOT_UNDERSTOOD if value and as_bool(value) else NO_MEMORY_EFFECT)


def _loss(value: Any) -> str:
    name = str(value).rsplit(".", 1)[-1]
    # torchtune/modules/loss: CEWithChunkedOutputLoss upcasts the logits chunk by chunk;
    # LinearCrossEntropyLoss computes the output projection per chunk as well
    known = {"CEWithChunkedOutputLoss": "chunked", "LinearCrossEntropyLoss": "fused_linear"}
    return known[name]


def _dtype(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text == "bf16":
        # torchtune trains in the model's dtype: weights, gradients and optimizer states in bf16
        reading.use(key, "weight_dtype", "bf16")
        reading.use(key, "precision_recipe", "bf16")
    elif text == "fp32":
        reading.use(key, "precision_recipe", "fp32")
    else:
        raise ValueError(text)


def _max_seq_len(reading: Reading, key: str, value: Any) -> None:
    if value is None:
        reading.ignore(key, UNSET_VALUE)
    else:
        reading.use(key, "seq_len", as_int(value))


TORCHTUNE: dict[str, Any] = {
    "model._component_": _model_component,
    "model.lora_rank": To("lora_rank", as_int),
    "model.lora_alpha": To("lora_alpha", as_float),
    "model.lora_dropout": To("lora_dropout", as_float),
    "model.lora_attn_modules": To("lora_targets", _attn_modules),
    "model.apply_lora_to_mlp": _lora_mlp,
    "model.apply_lora_to_output": _true_not_modelled,
    "model.use_dora": To("dora", as_bool),
    "batch_size": To("batch_size", as_int),
    "tokenizer.max_seq_len": _max_seq_len,
    "dataset.max_seq_len": _max_seq_len,
    "dataset.packed": To("packing", as_bool),
    "enable_activation_checkpointing": _if_true("gradient_checkpointing", True),
    "enable_activation_offloading": _if_true("activation_offloading", True),
    "optimizer_in_bwd": _if_true("optimizer_in_backward", True),
    "compile": _true_not_modelled,
    "loss._component_": To("cross_entropy", _loss),
    "dtype": _dtype,
    "optimizer._component_": To("optimizer", as_optimizer),
    "optimizer.*": SKIP,
    "gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "epochs": To("epochs", as_float),
    "fsdp_cpu_offload": _offload_both,
    "fsdp_sharding_strategy": To("zero_stage", _sharding),
    "clip_grad_norm": SKIP,
    **{
        name: SKIP
        for name in (
            "checkpointer.*",
            "tokenizer.*",
            "dataset.*",
            "metric_logger.*",
            "profiler.*",
            "lr_scheduler.*",
            "output_dir",
            "log_every_n_steps",
            "log_peak_memory_stats",
            "log_level",
            "device",
            "seed",
            "shuffle",
            "resume_from_checkpoint",
            "save_adapter_weights_only",
            "max_steps_per_epoch",
            "valid_data_files",
            "custom_sharded_layers",
            "base_model_path",
        )
    },
}


def read_torchtune(data: dict[str, Any]) -> Reading:
    reading = Reading("torchtune-yaml")
    apply(reading, flatten(data), TORCHTUNE)
    task = reading.facts.get("task", "full_finetune")
    reading.fields["task"] = task
    if task == "qlora":
        reading.fields["weight_dtype"] = "nf4"  # torchtune's qlora_* builders: NF4 base (torchao)
    mlp_key = reading.facts.get("lora_mlp")
    if mlp_key:
        targets = list(reading.fields.get("lora_targets", []))
        reading.use(mlp_key, "lora_targets", [*targets, "gate_proj", "up_proj", "down_proj"])
    return reading
