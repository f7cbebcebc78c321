"""Weight dtype and quantisation format, KV-cache dtype, training precision recipe, optimizer."""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, QUANT_CONTEXT, Fields
from service.agent.offline.mentions import SEP, L, R
from tools.rules.gguf import GGUF_DTYPES, exl2_bits, gguf_file_type

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
_GROUP_SIZE = rx.compile(rf"{L}group{SEP}(?:size)?{IS}(\d+){R}")


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
    g = _GROUP_SIZE.search(low) if QUANT_CONTEXT.search(low) else None
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
