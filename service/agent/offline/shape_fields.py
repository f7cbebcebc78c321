"""Shapes a question states: micro-batch, global batch, concurrency, sequence and generation lengths, samples per
prompt, vLLM memory share, images, the serving engine."""

from __future__ import annotations

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, QUANT_CONTEXT, Fields, K
from service.agent.offline.mentions import SEP, L, R
from service.agent.offline.numbers import token_count

# --- shapes: batch, sequence, generation -----------------------------------------------------------------

_BATCH = rx.compile(
    rf"{L}(?:per{SEP}device{SEP}train{SEP}batch{SEP}size|micro{SEP}batch{SEP}size|micro{SEP}batch|mbs|batch{SEP}size|batchsize|batch|bs)"
    rf"(?:{SEP}per{SEP}(?:gpu|device))?{IS}(-?\d+){R}"  # "-1" kept: a clear error, not a silent default
    rf"|(?:批大小|批量大小|批次大小|批量|批次|batch\s*大小|每卡\s*batch)\s*(?:为|=|是|:|设为)?\s*(-?\d+)"
    rf"|{L}(\d+){SEP}(?:sequences|samples){SEP}per{SEP}(?:batch|step)"
)
_GLOBAL_BATCH = rx.compile(
    rf"{L}(?:global|total|effective){SEP}batch(?:{SEP}size)?{IS}(\d+){R}|(?:全局|总)\s*batch\s*(?:size)?\s*(?:为|=|是)?\s*(\d+)"
)
_CONCURRENCY = rx.compile(
    rf"{L}(\d+){SEP}(?:concurrent|simultaneous|parallel){SEP}(?:users|requests|sequences|streams|sessions)?"
    rf"|{L}(?:concurrency|max{SEP}num{SEP}seqs){IS}(\d+){R}|(\d+)\s*(?:路)?\s*并发|并发\s*(?:数|量)?\s*(?:为|=|是)?\s*(\d+)"
)
_SEQ_KEY = rx.compile(
    rf"{L}(?:cutoff{SEP}len|max{SEP}seq(?:uence)?{SEP}len(?:gth)?|max{SEP}model{SEP}len|max{SEP}length|seq{SEP}len(?:gth)?"
    rf"|sequence{SEP}length|sequence|seqlen|seq|context{SEP}(?:length|window|len)|context|ctx|max{SEP}len)"
    rf"{IS}{K}(?![0-9a-z])"
    rf"|(?:上下文长度|上下文|序列长度|序列|文本长度|长度|输入长度)\s*(?:为|=|是|:|到|设为|达到)?\s*{K}(?![0-9a-z])"
)
_SEQ_POST = rx.compile(
    rf"{L}{K}{SEP}(?:tokens?|token{SEP}(?:context|sequences?)|context|ctx|seq(?:uence)?s?(?:{SEP}len(?:gth)?)?|long{SEP}context)(?![0-9a-z])"
    rf"|{L}{K}\s*(?:的)?\s*(?:上下文|长度|长文本|token|序列|tokens)"
)
_SAMPLES = (
    r"(?:responses?|answers?|samples?|completions?|generations?|outputs?|candidates?|rollouts?|sequences?)"
)
_NEW_TOKENS = rx.compile(
    rf"{L}(?:max{SEP}new{SEP}tokens|max{SEP}tokens|generat(?:e|ing)|output(?:ting)?|new{SEP}tokens){IS}(?:up{SEP}to{SEP})?{K}(?![0-9a-z])(?!{SEP}{_SAMPLES})"
    rf"|{L}{K}{SEP}(?:new|output|generated){SEP}tokens|生成\s*(?:长度)?\s*(?:为|=)?\s*{K}\s*(?:个)?\s*(?:token|tokens)"
    rf"|(?:生成长度|输出长度|最大生成长度|最多生成)\s*(?:为|=|是)?\s*{K}(?![0-9a-z])"
)
_BARE_K = rx.compile(rf"{L}(\d+(?:\.\d+)?k){R}")


_GENERATIONS = rx.compile(
    rf"{L}(?:num{SEP}generations|generations|group{SEP}size|g){IS}(\d+){R}|{L}(\d+){SEP}(?:generations|samples|completions|responses|rollouts|answers){SEP}(?:per|for{SEP}each|each){SEP}(?:prompt|question){R}|{L}(\d+){SEP}generations{R}"
    rf"|{L}generat(?:e|ing){SEP}(\d+){SEP}{_SAMPLES}{R}"
    rf"|每个?\s*(?:prompt|问题|提示)\s*(?:采样|生成)?\s*(\d+)|(\d+)\s*(?:个|条)\s*(?:回复|回答|答案|样本|采样|候选|输出|response)"
)
_GPU_UTILIZATION = rx.compile(
    rf"{L}gpu{SEP}memory{SEP}utili[sz]ation{IS}(0?\.\d+|1(?:\.0)?){R}|显存利用率\s*(?:为|=)?\s*(0?\.\d+)"
)


def shape_fields(low: str) -> Fields:
    out: Fields = {}
    gb = _GLOBAL_BATCH.search(low)
    work = low
    if gb:
        out["global_batch_size"] = int(next(g for g in gb.groups() if g))
        work = work[: gb.start()] + " " * (gb.end() - gb.start()) + work[gb.end() :]
    b = _BATCH.search(work)
    if b:
        out["batch_size"] = int(next(g for g in b.groups() if g))
    else:
        c = _CONCURRENCY.search(work)
        if c:
            out["batch_size"] = int(next(g for g in c.groups() if g))
    nt = _NEW_TOKENS.search(work)
    if nt:
        value = token_count(next(g for g in nt.groups() if g))
        if value:
            out["max_new_tokens"] = value
        work = work[: nt.start()] + " " * (nt.end() - nt.start()) + work[nt.end() :]
    s = _SEQ_KEY.search(work) or _SEQ_POST.search(work)
    if s:
        value = token_count(next(g for g in s.groups() if g))
        if value:
            out["seq_len"] = value
    else:
        k = _BARE_K.search(work)
        if k:
            value = token_count(k.group(1))
            if value and value >= 512:
                out["seq_len"] = value
    g = _GENERATIONS.search(low)
    if g and "group" in g.group(0) and QUANT_CONTEXT.search(low):
        g = None  # GPTQ/AWQ "group size 128": the quantisation group, not GRPO's
    if g:
        out["num_generations"] = int(next(x for x in g.groups() if x))
    u = _GPU_UTILIZATION.search(low)
    if u:
        out["gpu_memory_utilization"] = float(u.group(1) or u.group(2))
    im = _IMAGES.search(low)
    if im:
        out["images"] = int(next(x for x in im.groups() if x))
    e = _ENGINE.search(low)
    if e:
        out["engine"] = next(name for name, hit in zip(_ENGINE_NAMES, e.groups(), strict=True) if hit)
    return out


# images per request for vision-language models: "2 images", "3张图片"
_IMAGES = rx.compile(
    rf"{L}(\d+){SEP}(?:images?|pictures?|photos?){R}|(\d+)\s*(?:张|幅)\s*(?:图片|图像|图|照片)"
)
# the serving engine named in the question (tools.serving.ENGINES; HF generate otherwise)
_ENGINE_NAMES = ("vllm", "sglang", "llama.cpp", "ollama")
_ENGINE = rx.compile(
    rf"{L}(vllm){R}|{L}(sglang){R}|{L}(llama[\.\-_ ]?cpp|llama-server|gguf|lm{SEP}studio|koboldcpp){R}|{L}(ollama){R}"
)
