"""The kind of question besides "does it fit": an inverse question (the most, the fewest, the best) or a
comparison ("A vs B (vs C)"), read from the normalised question (service/agent/offline/parser.py `normalise`).

`read_inquiry` gives an `Inquiry`: `kind` max/min/compare; for max/min the `search` (tools/inverse.py):
batch (a training micro-batch, or a server's concurrent sequences), context, params, format, gpus,
lora_rank, completion, generations; for compare the `options`, each a label as asked and the Scenario fields
it sets on the job (the field compared: the fine-tuning method, the weight format, the ZeRO stage or FSDP,
the engine, gradient checkpointing, the GPU, the model).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import SEP, L, R, find_gpu, find_model

_NUM = r"(?:多少|几|多大|多长|多久)"

# (search, pattern): the first that matches names the inverse question; order matters (the more specific
# first: "max lora rank" before "max batch", "longest completion" before "longest context").
_MAX: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "lora_rank",
        rx.compile(
            rf"{L}(?:max(?:imum)?|largest|biggest|highest|how{SEP}(?:big|high|large)){SEP}(?:a{SEP})?(?:lora{SEP})?(?:rank|r){R}"
            rf"|{L}(?:lora{SEP})?rank{SEP}(?:can|could){R}|(?:lora)?\s*(?:rank|秩)\s*(?:最大|最多|最高)|最大(?:的)?\s*(?:lora)?\s*(?:rank|秩)"
            rf"|(?:rank|秩)\s*(?:能|可以)?(?:开|设|调)?(?:到)?{_NUM}"
        ),
    ),
    (
        "completion",
        rx.compile(
            rf"{L}(?:max(?:imum)?|longest|how{SEP}long(?:{SEP}a)?){SEP}(?:possible{SEP})?(?:completion|response|generation|rollout|answer)s?(?:{SEP}(?:length|len))?{R}"
            rf"|{L}max{SEP}(?:completion|response){SEP}(?:length|len){R}.*(?:can|could|how)"
            r"|(?:回复|回答|生成|completion|response)\s*(?:长度)?\s*(?:最长|最多)|最长(?:的)?\s*(?:回复|回答|生成|completion|response)"
            rf"|(?:回复|回答|生成)(?:长度)?\s*(?:能|可以)?(?:开|设)?(?:到)?{_NUM}"
        ),
    ),
    (
        "generations",
        rx.compile(
            rf"{L}(?:most|max(?:imum)?|how{SEP}many){SEP}(?:generations|samples|completions|rollouts)(?:{SEP}per{SEP}prompt)?{R}"
            rf"|{L}max{SEP}num{SEP}generations{R}|{L}(?:largest|max(?:imum)?){SEP}(?:group{SEP}size|num{SEP}generations|rollout\.n){R}"
            rf"|(?:每个\s*prompt|每条\s*prompt|每个提示)?\s*最多\s*(?:能)?\s*(?:采样|生成)\s*{_NUM}\s*(?:条|个|次)?|(?:采样|生成)\s*(?:数|条数)\s*最多|group\s*size\s*最大"
        ),
    ),
    (
        "format",
        rx.compile(
            rf"{L}(?:best|highest(?:{SEP}precision)?|which|what|largest){SEP}(?:quant(?:i[sz]ation)?s?|formats?|precision|gguf|weight{SEP}formats?|bits?){R}"
            rf"|{L}(?:which|what){SEP}(?:quant|gguf|format){R}|{L}highest{SEP}precision{R}|{L}least{SEP}(?:aggressive{SEP})?quantization{R}"
            r"|(?:哪个|哪种|什么|最好的|最高的|最合适的)\s*(?:量化|精度|gguf|格式)|(?:量化|精度)\s*(?:选|用)\s*(?:哪个|哪种|什么)|最高精度|精度最高"
        ),
    ),
    (
        "params",
        rx.compile(
            rf"{L}(?:largest|biggest|max(?:imum)?){SEP}(?:size{SEP})?(?:model|llm|checkpoint|llama|qwen|mistral|gemma|phi|deepseek|glm)s?{R}|{L}how{SEP}(?:big|large){SEP}(?:a{SEP}|of{SEP}a{SEP})?(?:model|llm){R}"
            rf"|{L}what(?:{SEP}size|{SEP}is{SEP}the{SEP}largest){SEP}(?:model|llm){R}|{L}max(?:imum)?{SEP}(?:model{SEP})?(?:size|params|parameters){R}"
            r"|最大(?:能|可以)?(?:跑|训|训练|微调|推理|部署|放)?(?:得下|得动)?\s*(?:多大|什么)?(?:的)?\s*(?:模型|参数)|(?:能|可以)(?:跑|训|训练|微调|推理|部署|放)(?:得下|得动)?\s*多大(?:的)?\s*(?:模型|参数)"
            r"|多大(?:的)?\s*(?:模型|参数量)|模型\s*最大(?:能)?\s*(?:多大|多少)"
        ),
    ),
    (
        "batch",
        rx.compile(
            rf"{L}(?:max(?:imum)?|largest|biggest|highest|how{SEP}(?:big|large|high)){SEP}(?:a{SEP}|of{SEP}a{SEP})?(?:possible{SEP})?(?:micro{SEP})?(?:batch|bs|mbs){R}"
            rf"|{L}(?:micro{SEP})?batch(?:{SEP}size)?{SEP}(?:can|could){R}|{L}how{SEP}many{SEP}(?:concurrent|simultaneous|parallel){SEP}(?:users|requests|sequences|streams|sessions|chats){R}"
            rf"|{L}(?:most|max(?:imum)?){SEP}(?:concurrent|simultaneous|parallel){SEP}(?:users|requests|sequences|streams|sessions|chats)?{R}|{L}max{SEP}(?:concurrency|num{SEP}seqs){R}"
            r"|最大\s*(?:的)?\s*(?:micro\s*)?(?:batch|批次|批量|bs)|(?:batch|批次|批量|bs)\s*(?:size)?\s*(?:最大|最多)|(?:batch|批次|批量|bs)\s*(?:size)?\s*(?:能|可以)\s*(?:开|设|调|跑)?\s*(?:到)?\s*(?:多大|多少|几)"
            r"|(?:最多|能|可以)\s*(?:支持|扛|撑|跑|同时)?\s*(?:多少|几)\s*(?:路|个|条)?\s*(?:并发|请求|用户|序列)|并发\s*(?:数)?\s*(?:最多|能)?\s*(?:有|到|开)?\s*多少|最多\s*(?:能)?\s*同时"
        ),
    ),
    (
        "context",
        rx.compile(
            rf"{L}(?:max(?:imum)?|longest|biggest|largest|how{SEP}(?:long|much)){SEP}(?:a{SEP}|of{SEP}a{SEP})?(?:possible{SEP})?(?:context|ctx|sequence|seq|prompt|input)(?:{SEP}(?:len|length|window|size))?{R}"
            rf"|{L}max{SEP}(?:model{SEP})?len{R}|{L}how{SEP}long{SEP}can{SEP}(?:the{SEP}|my{SEP})?(?:context|ctx|prompt|sequence)"
            rf"|{L}(?:max(?:imum)?|largest|highest|biggest){SEP}(?:num{SEP}ctx|n{SEP}ctx|ctx{SEP}size|context{SEP}size){R}"
            r"|(?:num[\s_]*ctx|n[\s_]*ctx|max[\s_]*model[\s_]*len)\s*(?:最大|最多|能设|能开|可以设)|{L}num{SEP}ctx{R}.*(?:max|how|largest|highest)|{L}how{SEP}many{SEP}tokens{SEP}(?:of{SEP}context|can|could|per{SEP}sequence|fit)"
            r"|最长(?:的)?\s*(?:上下文|序列|context|输入|文本)|最大(?:的)?\s*(?:上下文|context|序列长度|序列|长度)|(?:上下文|context|序列)\s*(?:长度)?\s*(?:最长|最多|最大)"
            rf"|(?:上下文|context|序列)\s*(?:长度)?\s*(?:能|可以)?\s*(?:开|撑|跑|设)?\s*(?:到)?\s*{_NUM}|(?:能|可以)\s*(?:跑|开|撑)\s*多长"
        ),
    ),
)

_MIN_GPUS = rx.compile(
    rf"{L}how{SEP}many{SEP}(?:\w+{SEP}){{0,3}}(?:gpus?|cards?|nodes?|a100s?|h100s?|h800s?|h200s?|h20s?|4090s?|3090s?|l40s?|a800s?|910bs?|v100s?|a6000s?|t4s?)(?:{SEP}\w+)?{SEP}(?:do|would|will|to|are|is|should|must|i|we|at{SEP}least|minimum){R}"
    rf"|{L}how{SEP}many{SEP}(?:\w+{SEP}){{0,3}}(?:gpus|cards){R}|{L}how{SEP}many{SEP}(?:would|do|will|should){SEP}(?:i|we){SEP}need{R}|{L}(?:min(?:imum)?|fewest|least){SEP}(?:number{SEP}of{SEP})?(?:[\w.]+{SEP}){{0,2}}(?:gpus?|cards?|(?:[a-z]+)?\d{{2,4}}s){R}"
    r"|(?:需要|要|得)(?:用)?\s*(?:几|多少)\s*(?:张|块|台|个)|(?:几|多少)\s*(?:张|块)\s*(?:卡|显卡)?\s*(?:才|够|能)|最少\s*(?:需要|要|得|用)?\s*(?:几|多少)\s*(?:张|块)?|至少\s*(?:需要|要|得)?\s*(?:几|多少)\s*(?:张|块)"
)


@dataclass
class Inquiry:
    """What the question asks besides the verdict: an inverse search or a comparison."""

    kind: str  # max, min or compare
    search: str | None = None  # max/min: which search (module docstring)
    options: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # compare: (label, changes)
    compared: str | None = None  # compare: the field compared (task, weight_dtype, zero_stage, ...)


def read_inquiry(low: str) -> Inquiry | None:
    """The inverse question or comparison in `low` (normalised), or None for a forward question."""
    compared = read_comparison(low)
    if compared is not None:
        return compared
    if _MIN_GPUS.search(low):
        return Inquiry("min", "gpus")
    for search, pattern in _MAX:
        if pattern.search(low):
            return Inquiry("max", search)
    return None


# --- comparisons ------------------------------------------------------------------------------------

_JOIN = r"\s*(?:\bvs\.?|\bversus\b|\bor\b|\bcompared?\s+(?:to|with)\b|\bagainst\b|还是|或者|或|对比|比较|相比|vs|和|与|跟|，|,|/)\s*"
_COMPARE_WORD = rx.compile(
    rf"{L}(?:vs\.?|versus|or|compare[sd]?|compared|comparison|against|better|which){R}|还是|或者|对比|比较|相比|哪个|哪种|区别|差多少|差别|开不开|要不要|用不用|vs"
)

_A, _Z = r"(?<![a-z0-9_])", r"(?![a-z0-9_])"
# category -> [(pattern, label, changes)], matched anywhere; two distinct values make a comparison
_TASK = [
    (
        rf"{_A}full{SEP}(?:fine{SEP}?tun\w*|ft|param\w*|parameter|weights?|training){_Z}|{_A}full(?=\s*(?:vs|or|还是|/|,|和))"
        rf"|(?:vs\.?|or|还是|和)\s*full{_Z}|全参(?:数)?(?:微调)?|全量(?:微调)?",
        "full fine-tune",
        {"task": "full_finetune", "weight_dtype": None, "lora_rank": None},
    ),
    (rf"{_A}q{SEP}lora{_Z}", "QLoRA", {"task": "qlora", "weight_dtype": None}),
    (rf"{_A}lora{_Z}", "LoRA", {"task": "lora", "weight_dtype": None}),
]
_FORMAT_NAMES = [
    *(
        "q8_0",
        "q6_k",
        "q5_k_m",
        "q5_k_s",
        "q5_1",
        "q5_0",
        "q4_k_m",
        "q4_k_s",
        "q4_1",
        "q4_0",
        "iq4_nl",
        "iq4_xs",
    ),
    *("q3_k_l", "q3_k_m", "q3_k_s", "q2_k", "iq3_m", "iq3_xxs", "iq2_m", "iq2_xs", "iq1_m"),
    *("fp8", "int8", "int4", "nf4", "bf16", "fp16", "fp32"),
]
_FORMAT = [
    (rf"{_A}{re.escape(n)}{_Z}", n.upper() if "_" in n else n, {"weight_dtype": n}) for n in _FORMAT_NAMES
]
_FORMAT += [
    (rf"{_A}awq{_Z}", "AWQ", {"weight_dtype": "int4", "quant_method": "awq"}),
    (rf"{_A}gptq{_Z}", "GPTQ", {"weight_dtype": "int4", "quant_method": "gptq"}),
    (rf"{_A}(?:8{SEP}bit|int{SEP}8){_Z}", "8-bit", {"weight_dtype": "int8"}),
    (rf"{_A}(?:4{SEP}bit){_Z}", "4-bit", {"weight_dtype": "int4"}),
]
_ZERO = [(rf"{_A}zero{SEP}(?:stage{SEP})?{k}{_Z}", f"ZeRO-{k}", {"zero_stage": k}) for k in range(4)]
_ZERO += [
    (rf"{_A}fsdp{_Z}", "FSDP", {"zero_stage": 3}),
    (rf"{_A}ddp{_Z}", "DDP", {"zero_stage": 0}),
]
_ENGINE = [
    (rf"{_A}vllm{_Z}", "vLLM", {"engine": "vllm"}),
    (rf"{_A}sglang{_Z}", "SGLang", {"engine": "sglang"}),
    (rf"{_A}llama{SEP}\.?{SEP}cpp{_Z}", "llama.cpp", {"engine": "llama.cpp"}),
    (rf"{_A}ollama{_Z}", "Ollama", {"engine": "ollama"}),
    (rf"{_A}(?:hf{SEP})?transformers{_Z}", "transformers", {"engine": "transformers"}),
]
_CHECKPOINTING = [
    (
        rf"{_A}(?:without|no|w/o|disable[sd]?){SEP}(?:gradient{SEP}|activation{SEP})?(?:checkpointing|recompute|recomputation){_Z}"
        rf"|{_A}(?:gradient{SEP})?checkpointing{SEP}off{_Z}|{_A}off{_Z}|不开(?:启)?\s*(?:梯度检查点|重计算|gradient checkpointing)|关(?:闭)?\s*(?:梯度检查点|重计算)|不开",
        "without checkpointing",
        {"gradient_checkpointing": False, "recompute": None},
    ),
    (
        rf"{_A}(?:with|enable[sd]?|use){SEP}(?:gradient{SEP}|activation{SEP})?(?:checkpointing|recompute|recomputation){_Z}"
        rf"|{_A}(?:gradient{SEP})?checkpointing{SEP}on{_Z}|{_A}on{_Z}|(?<!不)开(?:启)?\s*(?:梯度检查点|重计算|gradient checkpointing)|(?<!不)开",
        "with checkpointing",
        {"gradient_checkpointing": True, "recompute": None},
    ),
]
_CHECKPOINT_WORD = rx.compile(r"checkpointing|recompute|recomputation|梯度检查点|重计算|检查点")
_CATEGORIES: tuple[tuple[str, list[tuple[str, str, dict[str, Any]]]], ...] = (
    ("task", _TASK),
    ("weight_dtype", _FORMAT),
    ("zero_stage", _ZERO),
    ("engine", _ENGINE),
)
_COMPILED = {name: [(re.compile(p), label, ch) for p, label, ch in items] for name, items in _CATEGORIES}
_CHECKPOINT_COMPILED = [(re.compile(p), label, ch) for p, label, ch in _CHECKPOINTING]


def _options(
    low: str, items: list[tuple[re.Pattern[str], str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any]]]:
    """The distinct options of one category in the order they are first named (a span taken once)."""
    found: list[tuple[int, str, dict[str, Any]]] = []
    taken: list[tuple[int, int]] = []
    for pattern, label, changes in items:
        for m in pattern.finditer(low):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), label, changes))
    seen: dict[str, tuple[int, dict[str, Any]]] = {}
    for start, label, changes in sorted(found, key=lambda t: t[0]):
        key = repr(sorted(changes.items()))
        if key not in seen:
            seen[key] = (start, {"_label": label, **changes})
    return [(ch.pop("_label"), ch) for _, ch in seen.values()]


def _chunk_options(low: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """GPUs or models named on each side of the comparison words: one option per distinct one."""
    out: list[tuple[str, dict[str, Any]]] = []
    for chunk in re.split(_JOIN, low):
        if kind == "gpu":  # "1 x H100 vs 2 x 4090": a count said with a card is part of the option
            found = find_gpu(chunk)
            got = found.gpu
            changes: dict[str, Any] = {"gpu": got}
            if found.count and got:
                changes["num_gpus"] = found.count
                got = f"{found.count} x {got}"
        else:
            model = find_model(chunk)
            got = model.value if model else None
            changes = {"model": got, "architecture": None, "params": None}
        if got and all(o[0] != got for o in out):
            out.append((got, changes))
    return out


MAX_OPTIONS = 6  # the first six options named: a table a chat message (and Slack's table block) can show


def read_comparison(low: str) -> Inquiry | None:
    """A comparison: comparison words and two or more distinct options of one field (MAX_OPTIONS at most)."""
    found = _comparison(low)
    if found is not None:
        found.options = found.options[:MAX_OPTIONS]
    return found


def _comparison(low: str) -> Inquiry | None:
    if not _COMPARE_WORD.search(low):
        return None
    if _CHECKPOINT_WORD.search(low):
        options = _options(low, _CHECKPOINT_COMPILED)
        if len(options) >= 2:
            return Inquiry("compare", options=options, compared="gradient_checkpointing")
    for name, _ in _CATEGORIES:
        options = _options(low, _COMPILED[name])
        if len(options) >= 2:
            return Inquiry("compare", options=options, compared=name)
    for kind in ("gpu", "model"):
        options = _chunk_options(low, kind)
        if len(options) >= 2:
            return Inquiry("compare", options=options, compared=kind)
    return None
