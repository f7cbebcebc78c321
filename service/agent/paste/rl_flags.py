"""RL and preference training command lines: TRL scripts (SFT/DPO/GRPO), OpenRLHF and verl overrides.

Names: trl/trainer/grpo_config.py, dpo_config.py, sft_config.py (TRL); openrlhf/cli/train_ppo_ray.py,
train_dpo.py, train_sft.py (OpenRLHF); verl/trainer/config/ppo_trainer.yaml and
examples/grpo_trainer/run_qwen2-7b.sh (verl).
"""

from __future__ import annotations

from typing import Any

from service.agent.paste.hf_args import HF_TRAINER, finish_hf
from service.agent.paste.reading import NOT_UNDERSTOOD, Reading
from service.agent.paste.tables import SKIP, To, fact
from service.agent.paste.values import as_bool, as_float, as_int


def _offload(field: str) -> Any:
    def handler(reading: Reading, key: str, value: Any) -> None:
        if as_bool(value):
            reading.use(key, field, "cpu" if field.startswith("offload") else True)
        else:
            reading.ignore(key, "no_memory_effect")

    return handler


def _flag_true(field: str, setting: Any) -> Any:
    def handler(reading: Reading, key: str, value: Any) -> None:
        if as_bool(value):
            reading.use(key, field, setting)
        else:
            reading.ignore(key, "no_memory_effect")

    return handler


def _not_modelled(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, NOT_UNDERSTOOD)


TRL: dict[str, Any] = {
    **HF_TRAINER,
    "num_generations": To("num_generations", as_int),
    "max_prompt_length": fact("prompt", as_int),
    "max_completion_length": fact("completion", as_int),
    "use_vllm": fact("use_vllm", as_bool),
    "vllm_mode": fact("vllm_mode"),
    "vllm_gpu_memory_utilization": To("gpu_memory_utilization", as_float),
    "vllm_tensor_parallel_size": _not_modelled,
    "beta": SKIP,
    "loss_type": SKIP,
    "model_name": To("model", str),
}


def finish_rollout_lengths(reading: Reading) -> None:
    """Prompt + completion lengths -> seq_len (the longest sequence) and max_new_tokens."""
    facts = reading.facts
    keys = facts.get("fact_keys", {})
    prompt, completion = facts.get("prompt"), facts.get("completion")
    if completion is not None:
        reading.use(keys["completion"], "max_new_tokens", completion)
    if prompt is not None and completion is not None and "seq_len" not in reading.fields:
        reading.fields["seq_len"] = prompt + completion
        reading.used[keys["prompt"]] = "seq_len"
        reading.used[keys["completion"]] = "max_new_tokens, seq_len"
        reading.assume("seq_from_prompt_and_completion", prompt=prompt, completion=completion)
    elif prompt is not None:
        reading.ignore(keys["prompt"], NOT_UNDERSTOOD)


def finish_trl(reading: Reading, command: str) -> None:
    task = {"dpo": "dpo", "grpo": "grpo", "rloo": "grpo"}.get(command)
    finish_hf(reading, task)
    finish_rollout_lengths(reading)
    facts = reading.facts
    keys = facts.get("fact_keys", {})
    if "use_vllm" in facts:
        reading.used[keys["use_vllm"]] = "engine" if facts["use_vllm"] else "-"
        if facts["use_vllm"]:
            mode = facts.get("vllm_mode", "colocate")  # TRL: vllm_mode defaults to "colocate"
            if "vllm_mode" in keys:
                reading.used[keys["vllm_mode"]] = "engine"
            reading.assume("trl_vllm_" + ("server" if mode == "server" else "colocate"))


OPENRLHF: dict[str, Any] = {
    "pretrain": To("model", str),
    "reward_pretrain": To("reward_model", str),
    "critic_pretrain": To("critic_model", str),
    "micro_train_batch_size": To("batch_size", as_int),
    "micro_rollout_batch_size": To("rollout_batch_size", as_int),
    "n_samples_per_prompt": To("num_generations", as_int),
    "prompt_max_len": fact("prompt", as_int),
    "generate_max_len": fact("completion", as_int),
    "max_len": To("seq_len", as_int),
    "zero_stage": To("zero_stage", as_int),
    "bf16": _flag_true("precision_recipe", "mixed"),
    "gradient_checkpointing": To("gradient_checkpointing", as_bool),
    "flash_attn": _flag_true("attention", "flash"),
    "adam_offload": _offload("offload_optimizer"),
    "ref_reward_offload": _offload("reference_offload"),
    "lora_rank": To("lora_rank", as_int),
    "lora_alpha": To("lora_alpha", as_float),
    "target_modules": To("lora_targets", lambda v: ["all-linear"] if "all" in str(v) else str(v).split(",")),
    "load_in_4bit": _flag_true("weight_dtype", "nf4"),
    "vllm_gpu_memory_utilization": To("gpu_memory_utilization", as_float),
    "actor_num_gpus_per_node": To("num_gpus", as_int),
    "advantage_estimator": fact("estimator"),
    "train_batch_size": To("global_batch_size", as_int),
    "rollout_batch_size": SKIP,
    "learning_rate": To("learning_rate", as_float),
    "actor_learning_rate": To("learning_rate", as_float),
    "max_epochs": To("epochs", as_float),
    "vllm_num_engines": _not_modelled,
    "vllm_tensor_parallel_size": _not_modelled,
    "colocate_all_models": _not_modelled,
    "packing_samples": To("packing", as_bool),
    "enforce_eager": _not_modelled,
    "vllm_enable_sleep": _not_modelled,
    "vllm_sync_backend": SKIP,
    "save_hf_ckpt": SKIP,
    "gamma": SKIP,
    "use_kl_estimator_k3": SKIP,
    **{
        name: SKIP
        for name in (
            "save_path",
            "ckpt_path",
            "logging_steps",
            "eval_steps",
            "save_steps",
            "micro_batch_size",
            "prompt_data",
            "dataset",
            "input_key",
            "apply_chat_template",
            "init_kl_coef",
            "use_kl_loss",
            "kl_estimator",
            "use_wandb",
            "beta",
            "max_samples",
            "normalize_reward",
            "ref_num_nodes",
            "ref_num_gpus_per_node",
            "reward_num_nodes",
            "reward_num_gpus_per_node",
            "critic_num_nodes",
            "critic_num_gpus_per_node",
            "actor_num_nodes",
            "critic_learning_rate",
            "temperature",
            "seed",
        )
    },
}


def finish_openrlhf(reading: Reading, module: str) -> None:
    estimator = str(reading.facts.get("estimator", "gae")).lower()
    keys = reading.facts.get("fact_keys", {})
    if "train_dpo" in module:
        task = "dpo"
    elif "train_sft" in module:
        task = "lora" if "lora_rank" in reading.fields else "full_finetune"
    elif estimator in ("group_norm", "grpo", "reinforce_baseline", "rloo", "dr_grpo"):
        task = "grpo"  # no critic: OpenRLHF's group-normalised advantage is GRPO
    else:
        task = "ppo"
    if "estimator" in keys:
        reading.used[keys["estimator"]] = "task"
    reading.fields["task"] = task
    finish_rollout_lengths(reading)


VERL: dict[str, Any] = {
    "actor_rollout_ref.model.path": To("model", str),
    "algorithm.adv_estimator": fact("estimator"),
    "data.max_prompt_length": fact("prompt", as_int),
    "data.max_response_length": fact("completion", as_int),
    "data.train_batch_size": To("global_batch_size", as_int),
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": To("batch_size", as_int),
    "actor_rollout_ref.rollout.n": To("num_generations", as_int),
    "actor_rollout_ref.rollout.gpu_memory_utilization": To("gpu_memory_utilization", as_float),
    "actor_rollout_ref.rollout.tensor_model_parallel_size": _not_modelled,
    "actor_rollout_ref.model.enable_gradient_checkpointing": To("gradient_checkpointing", as_bool),
    "actor_rollout_ref.actor.fsdp_config.param_offload": _offload("offload_params"),
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": _offload("offload_optimizer"),
    "actor_rollout_ref.ref.fsdp_config.param_offload": _offload("reference_offload"),
    "actor_rollout_ref.model.lora_rank": To("lora_rank", as_int),
    "actor_rollout_ref.model.lora_alpha": To("lora_alpha", as_float),
    "actor_rollout_ref.model.target_modules": To(
        "lora_targets", lambda v: ["all-linear"] if "all" in str(v) else str(v).strip("[]").split(",")
    ),
    "actor_rollout_ref.actor.optim.lr": To("learning_rate", as_float),
    "critic.model.path": To("critic_model", str),
    "reward_model.model.path": To("reward_model", str),
    "trainer.n_gpus_per_node": fact("gpus_per_node", as_int),
    "trainer.nnodes": fact("nodes", as_int),
    "trainer.total_epochs": To("epochs", as_float),
    "actor_rollout_ref.rollout.name": SKIP,
    "actor_rollout_ref.model.use_remove_padding": SKIP,
    "actor_rollout_ref.actor.ppo_mini_batch_size": SKIP,
    "actor_rollout_ref.actor.ppo_micro_batch_size": _not_modelled,  # global, not per GPU (older verl)
    "trainer.*": SKIP,
    "data.train_files": SKIP,
    "data.val_files": SKIP,
    "algorithm.use_kl_in_reward": SKIP,
    "algorithm.kl_ctrl.*": SKIP,
}


def finish_verl(reading: Reading) -> None:
    facts = reading.facts
    keys = facts.get("fact_keys", {})
    estimator = str(facts.get("estimator", "gae")).lower()
    reading.fields["task"] = "ppo" if estimator == "gae" else "grpo"  # only GAE trains a critic
    if "estimator" in keys:
        reading.used[keys["estimator"]] = "task"
    else:
        reading.assume("verl_default_gae")
    if "gpus_per_node" in facts:
        gpus = facts["gpus_per_node"] * facts.get("nodes", 1)
        reading.fields["num_gpus"] = gpus
        reading.used[keys["gpus_per_node"]] = "num_gpus"
        if "nodes" in keys:
            reading.used[keys["nodes"]] = "num_gpus"
    if "lora_rank" in reading.fields and reading.fields["lora_rank"] == 0:
        del reading.fields["lora_rank"]
        reading.used.pop("actor_rollout_ref.model.lora_rank", None)
        reading.ignore("actor_rollout_ref.model.lora_rank", "no_memory_effect")
    reading.fields.setdefault("zero_stage", 3)  # verl's actor and reference are FSDP, fully sharded
    reading.assume("verl_fsdp")
    finish_rollout_lengths(reading)
