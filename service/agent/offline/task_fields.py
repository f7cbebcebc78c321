"""The task a question states: RL methods, QLoRA, LoRA, pre-training, freeze tuning, full fine-tuning, inference."""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import Fields, live, negated_any
from service.agent.offline.mentions import SEP, L, R
from tools.scenario import RL_TASKS

# --- task ------------------------------------------------------------------------------------------

QLORA_MENTION = rx.compile(
    rf"{L}q{SEP}lora{R}|{L}(?:4|four){SEP}bit{SEP}lora{R}|{L}lora{SEP}(?:on|with|\+)?\s*4{SEP}bit"
)
# an explicit full-parameter fine-tune (not the generic "fine-tune" / "微调")
FULL_MENTION = rx.compile(
    rf"{L}full{SEP}(?:parameter|param|fine|finetun|sft|train|ft{R})|全参|全量|全部参数|{L}fft{R}"
)
LORA_MENTION = rx.compile(rf"{L}(?:lora|dora|peft|adapters?){R}")
# RL with adapters: the estimator reads "lora_rank set" as LoRA on the trained model(s) (tools/resolve.py).
RL_LORA_DEFAULT_RANK = 8  # PEFT LoraConfig default r=8

# RL methods first: "DPO with LoRA" is DPO (with adapters), not plain LoRA fine-tuning.
_TASK_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # TRL's trainer and config classes name the method too: GRPOTrainer, PPOConfig, DPOTrainer
    ("ppo", rx.compile(rf"{L}(?:ppo|rlhf)(?:trainer|config)?{R}")),
    ("grpo", rx.compile(rf"{L}grpo(?:trainer|config)?{R}")),
    ("dpo", rx.compile(rf"{L}dpo(?:trainer|config)?{R}")),
    ("qlora", QLORA_MENTION),
    ("lora", LORA_MENTION),
    (
        "pretrain",
        rx.compile(rf"{L}pre{SEP}train(?:ing)?{R}|预训练|{L}from\s+scratch{R}|从头训练|从零训练|继续预训练"),
    ),
    ("freeze", rx.compile(rf"{L}freeze{SEP}tun|冻结|{L}(?:last|top)\s+\d+\s+layers{R}")),
    (
        "full_finetune",
        rx.compile(
            rf"{L}full{SEP}(?:parameter{SEP}|param{SEP})?(?:fine{SEP}tun|finetun|sft|train|ft{R}){R}?|全参|全量|全部参数"
            rf"|{L}fine{SEP}tun|{L}finetun|{L}sft{R}|微调|{L}train(?:ing)?{R}|训练|{L}fft{R}|{L}ft{R}"
        ),
    ),
    (
        "inference",
        rx.compile(
            rf"{L}(?:inference|infer|serv(?:e|ing)|deploy(?:ing|ment)?|vllm|sglang|tgi|generat(?:e|ion)|chat|run(?:ning)?|host)"
            rf"{R}|推理|部署|上线|跑|运行|服务|对话|生成|加载"
        ),
    ),
)


# "can I LoRA it or do I have to go QLoRA?": the first of two alternatives is what is asked
_ALTERNATIVE = rx.compile(rf"{L}or{R}|{L}instead{SEP}of{R}|还是|或者|或")


_TRAINING_WORD = rx.compile(r"微调|fine|tun|ft|sft|train|训练")
_LOAD_IN_BITS = rx.compile(rf"{L}load{SEP}in{SEP}(?:4|8){SEP}bit{R}")
_LOAD_IN_4BIT_OR_NF4 = rx.compile(rf"{L}load{SEP}in{SEP}4{SEP}bit{R}|{L}nf4{R}")
_DORA = rx.compile(rf"{L}dora{R}")


def task_fields(low: str) -> Fields:
    out: Fields = {}
    for task, pattern in _TASK_RULES:
        m = live(pattern, low)
        if m:
            out["task"] = task
            if task == "qlora":
                lora = live(LORA_MENTION, low)
                if lora and lora.start() < m.start() and _ALTERNATIVE.search(low, lora.end(), m.start()):
                    out["task"] = "lora"
            break
    if out.get("task") in ("lora", "qlora") and FULL_MENTION.search(low) and negated_any(LORA_MENTION, low):
        out["task"] = "full_finetune"
    if "task" not in out and negated_any(LORA_MENTION, low) and _TRAINING_WORD.search(low):
        out["task"] = "full_finetune"  # "no LoRA, fine-tune everything", "不要LoRA微调"
    if "task" not in out and _LOAD_IN_BITS.search(low):
        out["task"] = "inference"
    if out.get("task") == "lora" and _LOAD_IN_4BIT_OR_NF4.search(low):
        out["task"] = "qlora"
    if _DORA.search(low):
        out["dora"] = True
    if out.get("task") in RL_TASKS and QLORA_MENTION.search(low):
        out["weight_dtype"] = "nf4"
    return out
