"""What every field extractor shares: the value forms ("= 8", "为 8", "4k") and negation ("no LoRA", "不开 offload")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import SEP, L, R

Fields = dict[str, Any]
Extractor = Callable[[str], Fields]

NUM = r"(\d+(?:\.\d+)?)"
K = r"(\d+(?:\.\d+)?\s*k?)"
IS = r"\s*(?:of|is|=|:|to|为|是|设为|设置为|设成|设了|设置了|改成|改为|换成|调到|调成|开到|用了|到|取)?\s*"
_NEG = rx.compile(
    r"(?:without|w/o|no|not|never|disable[ds]?|doesn'?t\s+support|does\s+not\s+support|no\s+support\s+for|不支持|turn(?:ed)?\s+off|switch(?:ed)?\s+off|not\s+using|don'?t\s+use"
    r"|do\s+not\s+use|skip(?:ping)?|不开启?|关闭|关掉|关了|不用|不使用|没开|没有|不加|不要|别用?|不需要|禁用|无|不)\s*(?:the\s+|any\s+)?$"
)
# "offload disabled", "ckpt off", "offload=false", "offload: none", "offload关掉", "LoRA不要"
_NEG_AFTER = rx.compile(
    r"^\s*(?:=|:)\s*(?:false|off|0|disabled|none|no)(?![a-z0-9])|^\s*(?:is\s+|are\s+)?(?:disabled|off|not\s+used|(?:turned|switched)\s+off)(?![a-z0-9])"
    r"|^\s*(?:关闭|关掉|关了|禁用)"
)


def negated(low: str, start: int, end: int | None = None) -> bool:
    """The mention at low[start:end] is negated: 'without offload', '不开offload', 'offload disabled'."""
    if _NEG.search(low[max(0, start - 16) : start]):
        return True
    return end is not None and bool(_NEG_AFTER.search(low[end : end + 14]))


def live(pattern: re.Pattern[str], low: str) -> re.Match[str] | None:
    """The first mention of `pattern` that is not negated ('no LoRA', '不要LoRA', 'without qlora')."""
    return next((m for m in pattern.finditer(low) if not negated(low, m.start(), m.end())), None)


def negated_any(pattern: re.Pattern[str], low: str) -> bool:
    return any(negated(low, m.start(), m.end()) for m in pattern.finditer(low))


# a quantisation group only where quantisation is named: GRPO's "group size 16" is its
# generations per prompt, GPTQ's "group size 128" is not
QUANT_CONTEXT = rx.compile(rf"{L}(?:gptq|awq|int4|w4a16|q_group_size|quant\w*|4{SEP}bits?){R}|量化")
