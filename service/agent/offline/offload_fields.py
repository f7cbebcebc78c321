"""CPU/NVMe offload a question states -- and the offload mentions that are not a training setting.

- DeepSpeed ZeRO-Offload / Infinity: optimizer states (and with "offload params" the weights) to CPU or NVMe;
- llama.cpp / Ollama "offload layers to CPU", "-ngl 20", "部分层放到CPU": GPU-layer offload, which the llama.cpp
  serving model decides by itself (tools/serving.py: as many layers on the GPU as fit, the rest in CPU RAM):
  never optimizer offload, so no field is set;
- "do I need to offload?", "要不要 offload": a question, not a setting.
"""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import Fields, negated
from service.agent.offline.mentions import SEP, L, R

_NVME = rx.compile(rf"{L}nvme{R}")
_OFFLOAD_PARAMS = rx.compile(
    rf"{L}offload(?:ing)?{SEP}(?:the{SEP})?(?:params|parameters|weights|model){R}|(?:参数|权重)\s*(?:卸载|offload)"
)
_OFFLOAD = rx.compile(
    rf"{L}(?:cpu|nvme){SEP}offload(?:ing)?|{L}offload(?:ing)?|{L}zero{SEP}offload|{L}zero{SEP}infinity|卸载|offload"
)
# llama.cpp's layers: the engine, -ngl / n_gpu_layers, or "layers" next to the offload word
_LAYER_ENGINE = rx.compile(
    rf"{L}(?:llama[\.\-_ ]?cpp|llama-server|gguf|ollama|lm{SEP}studio|koboldcpp){R}|{L}-?ngl{R}|{L}n{SEP}gpu{SEP}layers{R}|{L}gpu{SEP}layers{R}"
)
# the layers next to the offload word: "offload 20 layers", "offloading some of the layers", "layers to CPU",
# "部分层卸载到 CPU", "一部分层 offload"; not "80 层 ... ZeRO-3 offload"
_LAYERS_AFTER = rx.compile(
    r"^(?:ing)?\s+(?:the\s+|some\s+(?:of\s+the\s+)?|a\s+few\s+|more\s+|all\s+|half\s+(?:of\s+)?(?:the\s+)?|\d+\s+)?layers?(?![a-z])"
)
_LAYERS_BEFORE = rx.compile(r"(?:layers?\s+|层\s*)$")
_LAYERS_TO_CPU = rx.compile(
    r"(?<![a-z])layers?\s+(?:to|on|onto)\s+(?:the\s+)?(?:cpu|ram|system\s+memory)|层\s*(?:放|留|卸载)"
)
# the offload word asked about, not stated: "do I need to offload", "should I offload", "要不要offload", "需要卸载吗"
_ASKED_BEFORE = rx.compile(
    rf"(?:{L}(?:do|would|will|must|should|can)\s+(?:i|we|you)\s+(?:really\s+)?(?:need\s+(?:to\s+)?|have\s+to\s+)?"
    r"|要不要|需不需要|是否需要|是否要|用不用|得不得)\s*(?:use\s+|enable\s+|turn\s+on\s+|开启?|打开|用|使用|加|上)?\s*(?:cpu\s*|nvme\s*)?$"
)
# "需要 offload 吗", "is offload needed?", "need to offload?": a question only when the clause ends as one
_MAYBE_ASKED_BEFORE = rx.compile(
    rf"(?:{L}(?:need|needs|is|are)\s+(?:to\s+)?|要|需要|得)\s*(?:use\s+|开启?|用|使用|加|上)?\s*(?:cpu\s*|nvme\s*)?$"
)
# "offload 有必要吗", "offloading worth it?": the offload word, then the question about it
_ASKED_RIGHT_AFTER = rx.compile(
    r"^\s*(?:is\s+|really\s+)?(?:necessary|needed|required|worth\s+it|有必要|必要|需要|要)[^,，。;；]{0,12}?(?:\?|？|吗|么|不)"
)
_ASKED_AFTER = rx.compile(r"^[^,，。;；!！]{0,60}?(?:\?|？|吗|么)")


def _layer_offload(low: str, m: re.Match[str]) -> bool:
    after, before = low[m.end() : m.end() + 40], low[max(0, m.start() - 12) : m.start()]
    return bool(
        _LAYERS_AFTER.search(after) or _LAYERS_BEFORE.search(before) or _LAYERS_TO_CPU.search(low)
    ) or bool(_LAYER_ENGINE.search(low))


def _asked(low: str, m: re.Match[str]) -> bool:
    before = low[max(0, m.start() - 40) : m.start()]
    if _ASKED_BEFORE.search(before) or _ASKED_RIGHT_AFTER.search(low[m.end() :]):
        return True
    return bool(_MAYBE_ASKED_BEFORE.search(before)) and bool(_ASKED_AFTER.search(low[m.end() :]))


def offload_fields(low: str) -> Fields:
    out: Fields = {}
    target = "nvme" if _NVME.search(low) else "cpu"
    stated = [m for m in _OFFLOAD.finditer(low) if not _layer_offload(low, m) and not _asked(low, m)]
    params = _OFFLOAD_PARAMS.search(low)
    if params and not _layer_offload(low, params) and not _asked(low, params):
        out["offload_params"] = "none" if negated(low, params.start(), params.end()) else target
    if stated:
        off = all(negated(low, m.start(), m.end()) for m in stated)
        out["offload_optimizer"] = "none" if off else target
    return out
