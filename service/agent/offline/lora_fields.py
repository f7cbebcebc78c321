"""LoRA settings a question states: rank, target modules, alpha, dropout, trainable layers."""

from __future__ import annotations

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, NUM, Fields
from service.agent.offline.mentions import SEP, L, R

# --- LoRA --------------------------------------------------------------------------------------------

_TARGETS = rx.compile(
    rf"{L}((?:q|k|v|o|gate|up|down|out)_proj|qkv_proj|gate_up_proj|c_attn|query_key_value){R}"
)


_LORA_RANK = rx.compile(
    rf"{L}(?:lora{SEP})?(?:rank|lora_r)(?:{IS}|{SEP})([1-9]\d*){R}|{L}([1-9]\d*){SEP}rank{R}(?={SEP}(?:q?lora|dora|adapter))|{L}r\s*=\s*(\d+){R}|{L}r(\d+){R}(?={SEP}lora)|秩\s*(?:r\s*)?(?:为|=|:|是|改成|改为|设为|设成|设置为|换成|用|取|等于)?\s*(\d+)"
)
# "LoRA r16", "r 16", "r: 16" (PEFT LoraConfig r): read only where an adapter is named, never the "r1" of DeepSeek-R1
_SHORT_RANK = rx.compile(
    rf"(?<![a-z0-9.\-_/])r{SEP}(?:值\s*)?(?:[:=]\s*|(?:为|是|设为|设成|改成|改为|取|用)\s*)?(\d+){R}"
)
_ADAPTER_WORD = rx.compile(rf"{L}(?:q?lora|dora|peft|adapters?){R}|低秩|适配器")
_R1 = rx.compile(rf"{L}deepseek{SEP}$")
_ALL_LINEAR = rx.compile(
    rf"{L}all{SEP}linear(?:{SEP}layers)?{R}|所有线性层|全部线性层|全线性层|{L}all{SEP}(?:the{SEP})?(?:projection|proj|linear){SEP}(?:layers|modules)"
)
_LORA_ALPHA = rx.compile(rf"{L}(?:lora{SEP})?alpha{IS}{NUM}")
_LORA_DROPOUT = rx.compile(rf"{L}(?:lora{SEP})?dropout{IS}(\d*\.\d+|0){R}")
_LAST_LAYERS = rx.compile(rf"{L}(?:last|top)\s+(\d+)\s+layers{R}|最后\s*(\d+)\s*层")


def lora_fields(low: str) -> Fields:
    out: Fields = {}
    r = _LORA_RANK.search(low)
    if r:
        out["lora_rank"] = int(next(g for g in r.groups() if g))
    elif _ADAPTER_WORD.search(low):
        short = (
            m for m in _SHORT_RANK.finditer(low) if not _R1.search(low[max(0, m.start() - 10) : m.start()])
        )
        first = next(short, None)
        if first:
            out["lora_rank"] = int(first.group(1))
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
