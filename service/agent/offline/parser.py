"""Question -> ParsedQuestion: intent, the Scenario fields the user stated, concept topic, language.

Deterministic and pure. Only what the user said goes into `scenario`; the estimator fills
every default and lists it as an assumption.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, Field

from service.agent.events import Language
from service.agent.offline import patterns as rx
from service.agent.offline.asks import asked_figure
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
from service.agent.offline.kb import match_topic
from service.agent.offline.language import detect_language
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

_NO_EFFECT_KEYS = frozenset(
    {"epochs", "learning_rate", "gradient_accumulation_steps", "warmup_steps", "lora_alpha", "lora_dropout"}
)

Intent = Literal["estimate", "concept", "list_gpus", "list_models", "greeting", "unknown"]


class ParsedQuestion(BaseModel):
    question: str
    language: Language
    intent: Intent
    scenario: dict[str, Any] = Field(default_factory=dict)  # only the Scenario fields the user stated
    topic: str | None = None  # knowledge-base topic (answered when intent == "concept")
    model_mention: str | None = None  # the model as the user named it (normalised), if any
    followup: bool = False  # phrased as a change to the previous question ("what about...", "...呢")
    # field -> why the parser chose a value itself (an assumption): code + values, texts in prompts/<lang>/labels.toml
    filled: dict[str, FilledReason] = Field(default_factory=dict)
    # the figure the question asks for besides the verdict (service/agent/summary.py FOCUSES), if any
    asks: str | None = None


def normalise(text: str) -> str:
    """NFKC (full-width digits and punctuation to ASCII), lower case, one space between words."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("—", "-").replace("–", "-").replace("×", "x")
    return rx.sub(r"\s+", " ", text).strip()


_STRONG_CONCEPT = rx.compile(
    rf"{L}(?:why|explain|what(?:'s| is| are| does)|how does|how do|difference|is it true|rule of thumb|vs|versus|compared to|trade-?offs?){R}"
    r"|为什么|为何|什么是|是什么|解释|原理|区别|怎么理解|什么意思|啥意思|有什么不同|差别"
)
_SOFT_CONCEPT = rx.compile(
    rf"{L}(?:does|do|is|are|can|should|will)\b.*{L}(?:change|affect|increase|reduce|matter|shrink|save|help|use)"
    rf"|会不会|是否|影响|吗|能省|省显存|有用"
)
_ESTIMATE_FORM = rx.compile(
    rf"{L}(?:how much|how many|fit|fits|enough|need|needs|required|requirement|estimate|can i|will it|vram|memory){R}"
    r"|多少|够不够|够吗|能不能|能否|可以吗|放得下|装得下|跑得动|跑得起|显存需求|需要|几张|多大"
)
_LIST_GPUS = rx.compile(
    rf"{L}(?:which|what|list)\s+(?:gpus|cards|graphics cards)\b|{L}(?:supported|known)\s+gpus|支持哪些(?:显卡|gpu)|有哪些(?:显卡|gpu)|显卡列表"
)
_LIST_MODELS = rx.compile(
    rf"{L}(?:which|what|list)\s+models\b|{L}(?:supported|known)\s+models|支持哪些模型|有哪些模型|模型列表"
)
_OLLAMA = rx.compile(rf"{L}ollama{R}")
_PROMPT_TUNING = rx.compile(
    rf"{L}(?:p[\s_\-]*tuning(?:[\s_\-]*v2)?|ptuning(?:v2)?|prefix[\s_\-]*tuning|prompt[\s_\-]*tuning){R}"
)
_GREETING = rx.compile(r"^(?:hi|hello|hey|help|你好|您好|嗨|在吗|帮助)[!！。.? ]*$")
_FOLLOWUP = rx.compile(
    rf"^(?:and|what about|how about|then|instead|with|same|now|ok|so)\b|{L}(?:what about|how about|instead|rather)\b|"
    r"^(?:那|如果|换成|改成|改用|换|用|再)|呢[?？。]?$|换成|改成|改用"
)


_EXPLAIN = rx.compile(rf"{L}(?:why|explain|what\s+is|what\s+are){R}|为什么|为何|解释|原理|什么是|是什么")
_ACTIVE_SIZE = rx.compile(rf"{L}a\d+(?:\.\d+)?b{R}")  # "A3B": the active size of an MoE, not its size
_COLAB = rx.compile(rf"{L}colab{R}")


def parse_question(question: str, language: Language | None = None) -> ParsedQuestion:
    low = normalise(question)
    lang: Language = language or detect_language(question)
    lengths, rest = rl_lengths(low)  # "回复长度 4096" is the completion, not the context length
    fields: dict[str, Any] = stated_fields(rest)
    filled: dict[str, FilledReason] = {}
    rl_default = apply_rl_lengths(lengths, fields)
    if rl_default:
        filled["seq_len"] = rl_default

    model = find_model(low)
    if model:
        model = settle_model(model, question)  # catalog id, Hub repo id, or the size of an unknown name
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
            filled["num_gpus"] = nodes
    if fields.get("task") == "qlora" and fields.get("weight_dtype") == "int4":
        fields["weight_dtype"] = "nf4"  # QLoRA's "4-bit" is NF4 (Dettmers et al. 2023)
    if fields.get("task") in ("lora", "full_finetune", "freeze") and fields.get("weight_dtype") == "nf4":
        fields["task"] = "qlora"
    if fields.get("task") == "lora" and fields.get("weight_dtype") == "int4" and "quant_method" not in fields:
        fields["task"], fields["weight_dtype"] = "qlora", "nf4"  # LoRA on a 4-bit base is QLoRA

    if model and model.reason:
        filled["model"] = model.reason
    if card and card.reason:
        filled["gpu"] = card.reason
    if (
        fields.get("task") == "full_finetune"
        and fields.get("weight_dtype") == "int4"
        and "quant_method" not in fields
        and not FULL_MENTION.search(low)
    ):
        # "fine-tune in 4bit" (unsloth, Colab notebooks): a 4-bit base is frozen and adapters train (QLoRA)
        fields["task"], fields["weight_dtype"] = "qlora", "nf4"
        filled["task"] = FilledReason(code="task_4bit_finetune")
    if "task" not in fields and _PROMPT_TUNING.search(low):
        fields["task"] = "lora"
        filled["task"] = FilledReason(code="task_prompt_tuning")
    if fields.get("task") == "inference" and "num_generations" in fields:
        del fields["task"]  # "生成16个回答", "generate 8 samples": RL sampling, not a serving job
    if "task" not in fields and ("model" in fields) and implies_training(low, fields):
        # "7B, Adam, TP=2, PP=2, DP=4: memory per GPU?": an optimizer or a data-parallel layout is training
        fields["task"] = "full_finetune"
        filled["task"] = FilledReason(code="task_from_training_words")
    shapes = shape_overrides(low)
    if shapes and ("model" in fields or {"hidden_size", "num_hidden_layers"} <= set(shapes)):
        arch = _architecture(fields.get("model"), shapes)
        if arch is not None:
            fields["architecture"] = arch
            filled["architecture"] = FilledReason(
                code="architecture_from_shapes",
                values={
                    "shapes": ", ".join(f"{k}={v}" for k, v in shapes.items()),
                    "base": arch.pop("_base"),
                },
            )
            fields.setdefault("model", str(filled["architecture"].values["base"]))
    if _OLLAMA.search(low) and "weight_dtype" not in fields:
        fields["weight_dtype"] = "q4_k_m"
        filled["weight_dtype"] = FilledReason(
            code="ollama_4bit"
        )  # ollama library: default tags are 4-bit GGUF
    if (
        fields.get("task") in RL_TASKS
        and "lora_rank" not in fields
        and (LORA_MENTION.search(low) or QLORA_MENTION.search(low))
    ):
        fields["lora_rank"] = RL_LORA_DEFAULT_RANK
        filled["lora_rank"] = FilledReason(
            code="rl_lora_rank", values={"method": str(fields["task"]).upper(), "rank": RL_LORA_DEFAULT_RANK}
        )

    topic = match_topic(low)
    has_subject = "model" in fields
    intent = _intent(low, topic, has_subject, fields)
    asks = asked_figure(low)
    if intent in ("concept", "unknown") and asks and not _EXPLAIN.search(low):
        # "what's the max context then?", "那最长上下文能到多少？": a figure of the conversation's job (the
        # previous scenario, kept by the follow-up merge); with no previous job the agent answers the concept
        intent = "estimate"
    if intent == "concept":
        fields = {}
    return ParsedQuestion(
        question=question,
        language=lang,
        intent=intent,
        scenario=fields if intent == "estimate" else {},
        topic=topic,
        model_mention=fields.get("model"),
        followup=bool(_FOLLOWUP.search(low)),
        filled=filled if intent == "estimate" else {},
        asks=asks if intent == "estimate" else None,
    )


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


def _intent(low: str, topic: str | None, has_subject: bool, fields: dict[str, Any]) -> Intent:
    if _LIST_GPUS.search(low):
        return "list_gpus"
    if _LIST_MODELS.search(low):
        return "list_models"
    if has_subject and "gpu" in fields:
        # a concrete scenario (model + GPU) is estimated even when it names a knowledge-base keyword
        # ("一张24G的4090能推理Qwen2.5-14B吗，用nf4量化")
        return "estimate"
    if topic:
        strong = bool(_STRONG_CONCEPT.search(low))
        soft = bool(_SOFT_CONCEPT.search(low))
        asks_figure = bool(_ESTIMATE_FORM.search(low))
        if strong and not (has_subject and "gpu" in fields and asks_figure):
            return "concept"
        if soft and not (has_subject and asks_figure):
            return "concept"
        only_no_effect = not set(fields) - _NO_EFFECT_KEYS
        if (
            not has_subject
            and "gpu" not in fields
            and only_no_effect
            and not (fields and _FOLLOWUP.search(low))
        ):
            return "concept"
    if has_subject or fields:
        return "estimate"
    if _GREETING.match(low):
        return "greeting"
    return "unknown"
