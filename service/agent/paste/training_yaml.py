"""LLaMA-Factory (YAML and `llamafactory-cli train` flags) and axolotl YAML: their keys as Scenario fields.

Key names follow LLaMA-Factory's src/llamafactory/hparams/{model,finetuning,data}_args.py and
examples/train_lora/llama3_lora_sft.yaml; axolotl's docs/config-reference.qmd and examples/llama-3/*.yml.
"""

from __future__ import annotations

from typing import Any

from service.agent.paste.reading import NOT_UNDERSTOOD, VALUE_NOT_UNDERSTOOD, Reading
from service.agent.paste.tables import COMMON_SKIP, SKIP, To, fact
from service.agent.paste.values import (
    as_bool,
    as_float,
    as_int,
    as_optimizer,
    as_targets,
    stage_from_name,
)


def deepspeed_file(reading: Reading, key: str, value: Any) -> None:
    """A DeepSpeed config named by path (ds_z3_offload_config.json, zero3_bf16.json): its stage and offload."""
    if isinstance(value, str) and value.strip().startswith("{"):  # `--deepspeed '{"zero_optimization": ...}'`
        import json

        value = json.loads(value)
    if isinstance(value, dict):
        from service.agent.paste.json_configs import read_deepspeed_dict

        read_deepspeed_dict(reading, value, prefix=f"{key}.")
        return
    stage = stage_from_name(value)
    reading.use(key, "zero_stage", stage)
    if "offload" in str(value).lower():
        reading.use(key, "offload_optimizer", "cpu")
        if stage == 3:
            reading.use(key, "offload_params", "cpu")
    reading.assume("deepspeed_from_file_name", file=str(value))
    reading.facts["deepspeed"] = True


def _attention(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text in ("fa2", "flash_attention_2", "flash_attention_3", "sdpa", "auto", "true", "flash", "xformers"):
        reading.use(key, "attention", "flash")
    elif text in ("eager", "disabled", "false"):
        reading.use(key, "attention", "eager")
    else:
        raise ValueError(text)


_attention.takes_auto = True  # type: ignore[attr-defined]  # flash_attn: auto = SDPA/FA2 when installed


def _no_checkpointing(reading: Reading, key: str, value: Any) -> None:
    reading.use(key, "gradient_checkpointing", not as_bool(value))


def _fused_loss(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "cross_entropy", "fused_linear")
    else:
        reading.ignore(key, "no_memory_effect")


def _quantization_bit(reading: Reading, key: str, value: Any) -> None:
    bits = as_int(value)
    if bits not in (4, 8):
        raise ValueError(bits)
    reading.use(key, "weight_dtype", "nf4" if bits == 4 else "int8")
    reading.facts["quantized"] = bits


LLAMAFACTORY: dict[str, Any] = {
    **COMMON_SKIP,
    "model_name_or_path": To("model", str),
    "finetuning_type": fact("finetuning"),
    "stage": fact("stage"),
    "lora_rank": To("lora_rank", as_int),
    "lora_target": To("lora_targets", as_targets),
    "lora_alpha": To("lora_alpha", as_float),
    "lora_dropout": To("lora_dropout", as_float),
    "use_dora": To("dora", as_bool),
    "cutoff_len": To("seq_len", as_int),
    "per_device_train_batch_size": To("batch_size", as_int),
    "gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "learning_rate": To("learning_rate", as_float),
    "num_train_epochs": To("epochs", as_float),
    "bf16": fact("bf16", as_bool),
    "fp16": fact("fp16", as_bool),
    "pure_bf16": fact("pure_bf16", as_bool),
    "quantization_bit": _quantization_bit,
    "quantization_method": To("quant_method", lambda v: {"bitsandbytes": "bnb"}.get(str(v), str(v))),
    "deepspeed": deepspeed_file,
    "flash_attn": _attention,
    "disable_gradient_checkpointing": _no_checkpointing,
    "optim": To("optimizer", as_optimizer),
    "enable_liger_kernel": _fused_loss,
    "packing": To("packing", as_bool),
    "neat_packing": To("packing", as_bool),
    "freeze_trainable_layers": To("trainable_layers", as_int),
    # PPO: LLaMA-Factory's reward_model is by default a LoRA adapter on the policy's base (reward_model_type
    # lora, hparams/finetuning_args.py); the estimator counts a separate reward model of the policy's size
    "reward_model": lambda reading, key, value: reading.ignore(key, NOT_UNDERSTOOD),
    "reward_model_type": lambda reading, key, value: reading.ignore(key, NOT_UNDERSTOOD),
    "max_new_tokens": To("max_new_tokens", as_int),
    "top_k": SKIP,
    "max_steps": SKIP,
    "warmup_steps": To("warmup_steps", as_int),
}

LLAMAFACTORY_LORA_RANK = 8  # src/llamafactory/hparams/finetuning_args.py LoraArguments.lora_rank default
# LLaMA-Factory's stage -> the estimator's RL task (src/llamafactory/train/tuner.py run_exp)
_STAGE_TASKS = {"dpo": "dpo", "kto": "dpo", "ppo": "ppo"}
_FINETUNING_TASKS = {"lora": "lora", "full": "full_finetune", "freeze": "freeze", "oft": "lora"}


def finish_llamafactory(reading: Reading) -> None:
    facts = reading.facts
    keys = facts.get("fact_keys", {})
    # FinetuningArguments: finetuning_type defaults to "lora", stage to "sft" (hparams/finetuning_args.py)
    finetuning = facts.get("finetuning", "lora")
    stage = str(facts.get("stage", "sft"))
    task = _STAGE_TASKS.get(stage) or _FINETUNING_TASKS.get(finetuning)
    if task is None:
        reading.ignore(keys.get("finetuning", "finetuning_type"), VALUE_NOT_UNDERSTOOD)
        return
    if task == "lora" and facts.get("quantized") == 4:
        task = "qlora"
    if "weight_dtype" not in reading.fields and not facts.get("quantized"):
        from service.agent.paste.serving_flags import quant_from_name

        quant_from_name(reading)  # an AWQ/GPTQ checkpoint by its name: LoRA over that quantized base
    for name in ("stage", "finetuning"):
        if name in keys:
            reading.used[keys[name]] = "task"
    if "finetuning" not in keys:
        reading.assume("llamafactory_default_lora")
    if finetuning in ("lora", "oft") and "lora_rank" not in reading.fields:
        # FinetuningArguments.lora_rank defaults to 8 (also for LoRA PPO/DPO, which need it to be LoRA jobs)
        reading.fields["lora_rank"] = LLAMAFACTORY_LORA_RANK
        reading.assume("llamafactory_default_rank", rank=LLAMAFACTORY_LORA_RANK)
    reading.fields["task"] = task
    if "gradient_checkpointing" not in reading.fields:
        # model_args.disable_gradient_checkpointing defaults to False: LLaMA-Factory turns it on
        reading.fields["gradient_checkpointing"] = True
        reading.assume("llamafactory_checkpointing_on")
    _precision(reading, task, facts, keys)


def _precision(reading: Reading, task: str, facts: dict[str, Any], keys: dict[str, str]) -> None:
    half = "bf16" if facts.get("bf16") or facts.get("pure_bf16") else "fp16" if facts.get("fp16") else None
    key = keys.get("pure_bf16") or keys.get("bf16") or keys.get("fp16")
    if half is None or key is None:
        return
    adapters = facts.get("finetuning", "lora") in ("lora", "oft")  # LoRA SFT, and LoRA PPO/DPO too
    if task in ("lora", "qlora") or adapters or facts.get("quantized"):
        if "weight_dtype" not in reading.fields:
            reading.use(key, "weight_dtype", half)  # the frozen base in the compute dtype
        else:
            reading.ignore(key, "compute_dtype")  # a quantized base: bf16/fp16 is what it computes in
        return
    if facts.get("pure_bf16"):
        reading.use(key, "precision_recipe", "bf16")
    elif facts.get("deepspeed"):
        reading.use(key, "precision_recipe", "mixed")  # DeepSpeed: 16-bit weights + fp32 master copy
    else:
        # full/freeze without pure_bf16: trainable parameters are cast to fp32 and the step autocasts
        # (src/llamafactory/model/adapter.py, _setup_full_tuning / cast_trainable_params_to_fp32)
        reading.use(key, "precision_recipe", "amp")


def _axolotl_precision(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text == "auto" or as_bool(value):
        reading.facts["half"] = "bf16" if key == "bf16" else "fp16"
        reading.facts.setdefault("fact_keys", {})["half"] = key
    else:
        reading.ignore(key, "no_memory_effect")


_axolotl_precision.takes_auto = True  # type: ignore[attr-defined]  # bf16: auto = bf16 where the card has it


def _axolotl_fsdp(reading: Reading, key: str, value: Any) -> None:
    text = " ".join(value) if isinstance(value, list) else str(value)
    if "full_shard" in text.lower() or (key.endswith("reshard_after_forward") and as_bool(value)):
        reading.use(key, "zero_stage", 3)
    elif "shard_grad_op" in text.lower():
        reading.use(key, "zero_stage", 2)
    else:
        raise ValueError(text)


def _offload_both(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "offload_params", "cpu")
        reading.use(key, "offload_optimizer", "cpu")
    else:
        reading.ignore(key, "no_memory_effect")


def _all_linear(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "lora_targets", ["all-linear"])
    else:
        reading.ignore(key, "no_memory_effect")


AXOLOTL: dict[str, Any] = {
    **COMMON_SKIP,
    "base_model": To("model", str),
    "base_model_config": SKIP,
    "model_type": SKIP,
    "tokenizer_type": SKIP,
    "adapter": fact("adapter"),
    "lora_model_dir": SKIP,
    "load_in_4bit": fact("load_in_4bit", as_bool),
    "load_in_8bit": fact("load_in_8bit", as_bool),
    "sequence_len": To("seq_len", as_int),
    "micro_batch_size": To("batch_size", as_int),
    "gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "num_epochs": To("epochs", as_float),
    "learning_rate": To("learning_rate", as_float),
    "warmup_steps": To("warmup_steps", as_int),
    "optimizer": To("optimizer", as_optimizer),
    "lora_r": To("lora_rank", as_int),
    "lora_alpha": To("lora_alpha", as_float),
    "lora_dropout": To("lora_dropout", as_float),
    "lora_target_modules": To("lora_targets", as_targets),
    "lora_target_linear": _all_linear,
    "peft_use_dora": To("dora", as_bool),
    "bf16": _axolotl_precision,
    "fp16": _axolotl_precision,
    "gradient_checkpointing": To("gradient_checkpointing", as_bool),
    "flash_attention": _attention,
    "sdp_attention": _attention,
    "attn_implementation": _attention,
    "sample_packing": To("packing", as_bool),
    "eval_sample_packing": SKIP,
    "pad_to_sequence_len": SKIP,
    "deepspeed": deepspeed_file,
    "fsdp": _axolotl_fsdp,
    "fsdp_config.reshard_after_forward": _axolotl_fsdp,
    "fsdp_config.fsdp_sharding_strategy": _axolotl_fsdp,
    "fsdp_config.offload_params": _offload_both,
    "fsdp_config.fsdp_offload_params": _offload_both,
    "fsdp_config.fsdp_version": SKIP,
    "fsdp_version": SKIP,
    "fsdp_config.auto_wrap_policy": SKIP,
    "fsdp_config.transformer_layer_cls_to_wrap": SKIP,
    "fsdp_config.state_dict_type": SKIP,
    "fsdp_config.cpu_ram_efficient_loading": SKIP,
    "fsdp_config.activation_checkpointing": To("gradient_checkpointing", as_bool),
    "rl": fact("rl"),
    "liger_fused_linear_cross_entropy": _fused_loss,
    "cut_cross_entropy": _fused_loss,
    "plugins": SKIP,
    "tensor_parallel_size": To("tp", as_int),
    "context_parallel_size": To("cp", as_int),
    "strict": SKIP,
    "train_on_inputs": SKIP,
    "group_by_length": SKIP,
    "early_stopping_patience": SKIP,
    "local_rank": SKIP,
    "logging_steps": SKIP,
    "xformers_attention": _attention,
    "fsdp_config.*": SKIP,  # wrap policy, state-dict type, module-state sync: no effect on the peak
    "attention": _attention,  # newer axolotl: `attention: flash | sdpa | eager`
    "special_tokens.*": SKIP,
    "gradient_checkpointing_kwargs.*": SKIP,
    "chat_template_jinja": SKIP,
    "hub_model_id": SKIP,
}

_AXOLOTL_RL = {"dpo": "dpo", "ipo": "dpo", "kto": "dpo", "simpo": "dpo", "grpo": "grpo"}


def finish_axolotl(reading: Reading) -> None:
    facts = reading.facts
    keys = facts.get("fact_keys", {})
    adapter = str(facts.get("adapter") or "").lower()
    four_bit = bool(facts.get("load_in_4bit"))
    if adapter == "qlora" or (adapter == "lora" and four_bit):
        task = "qlora"
        reading.fields["weight_dtype"] = "nf4"
        reading.used[keys.get("load_in_4bit", keys.get("adapter", "adapter"))] = "weight_dtype"
    elif adapter == "lora":
        task = "lora"
        if facts.get("load_in_8bit"):
            reading.use(keys["load_in_8bit"], "weight_dtype", "int8")
    elif adapter:
        reading.ignore(keys["adapter"], VALUE_NOT_UNDERSTOOD)
        task = "lora"
    else:
        task = "full_finetune"
    rl = str(facts.get("rl") or "").lower()
    if rl:
        if rl in _AXOLOTL_RL:
            task = _AXOLOTL_RL[rl]
            reading.used[keys["rl"]] = "task"
        else:
            reading.ignore(keys["rl"], VALUE_NOT_UNDERSTOOD)
    if "adapter" in keys:
        reading.used[keys["adapter"]] = "task"
    reading.fields["task"] = task
    half = facts.get("half")
    if half and "weight_dtype" in reading.fields:
        reading.ignore(keys["half"], "compute_dtype")
    elif half:
        # axolotl loads the model in the compute dtype (bf16: auto = bf16 on cards that have it)
        reading.use(keys["half"], "weight_dtype", half)
        if task == "full_finetune" and "zero_stage" not in reading.fields:
            reading.use(keys["half"], "precision_recipe", "bf16")
            reading.assume("axolotl_full_half")
