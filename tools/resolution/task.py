"""The task and the trained model's trainable set.

Defaults: task `lora` when a LoRA rank/targets is given, `freeze` with trainable_layers, else
`inference`. lora_rank 8, lora_targets q_proj,v_proj (PEFT LoraConfig defaults and
TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for Llama-family models); trainable_layers 2
(LLaMA-Factory freeze_trainable_layers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.model.lora import freeze_trainable, full_trainable, linear_names, lora_spec
from tools.resolution.checks import check_fine_tuning_settings, check_trainable_layers
from tools.resolution.defaults import Filled
from tools.rules.optimizers import TrainableSpec
from tools.scenario import ADAPTER_TASKS, RL_TASKS

if TYPE_CHECKING:
    from tools.model.architecture import Architecture, ParamBreakdown
    from tools.scenario import Scenario

PEFT_DEFAULT_TARGETS: dict[str, list[str]] = {  # peft/utils/constants.py (by HF module naming)
    "llama": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "deepseek": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"],
    "falcon": ["query_key_value"],
    "phi3": ["qkv_proj"],
    "chatglm": ["query_key_value"],
    "glm": ["q_proj", "v_proj"],
    "internlm2": ["wqkv"],
    "baichuan": ["W_pack"],
}


def uses_adapters(task: str, sc: Scenario) -> bool:
    """LoRA-style training: lora/qlora, or an RL task given a LoRA rank."""
    return task in ADAPTER_TASKS or (task in RL_TASKS and sc.lora_rank is not None)


def choose_task(sc: Scenario, f: Filled) -> str:
    if sc.task is not None:
        return sc.task
    if sc.lora_rank is not None or sc.lora_targets:
        return f.fill("task", "lora", "task.lora_settings")
    if sc.trainable_layers is not None:
        return f.fill("task", "freeze", "task.freeze_settings")
    return f.fill("task", "inference", "task.no_training")


def trainable_set(
    sc: Scenario, task: str, pb: ParamBreakdown, arch: Architecture, f: Filled
) -> TrainableSpec | None:
    """The trained model's trainable tensors (None for inference)."""
    adapter_task = uses_adapters(task, sc)
    check_fine_tuning_settings(sc, task, adapter_task)
    if task == "inference":
        return None
    if adapter_task:
        return _adapters(sc, pb, arch, f)
    if task == "freeze":
        n = sc.trainable_layers
        if n is None:
            n = f.fill("trainable_layers", 2, "trainable_layers.default", layers=2)
        check_trainable_layers(n, pb)
        return freeze_trainable(pb, n)
    return full_trainable(pb, arch.hidden_size)


def _adapters(sc: Scenario, pb: ParamBreakdown, arch: Architecture, f: Filled) -> TrainableSpec:
    rank = sc.lora_rank or f.fill("lora_rank", 8, "lora_rank.default", rank=8)
    targets = sc.lora_targets
    if not targets:
        names = linear_names(pb)
        default = [n for n in PEFT_DEFAULT_TARGETS.get(arch.module_names, ["q_proj", "v_proj"]) if n in names]
        targets = f.fill("lora_targets", default or ["all-linear"], "lora_targets.default")
    return lora_spec(pb, rank, targets, sc.dora)
