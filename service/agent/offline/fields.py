"""Scenario fields stated in free text, one small extractor per field family.

Each extractor reads the normalised lower-case question and returns only what the user
actually said (a dict of Scenario fields); nothing here fills a default -- the estimator
does that and lists it as an assumption.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import SEP, L, R
from service.agent.offline.numbers import float_value, plain_int, token_count
from tools.rules.gguf import GGUF_DTYPES, exl2_bits, gguf_file_type
from tools.scenario import RL_TASKS

Fields = dict[str, Any]
Extractor = Callable[[str], Fields]

_NUM = r"(\d+(?:\.\d+)?)"
_K = r"(\d+(?:\.\d+)?\s*k?)"
_IS = r"\s*(?:of|is|=|:|to|为|是|设为|设置为|设成|改成|改为|换成|到|取)?\s*"
_NEG = rx.compile(
    r"(?:without|w/o|no|not|never|disable[ds]?|turn(?:ed)?\s+off|switch(?:ed)?\s+off|not\s+using|don'?t\s+use"
    r"|do\s+not\s+use|skip(?:ping)?|不开启?|关闭|关掉|关了|不用|不使用|没开|没有|不加|不要|别用?|不需要|禁用|无|不)\s*(?:the\s+|any\s+)?$"
)
# "offload disabled", "ckpt off", "offload=false", "offload: none", "offload关掉", "LoRA不要"
_NEG_AFTER = rx.compile(
    r"^\s*(?:=|:)\s*(?:false|off|0|disabled|none|no)(?![a-z0-9])|^\s*(?:is\s+|are\s+)?(?:disabled|off|not\s+used|(?:turned|switched)\s+off)(?![a-z0-9])"
    r"|^\s*(?:关闭|关掉|关了|禁用)"
)


def _negated(low: str, start: int, end: int | None = None) -> bool:
    """The mention at low[start:end] is negated: 'without offload', '不开offload', 'offload disabled'."""
    if _NEG.search(low[max(0, start - 16) : start]):
        return True
    return end is not None and bool(_NEG_AFTER.search(low[end : end + 14]))


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
    ("ppo", rx.compile(rf"{L}(?:ppo|rlhf){R}")),
    ("grpo", rx.compile(rf"{L}grpo{R}")),
    ("dpo", rx.compile(rf"{L}dpo{R}")),
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


def _live(pattern: re.Pattern[str], low: str) -> re.Match[str] | None:
    """The first mention of `pattern` that is not negated ('no LoRA', '不要LoRA', 'without qlora')."""
    return next((m for m in pattern.finditer(low) if not _negated(low, m.start(), m.end())), None)


# "can I LoRA it or do I have to go QLoRA?": the first of two alternatives is what is asked
_ALTERNATIVE = rx.compile(rf"{L}or{R}|{L}instead{SEP}of{R}|还是|或者|或")


def _negated_any(pattern: re.Pattern[str], low: str) -> bool:
    return any(_negated(low, m.start(), m.end()) for m in pattern.finditer(low))


_TRAINING_WORD = rx.compile(r"微调|fine|tun|ft|sft|train|训练")
_LOAD_IN_BITS = rx.compile(rf"{L}load{SEP}in{SEP}(?:4|8){SEP}bit{R}")
_LOAD_IN_4BIT_OR_NF4 = rx.compile(rf"{L}load{SEP}in{SEP}4{SEP}bit{R}|{L}nf4{R}")
_DORA = rx.compile(rf"{L}dora{R}")


def task_fields(low: str) -> Fields:
    out: Fields = {}
    for task, pattern in _TASK_RULES:
        m = _live(pattern, low)
        if m:
            out["task"] = task
            if task == "qlora":
                lora = _live(LORA_MENTION, low)
                if lora and lora.start() < m.start() and _ALTERNATIVE.search(low, lora.end(), m.start()):
                    out["task"] = "lora"
            break
    if out.get("task") in ("lora", "qlora") and FULL_MENTION.search(low) and _negated_any(LORA_MENTION, low):
        out["task"] = "full_finetune"
    if "task" not in out and _negated_any(LORA_MENTION, low) and _TRAINING_WORD.search(low):
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


# --- precision, quantisation, optimizer -------------------------------------------------------------------

# "fp32 master weights" describes the recipe (mixed), not the dtype of the weights the model runs in.
_FP32_MASTER = rx.compile(
    rf"{L}(?:fp32|float32){SEP}master(?:{SEP}(?:weights?|copy|params))?{R}|{L}master{SEP}(?:weights?|copy){SEP}(?:in{SEP})?fp32{R}"
    r"|fp32\s*(?:的)?\s*主(?:权重|副本|参数)"
)

_DTYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nf4", rx.compile(rf"{L}nf4{R}|{L}load{SEP}in{SEP}4{SEP}bit{R}")),
    (
        "int4",
        rx.compile(rf"{L}(?:int4|w4a16|4{SEP}bit|4{SEP}bits|four{SEP}bit){R}|4\s*位|四位|4比特"),
    ),
    ("fp8", rx.compile(rf"{L}(?:fp8|float8|e4m3|w8a8{SEP}fp8){R}(?!{SEP}kv)")),
    (
        "int8",
        rx.compile(
            rf"{L}(?:int8|w8a16|8{SEP}bit|load{SEP}in{SEP}8{SEP}bit|eight{SEP}bit){R}(?!{SEP}(?:adam|optim|paged))|8\s*位|八位|8比特"
        ),
    ),
    ("bf16", rx.compile(rf"{L}(?:bf16|bfloat16|bfloat{SEP}16){R}")),
    ("fp16", rx.compile(rf"{L}(?:fp16|float16|half{SEP}precision|half){R}|半精度")),
    ("fp32", rx.compile(rf"{L}(?:fp32|float32|full{SEP}precision|single{SEP}precision){R}|单精度|全精度")),
)


# Training precision recipes (tools/rules/precision.py RECIPES), most specific wording first. Plain "bf16" is
# not a recipe: it names the weight dtype, and the estimator picks the recipe for the task.
_RECIPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("megatron", rx.compile(rf"{L}megatron{R}")),
    ("bf16", rx.compile(rf"{L}pure{SEP}bf16{R}|纯\s*bf16|{L}bf16{SEP}(?:states|optimizer){R}")),
    # torch.autocast over fp32 weights; HF Trainer's bf16=True/fp16=True is this (the model keeps its
    # fp32 parameters, transformers Trainer -> accelerate autocast)
    (
        "amp",
        rx.compile(
            rf"{L}(?:amp|autocast|torch{SEP}amp){R}|{L}fp32{SEP}weights?{SEP}(?:with|\+|and){SEP}(?:bf16|fp16)"
            rf"|{L}(?:--)?(?:bf16|fp16)\s*(?:=|:)\s*true{R}"
            rf"|{L}(?:hf|huggingface|hugging{SEP}face|transformers){SEP}trainer{R}.*{L}(?:bf16|fp16){R}"
        ),
    ),
    # 16-bit weights + fp32 master copy in the optimizer: DeepSpeed's bf16/fp16 config (ZeRO paper)
    (
        "mixed",
        rx.compile(
            rf"{L}mixed{SEP}precision{R}|混合精度|{_FP32_MASTER.pattern}"
            rf"|{L}deepspeed{R}[^,，。;；]{{0,40}}{L}(?:bf16|fp16){R}|{L}(?:bf16|fp16){R}[^,，。;；]{{0,20}}{L}deepspeed{R}"
        ),
    ),
    ("fp32", rx.compile(rf"{L}fp32{SEP}(?:training|train){R}|单精度训练")),
)


# "kv cache 用 fp8", "fp8 kv cache", "--kv-cache-dtype fp8", "KV缓存量化到int8", "kv in fp8": the KV cache's dtype,
# never the weights'
_KV_WORD = rf"(?:kv{SEP}cache(?:{SEP}dtype)?|kv|k/v{SEP}cache|kv\s*缓存|kv-cache-dtype)"
_KV_LINK = rf"{SEP}(?:in|dtype|=|:|to|as|at|with|quanti[sz]ed{SEP}(?:to|in|as)?|用|使用|采用|为|是|设为|改成|改为|换成|量化(?:为|成|到)?|存成|存为)?"
_KV_DTYPE = rx.compile(
    rf"{L}(fp8|int8|fp16|bf16|fp8_e4m3|fp8_e5m2){SEP}(?:的\s*)?{_KV_WORD}|{L}{_KV_WORD}{_KV_LINK}\s*(fp8|int8|fp16|bf16)"
)


_QUANT_METHODS = tuple((method, rx.compile(rf"{L}{method}{R}")) for method in ("gptq", "awq"))
_BNB = rx.compile(rf"{L}(?:bnb|bitsandbytes|load{SEP}in{SEP}(?:4|8){SEP}bit){R}")
_OPTIMIZER_BITS = rx.compile(
    rf"{L}(?:paged{SEP})?(?:adamw?|adam){SEP}(?:8|32){SEP}bits?{R}|{L}(?:8|32){SEP}bits?{SEP}(?:paged{SEP})?adamw?{R}"
    rf"|(?:8|八)\s*位\s*(?:的)?\s*(?:adamw?|优化器)"
)
_EXL2 = rx.compile(rf"{L}(?:exl2|exllama(?:v2)?|tabby(?:api)?){R}|bpw")
_Q8 = rx.compile(rf"{L}q8{R}")
_Q4 = rx.compile(rf"{L}q4{R}")
_DOUBLE_QUANT = rx.compile(rf"{L}double{SEP}quant|双重量化")
_GROUP_SIZE = rx.compile(rf"{L}group{SEP}(?:size)?{_IS}(\d+){R}")


def dtype_fields(low: str) -> Fields:
    out: Fields = {}
    # Quantised weight formats name their method too.
    for method, pattern in _QUANT_METHODS:
        if pattern.search(low):
            out["quant_method"] = method
    if _BNB.search(low):
        out["quant_method"] = "bnb"
    cleaned = _OPTIMIZER_BITS.sub(" ", low)
    kv = _KV_DTYPE.search(cleaned)
    if kv:
        out["kv_dtype"] = next(g for g in kv.groups() if g)
        cleaned = _KV_DTYPE.sub(" ", cleaned)
    cleaned = _FP32_MASTER.sub(" ", cleaned)
    bits = exl2_bits(cleaned)
    gguf = gguf_file_type(cleaned)
    if bits is not None and _EXL2.search(cleaned):
        out["weight_dtype"], out["weight_bits"] = "exl2", bits
    elif gguf:
        out["weight_dtype"] = gguf
    elif _Q8.search(cleaned):
        out["weight_dtype"] = "q8_0"  # llama.cpp / ollama shorthand for the Q8_0 GGUF
    elif _Q4.search(cleaned):
        out["weight_dtype"] = "q4_0"
    for dtype, pattern in _DTYPE_RULES:
        if "weight_dtype" in out:
            break
        if pattern.search(cleaned):
            out["weight_dtype"] = dtype
            break
    if out.get("quant_method") in ("gptq", "awq") and "weight_dtype" not in out:
        out["weight_dtype"] = "int4"
    if _DOUBLE_QUANT.search(low):
        out["double_quant"] = True
    g = _GROUP_SIZE.search(low)
    if g:
        out["quant_group_size"] = int(g.group(1))
    recipe = next((name for name, pattern in _RECIPE_RULES if pattern.search(low)), None)
    if recipe:
        out["precision_recipe"] = recipe
    if out.get("weight_dtype") in GGUF_DTYPES or out.get("weight_dtype") == "exl2":
        out.pop("quant_method", None)  # the format names its own storage
    return out


_OPTIMIZER_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "paged_adamw_8bit",
        rx.compile(
            rf"{L}paged{SEP}adamw?{SEP}8{SEP}bits?{R}|{L}paged{SEP}8{SEP}bits?{SEP}adamw?{R}|分页\s*(?:的)?\s*8\s*位\s*adam"
        ),
    ),
    ("paged_adamw", rx.compile(rf"{L}paged{SEP}adamw?(?:{SEP}32{SEP}bits?)?{R}")),
    (
        "adamw_8bit",
        rx.compile(
            rf"{L}adamw?{SEP}8{SEP}bits?{R}|{L}8{SEP}bits?{SEP}adamw?{R}|{L}bnb{SEP}adamw?{R}|8\s*位\s*adam"
        ),
    ),
    (
        "sgd_momentum",
        rx.compile(rf"{L}sgd{R}.*{L}momentum{R}|{L}momentum{SEP}sgd{R}|{L}sgd{SEP}with{SEP}momentum"),
    ),
    ("sgd", rx.compile(rf"{L}sgd{R}")),
    ("adafactor", rx.compile(rf"{L}adafactor{R}")),
    ("lion", rx.compile(rf"{L}lion{R}")),
    ("adamw", rx.compile(rf"{L}adamw?(?:{SEP}torch(?:{SEP}fused)?)?{R}")),
)


def optimizer_fields(low: str) -> Fields:
    for name, pattern in _OPTIMIZER_RULES:
        if pattern.search(low):
            return {"optimizer": name}
    return {}


# --- LoRA --------------------------------------------------------------------------------------------

_TARGETS = rx.compile(
    rf"{L}((?:q|k|v|o|gate|up|down|out)_proj|qkv_proj|gate_up_proj|c_attn|query_key_value){R}"
)


_LORA_RANK = rx.compile(
    rf"{L}(?:lora{SEP})?(?:rank|lora_r){_IS}(\d+){R}|{L}r\s*=\s*(\d+){R}|{L}r(\d+){R}(?={SEP}lora)|秩\s*(?:为|=|是|改成|改为|设为|设成|换成|用)?\s*(\d+)"
)
_ALL_LINEAR = rx.compile(
    rf"{L}all{SEP}linear(?:{SEP}layers)?{R}|所有线性层|全部线性层|全线性层|{L}all{SEP}(?:the{SEP})?(?:projection|proj|linear){SEP}(?:layers|modules)"
)
_LORA_ALPHA = rx.compile(rf"{L}(?:lora{SEP})?alpha{_IS}{_NUM}")
_LORA_DROPOUT = rx.compile(rf"{L}(?:lora{SEP})?dropout{_IS}(\d*\.\d+|0){R}")
_LAST_LAYERS = rx.compile(rf"{L}(?:last|top)\s+(\d+)\s+layers{R}|最后\s*(\d+)\s*层")


def lora_fields(low: str) -> Fields:
    out: Fields = {}
    r = _LORA_RANK.search(low)
    if r:
        out["lora_rank"] = int(next(g for g in r.groups() if g))
    if _ALL_LINEAR.search(low):
        out["lora_targets"] = ["all-linear"]
    else:
        targets = list(dict.fromkeys(m.group(1) for m in _TARGETS.finditer(low)))
        if targets:
            out["lora_targets"] = targets
    a = _LORA_ALPHA.search(low)
    if a:
        out["lora_alpha"] = float(a.group(1))
    d = _LORA_DROPOUT.search(low)
    if d:
        out["lora_dropout"] = float(d.group(1))
    f = _LAST_LAYERS.search(low)
    if f:
        out["trainable_layers"] = int(f.group(1) or f.group(2))
    return out


# --- shapes: batch, sequence, generation -----------------------------------------------------------------

_BATCH = rx.compile(
    rf"{L}(?:per{SEP}device{SEP}train{SEP}batch{SEP}size|micro{SEP}batch{SEP}size|micro{SEP}batch|mbs|batch{SEP}size|batchsize|batch|bs)"
    rf"(?:{SEP}per{SEP}(?:gpu|device))?{_IS}(-?\d+){R}"  # "-1" kept: a clear error, not a silent default
    rf"|(?:批大小|批量大小|批次大小|批量|批次|batch\s*大小|每卡\s*batch)\s*(?:为|=|是|:|设为)?\s*(-?\d+)"
    rf"|{L}(\d+){SEP}(?:sequences|samples){SEP}per{SEP}(?:batch|step)"
)
_GLOBAL_BATCH = rx.compile(
    rf"{L}(?:global|total|effective){SEP}batch(?:{SEP}size)?{_IS}(\d+){R}|(?:全局|总)\s*batch\s*(?:size)?\s*(?:为|=|是)?\s*(\d+)"
)
_CONCURRENCY = rx.compile(
    rf"{L}(\d+){SEP}(?:concurrent|simultaneous|parallel){SEP}(?:users|requests|sequences|streams|sessions)?"
    rf"|{L}(?:concurrency|max{SEP}num{SEP}seqs){_IS}(\d+){R}|(\d+)\s*(?:路)?\s*并发|并发\s*(?:数|量)?\s*(?:为|=|是)?\s*(\d+)"
)
_SEQ_KEY = rx.compile(
    rf"{L}(?:cutoff{SEP}len|max{SEP}seq(?:uence)?{SEP}len(?:gth)?|max{SEP}model{SEP}len|max{SEP}length|seq{SEP}len(?:gth)?"
    rf"|sequence{SEP}length|sequence|seqlen|seq|context{SEP}(?:length|window|len)|context|ctx|max{SEP}len)"
    rf"{_IS}{_K}(?![0-9a-z])"
    rf"|(?:上下文长度|上下文|序列长度|序列|文本长度|长度|输入长度)\s*(?:为|=|是|:|到|设为|达到)?\s*{_K}(?![0-9a-z])"
)
_SEQ_POST = rx.compile(
    rf"{L}{_K}{SEP}(?:tokens?|token{SEP}(?:context|sequences?)|context|ctx|seq(?:uence)?s?(?:{SEP}len(?:gth)?)?|long{SEP}context)(?![0-9a-z])"
    rf"|{L}{_K}\s*(?:的)?\s*(?:上下文|长度|长文本|token|序列|tokens)"
)
_SAMPLES = (
    r"(?:responses?|answers?|samples?|completions?|generations?|outputs?|candidates?|rollouts?|sequences?)"
)
_NEW_TOKENS = rx.compile(
    rf"{L}(?:max{SEP}new{SEP}tokens|max{SEP}tokens|generat(?:e|ing)|output(?:ting)?|new{SEP}tokens){_IS}(?:up{SEP}to{SEP})?{_K}(?![0-9a-z])(?!{SEP}{_SAMPLES})"
    rf"|{L}{_K}{SEP}(?:new|output|generated){SEP}tokens|生成\s*(?:长度)?\s*(?:为|=)?\s*{_K}\s*(?:个)?\s*(?:token|tokens)"
    rf"|(?:生成长度|输出长度|最大生成长度|最多生成)\s*(?:为|=|是)?\s*{_K}(?![0-9a-z])"
)
_BARE_K = rx.compile(rf"{L}(\d+(?:\.\d+)?k){R}")


_GENERATIONS = rx.compile(
    rf"{L}(?:num{SEP}generations|generations|group{SEP}size|g){_IS}(\d+){R}|{L}(\d+){SEP}(?:generations|samples|completions|responses|rollouts|answers){SEP}(?:per|for{SEP}each|each){SEP}(?:prompt|question){R}|{L}(\d+){SEP}generations{R}"
    rf"|{L}generat(?:e|ing){SEP}(\d+){SEP}{_SAMPLES}{R}"
    rf"|每个?\s*(?:prompt|问题|提示)\s*(?:采样|生成)?\s*(\d+)|(\d+)\s*(?:个|条)\s*(?:回复|回答|答案|样本|采样|候选|输出|response)"
)
_GPU_UTILIZATION = rx.compile(
    rf"{L}gpu{SEP}memory{SEP}utili[sz]ation{_IS}(0?\.\d+|1(?:\.0)?){R}|显存利用率\s*(?:为|=)?\s*(0?\.\d+)"
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
    rf"{L}(vllm){R}|{L}(sglang){R}|{L}(llama[\.\-_ ]?cpp|llama-server|gguf){R}|{L}(ollama){R}"
)


# --- activations ---------------------------------------------------------------------------------

_CKPT = rx.compile(
    rf"{L}(?:gradient|grad|activation){SEP}(?:checkpointing|checkpoint|ckpt|recomputation|recompute){R}|{L}gradient_checkpointing{R}"
    rf"|{L}(?:full{SEP})?recompute{R}|{L}recomputation{R}|梯度检查点|梯度checkpoint|重计算|激活检查点|{L}gc{R}"
)


_SELECTIVE_RECOMPUTE = rx.compile(rf"{L}selective{SEP}(?:activation{SEP})?recompute|选择性重计算")
_CKPT_OFF_AFTER = rx.compile(r"\s*(?:=|:)?\s*(?:false|off|0|disabled)|\s*(?:关|不开)")
_FLASH = rx.compile(
    rf"{L}(?:flash{SEP}attn|flash{SEP}attention(?:{SEP}\d)?|flashattention\d?|fa[23]|sdpa){R}"
)
_EAGER = rx.compile(
    rf"{L}eager(?:{SEP}attention)?{R}|{L}(?:without|no){SEP}flash|不用\s*flash|不开\s*flash|关闭\s*flash"
)


def activation_fields(low: str) -> Fields:
    out: Fields = {}
    sel = _SELECTIVE_RECOMPUTE.search(low)
    m = _CKPT.search(low)
    if sel:
        out["recompute"] = "selective"
    elif m:
        after = low[m.end() : m.end() + 12]
        off = _negated(low, m.start()) or _CKPT_OFF_AFTER.match(after)
        out["gradient_checkpointing"] = not off
    f = _FLASH.search(low)
    e = _EAGER.search(low)
    if e:
        out["attention"] = "eager"
    elif f:
        out["attention"] = "eager" if _negated(low, f.start()) else "flash"
    return out


# --- parallelism ----------------------------------------------------------------------------------


def _parallel_size(names: str) -> re.Pattern[str]:
    """'tp=2', 'tensor parallel 4', 'tp8': a parallel size stated for one of `names`."""
    return rx.compile(rf"{L}(?:{names}){_IS}(\d+){R}|{L}(?:{names})(\d+){R}")


_TP = _parallel_size(
    rf"tp|tensor{SEP}parallel(?:ism)?(?:{SEP}size)?|tensor{SEP}model{SEP}parallel(?:{SEP}size)?|张量并行|tensor_parallel_size"
)
_PP = _parallel_size(
    rf"pp|pipeline{SEP}parallel(?:ism)?(?:{SEP}size)?|流水线并行|流水并行|pipeline_parallel_size"
)
_DP = _parallel_size(rf"dp|data{SEP}parallel(?:ism)?(?:{SEP}size)?|数据并行")
_CP = _parallel_size(rf"cp|context{SEP}parallel(?:ism)?(?:{SEP}size)?|上下文并行")
_EP = _parallel_size(rf"ep|expert{SEP}parallel(?:ism)?(?:{SEP}size)?|专家并行")


def _par(low: str, pattern: re.Pattern[str]) -> int | None:
    m = pattern.search(low)
    return int(m.group(1) or m.group(2)) if m else None


_ZERO_STAGE = rx.compile(
    rf"{L}zero{SEP}(?:stage{SEP})?([0-3])(?:\+\+|{R})|{L}stage{SEP}([0-3]){R}(?=.*deepspeed)|deepspeed.*{L}stage{SEP}([0-3]){R}"
)
_ZERO_NAMED = rx.compile(rf"{L}(?:zero|deepspeed){R}(?!{SEP}(?:stage{SEP})?[0-3]|{SEP}offload|{SEP}infinity)")
_FSDP_FULL_SHARD = rx.compile(rf"{L}fsdp{R}(?!{SEP}shard_grad_op)|{L}full{SEP}shard{R}")
_SHARD_GRAD_OP = rx.compile(rf"{L}shard_grad_op{R}")
_SEQUENCE_PARALLEL = rx.compile(rf"{L}sequence{SEP}parallel(?:ism)?{R}|序列并行|{L}sp{R}")
_NVME = rx.compile(rf"{L}nvme{R}")
_OFFLOAD_PARAMS = rx.compile(
    rf"{L}offload(?:ing)?{SEP}(?:the{SEP})?(?:params|parameters|weights|model){R}|(?:参数|权重)\s*(?:卸载|offload)"
)
_OFFLOAD = rx.compile(
    rf"{L}(?:cpu|nvme){SEP}offload(?:ing)?|{L}offload(?:ing)?|{L}zero{SEP}offload|{L}zero{SEP}infinity|卸载|offload"
)


def parallel_fields(low: str) -> Fields:
    out: Fields = {}
    z = _ZERO_STAGE.search(low)
    nz = _ZERO_NAMED.search(low)
    if z:
        out["zero_stage"] = int(next(g for g in z.groups() if g))
    elif nz and _negated(low, nz.start(), nz.end()):
        out["zero_stage"] = 0  # "no ZeRO", "不用deepspeed": plain data parallel
    elif _FSDP_FULL_SHARD.search(low):
        out["zero_stage"] = 3
    elif _SHARD_GRAD_OP.search(low):
        out["zero_stage"] = 2
    tp, pp, dp, cp, ep = (_par(low, pattern) for pattern in (_TP, _PP, _DP, _CP, _EP))
    for key, value in (("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep)):
        if value:
            out[key] = value
    if dp:
        out["num_gpus"] = dp * (tp or 1) * (pp or 1) * (cp or 1)
    if _SEQUENCE_PARALLEL.search(low):
        out["sequence_parallel"] = True
    target = "nvme" if _NVME.search(low) else "cpu"
    params = _OFFLOAD_PARAMS.search(low)
    if params:
        out["offload_params"] = "none" if _negated(low, params.start(), params.end()) else target
    offload = list(_OFFLOAD.finditer(low))
    if offload:
        off = all(_negated(low, m.start(), m.end()) for m in offload)
        out["offload_optimizer"] = "none" if off else target
    return out


# --- things that do not change peak memory ------------------------------------------------------------


_EPOCHS = rx.compile(
    rf"{L}{_NUM}{SEP}epochs?{R}|{L}(?:num{SEP}train{SEP}epochs|num{SEP}epochs|epochs?){_IS}{_NUM}(?![0-9a-z])"
    rf"|(?:训练|跑)?\s*{_NUM}\s*(?:个)?\s*(?:epoch|轮)|(?:训练轮数|轮数|epoch数)\s*(?:为|=|是)?\s*{_NUM}"
)
_LEARNING_RATE = rx.compile(
    rf"{L}(?:learning{SEP}rate|lr){_IS}(\d+(?:\.\d+)?(?:e-?\d+)?){R}|学习率\s*(?:为|=|是|:)?\s*(\d+(?:\.\d+)?(?:e-?\d+)?)"
)
_GRAD_ACCUM = rx.compile(
    rf"{L}(?:gradient{SEP}accumulation(?:{SEP}steps)?|grad{SEP}accum(?:ulation)?(?:{SEP}steps)?|ga{SEP}steps|ga){_IS}(\d+){R}"
    rf"|{L}accumulat(?:e|ing){SEP}(?:over{SEP})?(\d+){SEP}(?:steps|micro{SEP}batches)|梯度累[积加](?:步数)?\s*(?:为|=|是|:|改成|改为|设为)?\s*(\d+)"
)
_WARMUP = rx.compile(rf"{L}warmup(?:{SEP}steps)?{_IS}(\d+){R}")


def no_effect_fields(low: str) -> Fields:
    out: Fields = {}
    e = _EPOCHS.search(low)
    if e:
        out["epochs"] = float(next(g for g in e.groups() if g))
    lr = _LEARNING_RATE.search(low)
    if lr:
        value = float_value(lr.group(1) or lr.group(2))
        if value is not None:
            out["learning_rate"] = value
    ga = _GRAD_ACCUM.search(low)
    if ga:
        out["gradient_accumulation_steps"] = int(next(g for g in ga.groups() if g))
    w = _WARMUP.search(low)
    if w:
        out["warmup_steps"] = int(w.group(1))
    return out


# --- stated shapes: "hidden 4096, 32 layers, 32 heads" build the architecture -------------------------------

_SHAPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "hidden_size",
        rx.compile(
            rf"{L}(?:hidden{SEP}(?:size|dim(?:ension)?)?|d{SEP}model|model{SEP}dim(?:ension)?|embedding{SEP}dim(?:ension)?){_IS}(\d{{3,6}}){R}"
            rf"|{L}(\d{{3,6}}){SEP}hidden{R}|隐藏层?(?:维度|大小)?\s*(?:为|=|是|:)?\s*(\d{{3,6}})|hidden\s*(?:为|=|是)\s*(\d{{3,6}})"
        ),
    ),
    (
        "num_hidden_layers",
        rx.compile(
            rf"(?<!last )(?<!top )(?<!first )(?<!final ){L}(\d{{1,3}}){SEP}(?:transformer{SEP}|decoder{SEP}|hidden{SEP})?(?:layers|blocks){R}|{L}(?:num{SEP}(?:hidden{SEP})?layers|n{SEP}layers?|layers){_IS}(\d{{1,3}}){R}"
            rf"|(?<![后前])(?<![后前]\s)(\d{{1,3}})\s*层|层数\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "num_key_value_heads",
        rx.compile(
            rf"{L}(\d{{1,3}}){SEP}(?:kv|key{SEP}value){SEP}heads{R}|{L}(?:num{SEP}kv{SEP}heads|kv{SEP}heads|num{SEP}key{SEP}value{SEP}heads){_IS}(\d{{1,3}}){R}"
            rf"|(\d{{1,3}})\s*个?\s*kv\s*头|kv\s*头数?\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "num_attention_heads",
        rx.compile(
            rf"{L}(\d{{1,3}}){SEP}(?:attention{SEP})?heads{R}|{L}(?:num{SEP}(?:attention{SEP})?heads|n{SEP}heads|heads|attention{SEP}heads){_IS}(\d{{1,3}}){R}"
            rf"|(\d{{1,3}})\s*个?\s*(?:注意力)?头|(?<!kv)\s*头数\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "intermediate_size",
        rx.compile(
            rf"{L}(?:intermediate{SEP}(?:size)?|ffn{SEP}(?:hidden{SEP})?(?:size|dim)?|mlp{SEP}(?:size|dim)){_IS}(\d{{3,6}}){R}"
            rf"|(?:ffn|中间层)\s*(?:维度|大小)?\s*(?:为|=|是|:)?\s*(\d{{3,6}})"
        ),
    ),
    (
        "vocab_size",
        rx.compile(
            rf"{L}(?:vocab(?:ulary)?{SEP}(?:size)?){_IS}(\d+(?:\.\d+)?\s*k?){R}|{L}(\d+(?:\.\d+)?\s*k?){SEP}vocab(?:ulary)?{R}|词表\s*(?:大小)?\s*(?:为|=|是|:)?\s*(\d+(?:\.\d+)?\s*k?)"
        ),
    ),
)


def shape_overrides(low: str) -> Fields:
    """Architecture fields the question states (config.json keys); the parser lays them over a base model."""
    out: Fields = {}
    work = low
    for key, pattern in _SHAPE_RULES:
        m = pattern.search(work)
        if not m:
            continue
        raw = next(g for g in m.groups() if g)
        value = round(float(raw.replace("k", "").strip()) * 1000) if "k" in raw else int(raw)
        if value > 0:
            out[key] = value
        work = (
            work[: m.start()] + " " * (m.end() - m.start()) + work[m.end() :]
        )  # "32 kv heads" is not "32 heads"
    return out


# Training words without a task word: an optimizer, ZeRO, checkpointing, a data-parallel size, a learning rate.
TRAINING_HINTS = frozenset(
    {
        "optimizer",
        "zero_stage",
        "gradient_checkpointing",
        "recompute",
        "precision_recipe",
        "gradient_accumulation_steps",
        "learning_rate",
        "epochs",
        "global_batch_size",
        "offload_optimizer",
        "warmup_steps",
    }
)
_DP_STATED = rx.compile(rf"{L}(?:dp|data{SEP}parallel(?:ism)?(?:{SEP}size)?){_IS}\d+|数据并行")


def implies_training(low: str, fields: Fields) -> bool:
    return bool(set(fields) & TRAINING_HINTS) or bool(_DP_STATED.search(low))


EXTRACTORS: tuple[Extractor, ...] = (
    task_fields,
    dtype_fields,
    optimizer_fields,
    lora_fields,
    shape_fields,
    activation_fields,
    parallel_fields,
    no_effect_fields,
)


def stated_fields(low: str) -> Fields:
    """All fields the question states, merged over the extractors."""
    out: Fields = {}
    for extract in EXTRACTORS:
        out.update(extract(low))
    return out


def parse_int(text: str) -> int | None:
    return plain_int(text)
