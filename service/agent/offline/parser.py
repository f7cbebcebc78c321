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
from service.agent.offline.kb import match_topic
from service.agent.offline.language import detect_language
from service.agent.offline.mentions import (
    FilledReason,
    L,
    R,
)
from service.agent.offline.parse_rules import read_fields

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
_GREETING = rx.compile(r"^(?:hi|hello|hey|help|你好|您好|嗨|在吗|帮助)[!！。.? ]*$")
_FOLLOWUP = rx.compile(
    rf"^(?:and|what about|how about|then|instead|with|same|now|ok|so)\b|{L}(?:what about|how about|instead|rather)\b|"
    r"^(?:那|如果|换成|改成|改用|换|用|再)|呢[?？。]?$|换成|改成|改用"
)


_EXPLAIN = rx.compile(rf"{L}(?:why|explain|what\s+is|what\s+are){R}|为什么|为何|解释|原理|什么是|是什么")


def parse_question(question: str, language: Language | None = None) -> ParsedQuestion:
    low = normalise(question)
    lang: Language = language or detect_language(question)
    reading = read_fields(question, low)  # the ordered rules of service/agent/offline/parse_rules.py
    fields, filled = reading.fields, reading.filled

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
