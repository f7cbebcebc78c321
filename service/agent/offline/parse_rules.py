"""The parser's readings of a question, as an ordered list of named rules over one `Reading`.

`read_fields` runs `RULES` in order; each rule reads the normalised question and sets Scenario fields (and, where
the parser chose a value itself, a `FilledReason` the answer shows as an assumption). Order matters: the stated
fields first, then the subject (model, GPU, count), then the rules that settle the task from what was read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.agent.offline import patterns as rx
from service.agent.offline.fields import (
    FULL_MENTION,
    LORA_MENTION,
    QLORA_MENTION,
    RL_LORA_DEFAULT_RANK,
    RL_TASKS,
    implies_training,
    shape_overrides,
    stated_fields,
)
from service.agent.offline.gpu_counts import over_nodes
from service.agent.offline.mentions import (
    FilledReason,
    L,
    R,
    find_bare_size,
    find_card_memory,
    find_gpu,
    find_model,
)
from service.agent.offline.model_names import settle_model
from service.agent.offline.rl_fields import apply_rl_lengths, rl_lengths

_OLLAMA = rx.compile(rf"{L}ollama{R}")
_PROMPT_TUNING = rx.compile(
    rf"{L}(?:p[\s_\-]*tuning(?:[\s_\-]*v2)?|ptuning(?:v2)?|prefix[\s_\-]*tuning|prompt[\s_\-]*tuning){R}"
)
_ACTIVE_SIZE = rx.compile(rf"{L}a\d+(?:\.\d+)?b{R}")  # "A3B": the active size of an MoE, not its size
_COLAB = rx.compile(rf"{L}colab{R}")


@dataclass
class Reading:
    """One question being read: the text (as typed and normalised), the fields so far and the parser's reasons."""

    question: str
    low: str
    fields: dict[str, Any] = field(default_factory=dict)
    filled: dict[str, FilledReason] = field(default_factory=dict)


def stated(r: Reading) -> None:
    """Every field the words state; RL lengths first ("回复长度 4096" is the completion, not the context)."""
    lengths, rest = rl_lengths(r.low)
    r.fields.update(stated_fields(rest))
    default = apply_rl_lengths(lengths, r.fields)
    if default:
        r.filled["seq_len"] = default


def subject(r: Reading) -> None:
    """The model (catalog id, Hub repo id, a size), the GPU (named, Colab's T4, a bare memory size), how many."""
    low, fields = r.low, r.fields
    model = find_model(low)
    if model:
        model = settle_model(
            model, r.question, low
        )  # catalog id, Hub repo id, or the size of an unknown name
    skip = [(model.start, model.end)] if model else []
    skip += [(m.start(), m.end()) for m in _ACTIVE_SIZE.finditer(low)]
    size = None if model else find_bare_size(low, skip)
    gpu = find_gpu(low)
    if model:
        fields["model"] = model.value
    elif size:
        fields["model"] = size.value
    card = None
    if gpu.gpu:
        fields["gpu"] = gpu.gpu
    elif _COLAB.search(low):
        fields["gpu"] = "t4"
    else:
        card = find_card_memory(low)
        if card:
            fields["gpu"] = card.value
    count, nodes = over_nodes(low, gpu.count)
    if count and "num_gpus" not in fields:
        fields["num_gpus"] = count
        if nodes:
            r.filled["num_gpus"] = nodes
    quantised_base(r)
    if model and model.reason:
        r.filled["model"] = model.reason
    if card and card.reason:
        r.filled["gpu"] = card.reason


def quantised_base(r: Reading) -> None:
    """QLoRA's "4-bit" is NF4 (Dettmers et al. 2023); LoRA on a 4-bit base is QLoRA."""
    fields = r.fields
    if fields.get("task") == "qlora" and fields.get("weight_dtype") == "int4":
        fields["weight_dtype"] = "nf4"
    if fields.get("task") in ("lora", "full_finetune", "freeze") and fields.get("weight_dtype") == "nf4":
        fields["task"] = "qlora"
    if fields.get("task") == "lora" and fields.get("weight_dtype") == "int4" and "quant_method" not in fields:
        fields["task"], fields["weight_dtype"] = "qlora", "nf4"


def four_bit_finetune(r: Reading) -> None:
    """ "fine-tune in 4bit" (unsloth, Colab notebooks): a 4-bit base is frozen and adapters train (QLoRA)."""
    fields = r.fields
    if (
        fields.get("task") == "full_finetune"
        and fields.get("weight_dtype") == "int4"
        and "quant_method" not in fields
        and not FULL_MENTION.search(r.low)
    ):
        fields["task"], fields["weight_dtype"] = "qlora", "nf4"
        r.filled["task"] = FilledReason(code="task_4bit_finetune")


def prompt_tuning(r: Reading) -> None:
    if "task" not in r.fields and _PROMPT_TUNING.search(r.low):
        r.fields["task"] = "lora"
        r.filled["task"] = FilledReason(code="task_prompt_tuning")


def rl_sampling(r: Reading) -> None:
    """ "生成16个回答", "generate 8 samples": RL sampling, not a serving job."""
    if r.fields.get("task") == "inference" and "num_generations" in r.fields:
        del r.fields["task"]


def training_words(r: Reading) -> None:
    """ "7B, Adam, TP=2, PP=2, DP=4: memory per GPU?": an optimizer or a data-parallel layout is training."""
    fields = r.fields
    if "task" not in fields and "model" in fields and implies_training(r.low, fields):
        fields["task"] = "full_finetune"
        r.filled["task"] = FilledReason(code="task_from_training_words")


def stated_shapes(r: Reading) -> None:
    """ "hidden 4096, 32 layers": the stated shapes laid over the named (or size-matched) model's config."""
    fields = r.fields
    shapes = shape_overrides(r.low)
    if not shapes or not ("model" in fields or {"hidden_size", "num_hidden_layers"} <= set(shapes)):
        return
    arch = _architecture(fields.get("model"), shapes)
    if arch is None:
        return
    fields["architecture"] = arch
    r.filled["architecture"] = FilledReason(
        code="architecture_from_shapes",
        values={"shapes": ", ".join(f"{k}={v}" for k, v in shapes.items()), "base": arch.pop("_base")},
    )
    fields.setdefault("model", str(r.filled["architecture"].values["base"]))


def ollama_default(r: Reading) -> None:
    """ollama library: default tags are 4-bit GGUF (Q4_K_M)."""
    if _OLLAMA.search(r.low) and "weight_dtype" not in r.fields:
        r.fields["weight_dtype"] = "q4_k_m"
        r.filled["weight_dtype"] = FilledReason(code="ollama_4bit")


def rl_lora_rank(r: Reading) -> None:
    """RL with LoRA named and no rank: PEFT LoraConfig's default r=8."""
    fields = r.fields
    if (
        fields.get("task") in RL_TASKS
        and "lora_rank" not in fields
        and (LORA_MENTION.search(r.low) or QLORA_MENTION.search(r.low))
    ):
        fields["lora_rank"] = RL_LORA_DEFAULT_RANK
        r.filled["lora_rank"] = FilledReason(
            code="rl_lora_rank", values={"method": str(fields["task"]).upper(), "rank": RL_LORA_DEFAULT_RANK}
        )


RULES: tuple[Callable[[Reading], None], ...] = (
    stated,
    subject,
    four_bit_finetune,
    prompt_tuning,
    rl_sampling,
    training_words,
    stated_shapes,
    ollama_default,
    rl_lora_rank,
)


def read_fields(question: str, low: str) -> Reading:
    """`RULES` in order over the (normalised) question."""
    reading = Reading(question=question, low=low)
    for rule in RULES:
        rule(reading)
    return reading


def _architecture(model: str | None, shapes: dict[str, int]) -> dict[str, Any] | None:
    """The stated shapes laid over the named (or size-matched) catalog model's config; "_base" names it."""
    from tools.catalog import resolve_model
    from tools.errors import ScenarioError

    base_name = model or "7b"
    try:
        resolved = resolve_model(base_name)
    except ScenarioError:
        return None
    arch = resolved.architecture.model_dump(exclude_defaults=True)
    if "num_attention_heads" in shapes and "num_key_value_heads" not in shapes:
        arch.pop("num_key_value_heads", None)  # heads stated, KV heads not: plain multi-head attention
    if "hidden_size" in shapes or "num_attention_heads" in shapes:
        arch.pop("head_dim", None)  # hidden / heads
    arch.update(shapes)
    arch["_base"] = resolved.spec.id if getattr(resolved, "spec", None) is not None else base_name
    return arch
