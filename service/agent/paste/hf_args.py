"""HF `TrainingArguments` (and TRL's configs built on it): one table for its command-line flags, a Python
call's keyword arguments and a saved training_args.json.

Names: transformers/training_args.py (TrainingArguments), trl/trainer/{sft,dpo,grpo}_config.py.
"""

from __future__ import annotations

from typing import Any

from service.agent.paste.reading import Reading
from service.agent.paste.tables import COMMON_SKIP, SKIP, To
from service.agent.paste.training_yaml import deepspeed_file
from service.agent.paste.values import as_bool, as_float, as_int, as_optimizer


def _half(name: str) -> Any:
    def handler(reading: Reading, key: str, value: Any) -> None:
        if as_bool(value):
            reading.facts["half"] = name
            reading.facts.setdefault("fact_keys", {})["half"] = key
        else:
            reading.ignore(key, "no_memory_effect")

    return handler


def _fsdp(reading: Reading, key: str, value: Any) -> None:
    text = (" ".join(value) if isinstance(value, list) else str(value)).lower()
    if not text.strip() or text.strip() in ("false", "none", "[]"):
        reading.ignore(key, "no_memory_effect")
        return
    if "full_shard" in text or "hybrid_shard" in text:
        reading.use(key, "zero_stage", 3)
    elif "shard_grad_op" in text:
        reading.use(key, "zero_stage", 2)
    else:
        raise ValueError(text)
    if "offload" in text:
        reading.use(key, "offload_params", "cpu")
        reading.use(key, "offload_optimizer", "cpu")


def _peft(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.facts["peft"] = True
        reading.used[key] = "task"
    else:
        reading.ignore(key, "no_memory_effect")


def _quant_4bit(reading: Reading, key: str, value: Any) -> None:
    if as_bool(value):
        reading.use(key, "weight_dtype", "nf4")
        reading.facts["quantized"] = 4
    else:
        reading.ignore(key, "no_memory_effect")


HF_TRAINER: dict[str, Any] = {
    **COMMON_SKIP,
    "model_name_or_path": To("model", str),
    "per_device_train_batch_size": To("batch_size", as_int),
    "per_gpu_train_batch_size": To("batch_size", as_int),
    "gradient_accumulation_steps": To("gradient_accumulation_steps", as_int),
    "learning_rate": To("learning_rate", as_float),
    "num_train_epochs": To("epochs", as_float),
    "warmup_steps": To("warmup_steps", as_int),
    "max_steps": SKIP,
    "bf16": _half("bf16"),
    "fp16": _half("fp16"),
    "gradient_checkpointing": To("gradient_checkpointing", as_bool),
    "optim": To("optimizer", as_optimizer),
    "deepspeed": deepspeed_file,
    "fsdp": _fsdp,
    "max_seq_length": To("seq_len", as_int),
    "max_length": To("seq_len", as_int),
    "model_max_length": To("seq_len", as_int),
    "block_size": To("seq_len", as_int),  # examples/pytorch/language-modeling/run_clm.py: tokens per sample
    "packing": To("packing", as_bool),
    "use_liger_kernel": To("cross_entropy", lambda v: "fused_linear" if as_bool(v) else "standard"),
    "attn_implementation": To("attention", lambda v: "eager" if str(v).lower() == "eager" else "flash"),
    "torch_dtype": SKIP,
    "use_peft": _peft,
    "lora_r": To("lora_rank", as_int),
    "lora_alpha": To("lora_alpha", as_float),
    "lora_dropout": To("lora_dropout", as_float),
    "lora_target_modules": To(
        "lora_targets",
        lambda v: (
            ["all-linear"]
            if "all" in str(v).lower()
            else list(v)
            if isinstance(v, list)
            else str(v).split(",")
        ),
    ),
    "load_in_4bit": _quant_4bit,
    "per_device_eval_batch_size": SKIP,
    "gradient_checkpointing_kwargs.*": SKIP,
    "ddp_find_unused_parameters": SKIP,
    "push_to_hub": SKIP,
    "local_rank": SKIP,
    "log_level": SKIP,
    "disable_tqdm": SKIP,
}


TRL_LORA_RANK = 16  # trl/trainer/model_config.py ModelConfig.lora_r default


def finish_hf(reading: Reading, task: str | None = None) -> None:
    """The task (full fine-tuning unless LoRA/QLoRA flags say otherwise) and the precision recipe."""
    facts = reading.facts
    if task is None:
        if facts.get("peft") or "lora_rank" in reading.fields:
            task = "qlora" if facts.get("quantized") == 4 else "lora"
        else:
            task = "full_finetune"
            reading.assume("hf_full_finetune")
    elif task in ("full_finetune",) and (facts.get("peft") or "lora_rank" in reading.fields):
        task = "qlora" if facts.get("quantized") == 4 else "lora"
    reading.fields.setdefault("task", task)
    adapters = bool(facts.get("peft") or "lora_rank" in reading.fields)
    if facts.get("peft") and "lora_rank" not in reading.fields:
        reading.fields["lora_rank"] = TRL_LORA_RANK  # a LoRA PPO/DPO/GRPO needs its rank to be a LoRA job
        reading.assume("trl_default_rank", rank=TRL_LORA_RANK)
    half = facts.get("half")
    key = facts.get("fact_keys", {}).get("half")
    if not half or not key:
        return
    if reading.fields["task"] in ("lora", "qlora") or adapters:  # a frozen base in the 16-bit dtype
        if "weight_dtype" in reading.fields:
            reading.ignore(key, "compute_dtype")
        else:
            reading.use(key, "weight_dtype", half)
    elif facts.get("deepspeed") or ("zero_stage" in reading.fields and "fsdp" not in reading.used):
        reading.use(key, "precision_recipe", "mixed")  # DeepSpeed: 16-bit weights + fp32 master copy
    else:
        # from_pretrained loads fp32 weights unless torch_dtype says otherwise; bf16=True autocasts the step
        reading.use(key, "precision_recipe", "amp")
