"""Model and GPU mentions in free text -> the names the catalog accepts.

The parser only normalises what the user typed ("llama3 70b" -> "llama-3-70b", "千问2.5-14B" ->
"qwen2.5-14b", "2x H100 80GB" -> gpu "h100-80gb", 2 GPUs); the estimator's catalog resolves
the name (and answers an unknown one with near names). Patterns are matched on lower-cased text
with ASCII-only word boundaries, because Han characters count as word characters in `re`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from service.agent.offline import patterns as rx
from service.agent.offline.named_cards import named_card
from service.agent.offline.numbers import EN_COUNT_WORD, ZH_NUMERAL, count_word, param_count, size_label

L = r"(?<![a-z0-9.])"  # left boundary: not after an ASCII letter/digit
R = r"(?![a-z0-9])"  # right boundary: not before an ASCII letter/digit
SEP = r"[\s_\-]*"
SIZE = r"(\d+(?:\.\d+)?)\s*b"


class FilledReason(BaseModel):
    """Why the parser chose a value itself (an assumption): a stable code and the values its text needs.

    The text is a template `[assumptions].<code>` in prompts/<lang>/assumptions.toml, formatted by
    service/agent/assumption_text.py in the answer's language.
    """

    code: str
    values: dict[str, str | int] = Field(default_factory=dict)


@dataclass(frozen=True)
class Mention:
    value: str
    start: int
    end: int
    reason: FilledReason | None = None  # why the text was mapped to this value (an assumption)


@dataclass(frozen=True)
class ModelRule:
    """One model family: a pattern and how a match becomes a catalog-style name."""

    pattern: re.Pattern[str]
    name: Callable[[re.Match[str]], str]


def _v(version: str | None) -> str:
    return version.replace(" ", "") if version else ""


def _rule(pattern: str, name: Callable[[re.Match[str]], str]) -> ModelRule:
    return ModelRule(rx.compile(pattern), name)


def _qwen(m: re.Match[str]) -> str:
    version, size, active = m.group(1), m.group(2), m.group(3)
    base = f"qwen{_v(version)}-{size}b"
    return f"{base}-{active.replace(' ', '').replace('-', '')}" if active else base


def _deepseek(m: re.Match[str]) -> str:
    tag = rx.sub(SEP, "", m.group(1))
    return {"v2lite": "deepseek-v2-lite", "r1": "deepseek-r1"}.get(tag, f"deepseek-{tag}")


def _distill(m: re.Match[str]) -> str:
    """DeepSeek-R1-Distill-{Qwen,Llama}-<size>: the catalog's distill ids (DeepSeek-R1 model card, "Distilled Models")."""
    family, size = m.group(1) or m.group(2), m.group(3)
    if family == "qwen3":  # DeepSeek-R1-0528-Qwen3-8B (DeepSeek-R1-0528 model card)
        return f"qwen3-{size}b"
    if not family:  # "deepseek-r1 蒸馏 32b": the size names the base (8B and 70B are the Llama ones)
        family = "llama" if size in ("8", "70") else "qwen"
    return f"deepseek-r1-distill-{family}-{size}b"


# R1-Distill models keep their base model's architecture (DeepSeek-R1 model card)
DISTILL_REASON = "model_distill"


def _phi(m: re.Match[str]) -> str:
    version, variant = m.group(1), m.group(2)
    return f"phi-{version}-{variant}" if variant else f"phi-{version}"


def _ollama_distill(m: re.Match[str]) -> str:
    size = m.group(1)
    family = "llama" if size in ("8", "70") else "qwen"
    return f"deepseek-r1-distill-{family}-{size}b"


_BLOOM_SIZES = {
    "560m": "bloom-560m",
    "1b1": "bloom-1b1",
    "1b7": "bloom-1b7",
    "3b": "bloom-3b",
    "7b1": "bloom-7b1",
}


def _bloom(m: re.Match[str]) -> str:
    size = (m.group(1) or "").replace(" ", "")
    return _BLOOM_SIZES.get(size, {"7b": "bloom-7b1", "176b": "bloom-176b"}.get(size, "bloom-176b"))


# Order matters: more specific families first (tinyllama before llama, mixtral before mistral).
MODEL_RULES: tuple[ModelRule, ...] = (
    # families whose names carry no size, or whose size the generic rules would misread
    _rule(rf"{L}mistral{SEP}nemo{R}", lambda m: "mistral-nemo-12b"),
    _rule(rf"{L}mistral{SEP}small(?:{SEP}(22|24)\s*b)?{R}", lambda m: f"mistral-small-{m.group(1) or '24'}b"),
    _rule(rf"{L}codestral{R}", lambda m: "codestral-22b"),
    _rule(rf"{L}llama{SEP}3\.2{SEP}(11|90)\s*b{SEP}vision{R}", lambda m: f"llama-3.2-{m.group(1)}b-vision"),
    _rule(
        rf"{L}star{SEP}coder{SEP}2(?:{SEP}(3|7|15)\s*b)?{R}", lambda m: f"starcoder2-{m.group(1) or '15'}b"
    ),
    _rule(rf"{L}bloomz?(?:{SEP}(560\s*m|1b1|1b7|3\s*b|7b1|7\s*b|176\s*b))?{R}", _bloom),
    _rule(rf"{L}phi{SEP}3\.5{SEP}moe{R}", lambda m: "phi-3.5-moe"),
    _rule(
        rf"{L}olmo{SEP}(2{SEP})?(?:1124{SEP})?(1|7)\s*b{R}",
        lambda m: f"olmo-{'2-' if m.group(1) else ''}{m.group(2)}b",
    ),
    _rule(rf"{L}gpt{SEP}3(?!\.\d)(?:{SEP}175\s*b)?{R}", lambda m: "gpt-3-175b"),
    _rule(rf"{L}bert{SEP}large{R}", lambda m: "bert-large"),
    _rule(rf"{L}(?:mixtral{SEP})?8\s*[x×]\s*(7|22)\s*b{R}", lambda m: f"mixtral-8x{m.group(1)}b"),
    _rule(rf"{L}tiny{SEP}llama(?:{SEP}1\.1\s*b)?{R}", lambda m: "tinyllama-1.1b"),
    # before the Llama rule, which would read "codellama-34b" as Llama 3 at 4B
    _rule(rf"{L}code{SEP}llama{SEP}(?:2{SEP})?{SIZE}{R}", lambda m: f"codellama-{m.group(1)}b"),
    _rule(
        rf"{L}(?:meta{SEP})?(?:code{SEP})?llama{SEP}(\d(?:\.\d)?){SEP}(?:chat{SEP}|instruct{SEP})?{SIZE}{R}",
        lambda m: f"llama-{m.group(1)}-{m.group(2)}b",
    ),
    _rule(rf"{L}llama{SEP}(\d(?:\.\d)?){R}", lambda m: {"3.3": "llama-3.3-70b"}.get(m.group(1), "")),
    _rule(
        rf"(?:{L}qwen|通义千问|千问|通义){SEP}(\d(?:\.\d)?(?!\d))?{SEP}(?:moe{SEP})?{SIZE}(?:{SEP}(a\d+(?:\.\d+)?\s*b))?{R}",
        _qwen,
    ),
    # Qwen1.5-MoE-A2.7B names only its active size (14.3B total; Qwen1.5-MoE model card)
    _rule(rf"{L}qwen{SEP}1\.5{SEP}moe(?:{SEP}a2\.7\s*b)?{R}", lambda m: "qwen1.5-moe-a2.7b"),
    _rule(rf"{L}qwq{SEP}(\d+)\s*b{R}", lambda m: f"qwq-{m.group(1)}b"),
    # "DeepSeek-R1-Distill-Qwen-32B", "R1-distill-qwen-32b", "deepseek r1 蒸馏 qwen 7b", "R1蒸馏版32B"
    _rule(
        rf"(?:{L}deepseek{SEP})?(?<![a-z0-9.])r1{SEP}(?:(?:distill(?:ed)?|蒸馏版?){SEP}(?:(qwen|llama){SEP})?|0528{SEP}(qwen3){SEP})"
        rf"(1\.5|7|8|14|32|70)\s*b{R}",
        _distill,
    ),
    # ollama's deepseek-r1:<size> tags below 671B are the distills (ollama library page for deepseek-r1)
    _rule(rf"{L}deepseek{SEP}r1{SEP}(1\.5|7|8|14|32|70)\s*b{R}", _ollama_distill),
    _rule(rf"{L}deepseek{SEP}(v2{SEP}lite|v2\.5|v2|v3(?:\.1)?|r1){R}", _deepseek),
    _rule(rf"{L}chatglm(\d){SEP}{SIZE}{R}", lambda m: f"chatglm{m.group(1)}-{m.group(2)}b"),
    _rule(rf"{L}glm{SEP}(\d){SEP}{SIZE}{R}", lambda m: f"glm-{m.group(1)}-{m.group(2)}b"),
    _rule(rf"{L}yi{SEP}(?:1\.5{SEP})?{SIZE}{R}", lambda m: f"yi-{m.group(1)}b"),
    _rule(rf"(?:{L}baichuan|百川){SEP}2?{SEP}{SIZE}{R}", lambda m: f"baichuan2-{m.group(1)}b"),
    _rule(
        rf"(?:{L}internlm|书生浦语|书生·浦语){SEP}(2\.5|2|3)?{SEP}{SIZE}{R}",
        lambda m: f"internlm{m.group(1) or '2.5'}-{m.group(2)}b",
    ),
    _rule(
        rf"{L}gemma{SEP}(\d)?{SEP}{SIZE}{R}",
        lambda m: f"gemma-{m.group(1)}-{m.group(2)}b" if m.group(1) else f"gemma-{m.group(2)}b",
    ),
    _rule(rf"{L}phi{SEP}(\d(?:\.\d)?)(?:{SEP}(mini|small|medium))?{R}", _phi),
    _rule(
        rf"{L}gpt{SEP}2(?:{SEP}(medium|large|xl))?{R}",
        lambda m: "gpt2" + (f"-{m.group(1)}" if m.group(1) else ""),
    ),
    _rule(rf"{L}falcon{SEP}{SIZE}{R}", lambda m: f"falcon-{m.group(1)}b"),
    _rule(rf"{L}mistral{SEP}(?:v0\.\d{SEP})?{SIZE}{R}", lambda m: f"mistral-{m.group(1)}b"),
    _rule(rf"{L}mistral{R}(?!{SEP}(?:nemo|small|large))", lambda m: "mistral-7b"),
)

# An unknown but model-shaped token ("foobar-13b"): passed on so the catalog can suggest near names.
_GENERIC_MODEL = rx.compile(rf"{L}([a-z][a-z0-9.]*(?:[_\-][a-z0-9.]+)*[_\-]\d+(?:\.\d+)?b){R}")
# A bare size: "7B", "1.5b", "70 billion", "70亿", "700亿参数".
_BARE_SIZE = rx.compile(rf"{L}(\d+(?:\.\d+)?)\s*(b|bn|billion){R}|(\d+(?:\.\d+)?)\s*(千亿|百亿|亿)")


# "org/name" with a separator in the name (HF repo names have one; "a100/h100" and "tp/pp" do not)
_REPO_ID = rx.compile(
    r"(?<![\w/.])([a-z0-9][a-z0-9_.\-]{1,95}/[a-z0-9][a-z0-9_]*[.\-][a-z0-9_.\-]*[a-z0-9])(?![\w/])"
)
_OLLAMA_TAG = rx.compile(r"(?<=[a-z0-9.]):(?=\s*\d)")  # ollama "llama3:70b" -> "llama3-70b"


def _catalog_id(name: str) -> str:
    """The catalog entry a name resolves to (the distills share their base's entry, DeepSeek-R1 model card)."""
    from tools.catalog.models import lookup_model

    spec = lookup_model(name)
    return spec.id if spec is not None else name


def _in_catalog(name: str) -> bool:
    from tools.catalog.models import lookup_model

    return lookup_model(name) is not None


def find_model(low: str) -> Mention | None:
    """The first model family mention, else a model-shaped unknown name."""
    low = _OLLAMA_TAG.sub("-", low)  # same length: spans stay valid in the caller's text
    best: Mention | None = None
    for rule in MODEL_RULES:
        for m in rule.pattern.finditer(low):
            name = rule.name(m)
            if name and (best is None or m.start() < best.start):
                distill = rule.name in (_distill, _ollama_distill)
                reason = (
                    FilledReason(code=DISTILL_REASON, values={"model": _catalog_id(name)})
                    if distill
                    else None
                )
                best = Mention(name, m.start(), m.end(), reason)
                break
    repo = _REPO_ID.search(low)  # an HF repo id ("org/name"): the catalog, else the Hub (service/hub.py)
    if repo and _in_catalog(repo.group(1).split("/", 1)[0]):
        repo = None  # "llama-2-7b/llama-2-13b": two models, not an organisation and a repo
    if repo and (best is None or repo.start() <= best.start < repo.end()):
        return Mention(repo.group(1), repo.start(), repo.end())  # the whole id, not the family inside it
    if best is not None:
        return best
    m = _GENERIC_MODEL.search(low)
    if m and not rx.fullmatch(r"[a-z]?\d+(?:\.\d+)?b", m.group(1)):
        return Mention(m.group(1), m.start(), m.end())
    return None


def find_bare_size(low: str, skip: list[tuple[int, int]]) -> Mention | None:
    """'7B' / '70亿' outside any span already explained (a model name, 'A3B')."""
    for m in _BARE_SIZE.finditer(low):
        if any(s <= m.start() < e for s, e in skip):
            continue
        text = (m.group(1) + m.group(2)) if m.group(1) else (m.group(3) + m.group(4))
        n = param_count(text)
        if n:
            return Mention(size_label(n), m.start(), m.end())
    return None


# --- GPUs -------------------------------------------------------------------------------------------

_GPU_NAMES = (
    "gh200|gb200|b200|b100|h200|h100|h800|h20|a100|a800|a10g|a10|a30|a40|a6000|l40s|l40|l20|l4|t4|"
    "v100|p100|p40|mi300x|mi325x|mi250x|mi250|mi210|910b|910c|"
    "5090|5080|4090|4080|4070|4060|3090|3080|3070|3060|2080"
)
_GPU = rx.compile(
    rf"(?:{L}nvidia\s*)?(?:{L}(?:geforce\s*)?rtx\s*|{L}tesla\s*|昇腾\s*|{L}ascend\s*|{L}amd\s*|{L}instinct\s*)?"
    rf"{L}({_GPU_NAMES})(?=\s*(?:d|ti|ada){R}|s{R}|[^a-z0-9]|$)(\s*d{R}|\s*ti{R}|\s*ada{R})?"
    rf"(?:[\s\-_]*(?:pcie|sxm\d?|nvl))?(?:[\s\-_]*\(?(\d{{2,3}})\s*(?:gb|g|gib){R}\)?)?"
)
_MEMORY_BEFORE = rx.compile(
    r"(?<![\d.])(\d{2,3})\s*(?:gb|g|gib)\s*(?:的\s*)?(?:modded\s*|魔改\s*)?(?:nvidia\s*)?(?:geforce\s*)?(?:rtx\s*)?$"
)
_ZH_COUNT_BEFORE = rx.compile(rf"({ZH_NUMERAL}|\d+)\s*(?:张|块|卡|台)\s*(?:卡|显卡)?\s*$")
_EN_COUNT_BEFORE = rx.compile(rf"{L}(\d+|{EN_COUNT_WORD})\s*(?:[x×*]\s*)?$")
_COUNT_AFTER = rx.compile(
    rf"^(?:s{R})?\s*(?:gpus?|cards?|显卡|卡)?\s*(?:[x×*]\s*(\d+)|({ZH_NUMERAL}|\d+)\s*(?:张|块|卡))"
)
_EN_COUNT_ANY = rx.compile(
    rf"{L}(\d+|{EN_COUNT_WORD})[\s\-]*(?:x\s*)?(?:gpus|gpu|cards|graphics cards){R}"
    rf"|{L}(\d+|{EN_COUNT_WORD})\s+of\s+(?:them|those|these|it|the\s+(?:cards|gpus)){R}"
)
# "8xH100", "8*A100", "4×4090": the count glued to the card name
_GLUED_COUNT = rx.compile(
    rf"{L}(\d{{1,4}})\s*[x×*]\s*(?=(?:nvidia\s*|rtx\s*|geforce\s*|tesla\s*)?(?:{_GPU_NAMES}))"
)
_ZH_COUNT_ANY = rx.compile(
    rf"({ZH_NUMERAL}|\d+)\s*(?:张|块)(?!\s*(?:图|照片|幅))\s*(?:卡|显卡|gpu)?|({ZH_NUMERAL}|\d+)\s*卡"
)
_SINGLE = rx.compile(rf"{L}single[\s\-]*gpu{R}|{L}one\s+gpu{R}|单卡|单张|一张卡")


@dataclass(frozen=True)
class GpuMention:
    gpu: str | None
    count: int | None


def _gpu_name(m: re.Match[str]) -> str:
    base = m.group(1)
    suffix = (m.group(2) or "").strip()
    if suffix == "d":
        base += "d"
    elif suffix == "ti":
        base += "-ti"
    elif suffix == "ada" and base == "a6000":
        base = "rtx-6000-ada"
    memory = m.group(3)
    return f"{base}-{memory}gb" if memory else base


def _with_stated_memory(gpu: str, gb: int) -> str:
    """The card name with a stated memory that differs from the catalog card's (a modded 22 GB 2080 Ti)."""
    from tools.catalog.gpus import find_gpu as catalog_gpu
    from tools.errors import ScenarioError

    try:
        spec, _ = catalog_gpu(gpu)
    except ScenarioError:
        return gpu
    if abs(spec.memory_bytes / 10**9 - gb) <= 0.1 * gb or f"{gb} GB" in spec.marketed:
        return gpu
    return f"{gpu}-{gb}gb"


def find_gpu(low: str) -> GpuMention:
    """The GPU named and how many: '两张4090' -> (4090, 2), '2x h100 80gb' -> (h100-80gb, 2).

    The count is the one next to the card (or the only one stated); nodes are read by gpu_counts.py."""
    gpu: str | None = None
    count: int | None = None
    low = _GLUED_COUNT.sub(lambda g: g.group(1) + " x ", low)
    m = _GPU.search(low)
    if m:
        gpu = _gpu_name(m)
        before, after = low[: m.start()], low[m.end() :]
        size_before = _MEMORY_BEFORE.search(before)
        if size_before and not m.group(3):  # "a 22G 2080 Ti": the stated memory before the name
            gpu = _with_stated_memory(gpu, int(size_before.group(1)))
            before = before[: size_before.start()]  # "on a 22G 2080 Ti": the count word is before the size
        cb = _ZH_COUNT_BEFORE.search(before) or _EN_COUNT_BEFORE.search(before)
        ca = _COUNT_AFTER.search(after)
        if cb:
            count = count_word(cb.group(1))
        elif ca:
            count = count_word(ca.group(1) or ca.group(2))
    elif (named := named_card(low)) is not None:  # a card the catalog lacks: that card, never a stand-in
        gpu = named[0]
        cb = _ZH_COUNT_BEFORE.search(low[: named[1]]) or _EN_COUNT_BEFORE.search(low[: named[1]])
        count = count_word(cb.group(1)) if cb else None
    if count is None:
        if _SINGLE.search(low):
            count = 1
        else:
            any_m = _EN_COUNT_ANY.search(low) or _ZH_COUNT_ANY.search(low)
            if any_m:
                count = count_word(next(g for g in any_m.groups() if g))
    if count is not None and count < 1:
        count = None
    return GpuMention(gpu, count)


# --- a card size without a card name ("is 24GB enough", "我只有16G显存") --------------------------------------

# memory (GB as marketed) -> the catalog card taken to stand for it: the most common card sold with exactly
# that memory (consumer cards first); checked against the catalog's `marketed` memory in the parser tests.
CARD_FOR_MEMORY: dict[int, str] = {
    8: "rtx-4060",
    10: "rtx-3080",
    12: "rtx-3060",
    16: "rtx-4060-ti",
    24: "rtx-4090",
    32: "rtx-5090",
    40: "a100-40gb",
    48: "rtx-a6000",
    80: "a100-80gb",
    141: "h200",
    192: "mi300x",
}
# unified-memory sizes of Apple silicon Macs in the GPU catalog (apple-<N>gb: what Metal lets one process use)
APPLE_MEMORY = frozenset({16, 24, 32, 36, 48, 64, 96, 128, 192, 512})
_CARD_MEMORY = rx.compile(
    r"(?<![a-z0-9.])(\d{1,3})\s*(?:gb|g|gib)(?![a-z0-9])"
    # not host memory: "64GB RAM", "32G内存", "128 GB of system memory"
    r"(?!\s*(?:of\s+)?(?:system\s+|cpu\s+|host\s+|ddr\d?\s*)?(?:ram|内存|system\s+memory|cpu\s+memory|ddr))"
)
_VRAM_WORD = rx.compile(r"\s*(?:of\s+)?(?:vram|gpu|card|graphics|显存|显卡|的显卡|卡)")
_VRAM_WORD_BEFORE = rx.compile(r"(?:vram|显存)\s*(?:只有|有|is|of|:)?\s*$")
_APPLE = rx.compile(
    rf"{L}(?:mac(?:book)?(?:\s*(?:pro|air|studio|mini))?|apple(?:\s+silicon)?|m[1-4]\s*(?:pro|max|ultra)){R}"
    r"|苹果|(?<![a-z0-9])m[1-4](?=\s*(?:芯片|的|with|,|，))"
)


def find_card_memory(low: str) -> Mention | None:
    """'24GB' / '16G显存' / '8GB VRAM' with no GPU named -> a catalog card of that memory, with a reason."""
    apple = _APPLE.search(low)
    # a Mac of any memory is that Mac (tools/catalog/named_gpus.py: the part Metal lets the GPU use)
    sizes = [
        m
        for m in _CARD_MEMORY.finditer(low)
        if (4 <= int(m.group(1)) <= 512 if apple else int(m.group(1)) in CARD_FOR_MEMORY)
    ]
    # "a 7B model is 14GB in bf16: will it fit my 12GB card?": the size next to a VRAM word wins
    near = [m for m in sizes if _VRAM_WORD.match(low, m.end()) or _VRAM_WORD_BEFORE.search(low[: m.start()])]
    for m in near or sizes:
        gb = int(m.group(1))
        card = f"apple-{gb}gb" if apple else CARD_FOR_MEMORY[gb]
        # Apple silicon: macOS lets the GPU use only part of unified memory (Metal recommendedMaxWorkingSetSize)
        code = "card_apple_memory" if apple else "card_from_memory"
        return Mention(card, m.start(), m.end(), FilledReason(code=code, values={"gb": gb, "card": card}))
    if (
        apple
    ):  # a Mac named without its memory: asked for (the estimator names what is accepted), never a default
        return Mention("mac", apple.start(), apple.end())
    return None
