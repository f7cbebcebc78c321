"""Follow-ups: merge what a new question states into the previous question's stated scenario.

"what about with LoRA?", "那如果用两张卡呢?", "and at 32k context?", "换成4090呢", "batch 16?" change
one or two fields of the previous scenario. A question that names a model and is not phrased as a
follow-up starts over. Only stated fields are kept (never the estimator's defaults), so defaults
that depend on the task (QLoRA -> NF4 weights) are chosen again for the new scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.agent.offline.parser import ParsedQuestion
from service.agent.offline.rl_fields import TRL_PROMPT_LEN
from service.agent.offline.task_fields import RL_LORA_DEFAULT_RANK
from tools.scenario import ADAPTER_TASKS, RL_TASKS, TRAINING_TASKS, Scenario


@dataclass(frozen=True)
class TaskSwitch:
    """Fields that stop making sense when the task changes from one group to another."""

    applies_to_new: frozenset[str]
    drop: tuple[str, ...]
    keep_if: frozenset[str] = frozenset()  # old tasks for which the fields stay

    def dropped(self, old_task: str | None, new_task: str) -> tuple[str, ...]:
        if new_task in self.applies_to_new and old_task not in self.keep_if:
            return self.drop
        return ()


# QLoRA's 4-bit base and LoRA's adapters do not carry over to a task without them; training
# settings do not carry over to inference, nor serving settings to training.
TASK_SWITCHES: tuple[TaskSwitch, ...] = (
    TaskSwitch(
        applies_to_new=frozenset(TRAINING_TASKS - ADAPTER_TASKS) | {"inference"},
        drop=("lora_rank", "lora_targets", "dora", "lora_alpha", "lora_dropout"),
    ),
    TaskSwitch(
        applies_to_new=frozenset(TRAINING_TASKS - {"qlora"}) | {"inference"},
        drop=("weight_dtype", "quant_method", "double_quant", "quant_group_size"),
        keep_if=frozenset(TRAINING_TASKS - {"qlora"}) | {"inference"},
    ),
    TaskSwitch(
        applies_to_new=frozenset({"qlora"}),
        drop=("weight_dtype", "quant_method"),
    ),
    TaskSwitch(
        applies_to_new=frozenset({"inference"}),
        drop=(
            "optimizer",
            "precision_recipe",
            "gradient_checkpointing",
            "recompute",
            "zero_stage",
            "offload_optimizer",
            "epochs",
            "gradient_accumulation_steps",
            "learning_rate",
            "warmup_steps",
            "global_batch_size",
            "trainable_layers",
            "num_generations",
        ),
    ),
    TaskSwitch(
        applies_to_new=TRAINING_TASKS,
        drop=("kv_dtype", "max_new_tokens", "gpu_memory_utilization"),
        keep_if=TRAINING_TASKS,
    ),
)


def rl_with_adapters(previous: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """ "改成 LoRA r=64", "what about QLoRA?" inside a GRPO/PPO/DPO conversation: the RL job with a LoRA (QLoRA: NF4
    base) policy, not plain LoRA fine-tuning (tools/rl.py: lora_rank set = adapters on the trained models); "改成全参"
    there is the RL job without adapters (drops them from `previous`, the merged scenario so far)."""
    old_task = previous.get("task")
    if old_task not in RL_TASKS:
        return new
    if new.get("task") == "full_finetune":
        # "改成全参", "full fine-tune instead": the RL job with a full (adapter-free) policy
        new["task"] = old_task
        for key in ("lora_rank", "lora_targets", "dora", "lora_alpha", "lora_dropout"):
            previous.pop(key, None)
        if previous.get("weight_dtype") == "nf4":
            previous.pop("weight_dtype")
        return new
    if new.get("task") not in ADAPTER_TASKS:
        return new
    if new["task"] == "qlora":
        new.setdefault("weight_dtype", "nf4")  # QLoRA's 4-bit base is NF4 (Dettmers et al. 2023)
    new["task"] = old_task
    if "lora_rank" not in previous:
        new.setdefault("lora_rank", RL_LORA_DEFAULT_RANK)  # PEFT LoraConfig default r=8
    return new


def rl_completion(previous: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """ "max_completion_length 2048?", "回复长度改成 4096" in an RL conversation: the prompt stays what it was (the
    previous seq_len - max_new_tokens, else TRL's default 512), so seq_len = prompt + the new completion."""
    task = new.get("task", previous.get("task"))
    if task not in RL_TASKS or "max_new_tokens" not in new or "seq_len" in new:
        return new
    seq, completion = previous.get("seq_len"), previous.get("max_new_tokens")
    prompt = seq - completion if seq and completion and seq > completion else TRL_PROMPT_LEN
    return {**new, "seq_len": prompt + new["max_new_tokens"]}


def stated_of(scenario: Scenario | None) -> dict[str, Any]:
    return scenario.stated() if scenario is not None else {}


def is_followup(parsed: ParsedQuestion, previous: Scenario | None) -> bool:
    """Modify the previous scenario, or start over?"""
    if previous is None or parsed.intent != "estimate":
        return False
    if "model" not in parsed.scenario:
        return True  # no subject of its own: it can only be about the previous question
    return parsed.followup  # "what about Llama-3-70B?", "换成Qwen2.5-14B呢"


def merge_followup(previous: Scenario | None, parsed: ParsedQuestion) -> dict[str, Any]:
    """The stated fields of the scenario to estimate now.

    `parsed` needs only `.intent`, `.scenario` (stated fields) and `.followup` (the LLM agent passes
    its tool arguments this way, so both brains share one set of follow-up rules).
    """
    if not is_followup(parsed, previous):
        return dict(parsed.scenario)
    merged = stated_of(previous)
    new = rl_completion(merged, rl_with_adapters(merged, dict(parsed.scenario)))
    new_task = new.get("task")
    if new_task and new_task != merged.get("task"):
        old_task = merged.get("task")
        for switch in TASK_SWITCHES:
            for field in switch.dropped(old_task, new_task):
                if field not in new:
                    merged.pop(field, None)
    if "model" in new and new["model"] != merged.get("model"):
        merged.pop("params", None)
        merged.pop("architecture", None)
    merged.update(new)  # "换成4090呢" keeps the number of cards; "两张卡呢" keeps the card
    return merged
