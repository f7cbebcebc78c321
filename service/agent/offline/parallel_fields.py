"""Memory levers a question states: activation recomputation, attention kernel, ZeRO/FSDP, TP/PP/CP/EP/DP sizes,
sequence parallel (offload: offload_fields.py)."""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, Fields, negated
from service.agent.offline.mentions import SEP, L, R

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
        off = negated(low, m.start()) or _CKPT_OFF_AFTER.match(after)
        out["gradient_checkpointing"] = not off
    f = _FLASH.search(low)
    e = _EAGER.search(low)
    if e:
        out["attention"] = "eager"
    elif f:
        out["attention"] = "eager" if negated(low, f.start(), f.end()) else "flash"
    return out


# --- parallelism ----------------------------------------------------------------------------------


def _parallel_size(names: str) -> re.Pattern[str]:
    """'tp=2', 'tensor parallel 4', 'tp8': a parallel size stated for one of `names`."""
    return rx.compile(rf"{L}(?:{names}){IS}(\d+){R}|{L}(?:{names})(\d+){R}")


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


def parallel_fields(low: str) -> Fields:
    out: Fields = {}
    z = _ZERO_STAGE.search(low)
    nz = _ZERO_NAMED.search(low)
    if z:
        out["zero_stage"] = int(next(g for g in z.groups() if g))
    elif nz and negated(low, nz.start(), nz.end()):
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
    return out
