"""The parameters one GPU holds: its TP/EP/PP slice of the model, before ZeRO-3 sharding."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tools.call_memo import memo_args
from tools.model.lora import decoder_linears
from tools.rules.parallel import Stage
from tools.rules.quant import WeightFormat

if TYPE_CHECKING:
    from tools.resolve import ModelRef, ResolvedScenario


class LocalParams(NamedTuple):
    """The parameters one GPU of `stage` holds (TP/EP-sharded, before ZeRO-3)."""

    total: int
    linear_scale_dense: float  # fraction of the model's TP-sharded linear weights held here
    linear_scale_expert: float
    linear_scale_repl: float
    other: int  # non-linear parameters held here (norms, biases, embeddings, LM head)
    embedding_and_head: int  # the part of `other` that is embedding / LM head
    head_matmul: int  # the LM head's matmul weight on this GPU (the embedding when tied)
    linear_local: int  # linear weight elements held here
    largest_gathered: int  # ZeRO-3: the largest unit gathered at once (a layer or the embedding)
    layer_local: float  # per-layer parameters held here


def _linear_elements(pb) -> tuple[int, int, int, int]:
    """(dense, expert, replicated) linear weight elements and linear bias elements of the decoder."""
    dense_el = exp_el = rep_el = bias = 0
    for lin in decoder_linears(pb):
        el = lin.count * lin.in_features * lin.out_features
        if lin.expert:
            exp_el += el
        elif lin.replicated:
            rep_el += el
        else:
            dense_el += el
        if lin.bias:
            bias += lin.count * lin.out_features
    return dense_el, exp_el, rep_el, bias


def local_params(model: ModelRef, rs: ResolvedScenario, stage: Stage) -> LocalParams:
    """Megatron layout: linears split by t (experts by t x ep), norms replicated, the vocab-parallel
    embedding on the first stage and the LM head on the last (tools/rules/parallel.py)."""
    lay = rs.layout
    return _local_params(model, lay.tp, lay.ep, lay.pp, stage)


@memo_args  # a planner search asks the same slice for many candidates
def _local_params(model: ModelRef, tp: int, ep: int, pp: int, stage: Stage) -> LocalParams:
    pb = model.params
    n_layers = pb.num_layers
    dense_el, exp_el, rep_el, bias = _linear_elements(pb)
    layer_other = pb.layers_total - dense_el - exp_el - rep_el - bias
    f = stage.n_layers / n_layers
    s_dense, s_exp, s_rep = f / tp, f / (tp * ep), f
    linear_local = dense_el * s_dense + exp_el * s_exp + rep_el * s_rep
    emb = pb.embedding / tp if stage.first else 0
    if stage.last:
        head = pb.lm_head / tp
        if pp > 1 and not pb.lm_head:  # tied: Megatron keeps the word embedding on the last stage too
            head = pb.embedding / tp
        emb += head
    other = (bias / tp + layer_other) * f + emb + ((pb.final_norm + pb.extra) if stage.last else 0)
    layer_local = (dense_el / tp + exp_el / (tp * ep) + rep_el + bias / tp + layer_other) / n_layers
    largest = max(layer_local, pb.embedding / tp, pb.lm_head / tp)
    return LocalParams(
        total=round(linear_local + other),
        linear_scale_dense=s_dense,
        linear_scale_expert=s_exp,
        linear_scale_repl=s_rep,
        other=round(other),
        embedding_and_head=round(emb),
        head_matmul=round((pb.lm_head or pb.embedding) / tp) if stage.last else 0,
        linear_local=round(linear_local),
        largest_gathered=round(largest),
        layer_local=layer_local,
    )


def format_bytes(model: ModelRef, fmt: WeightFormat, loc: LocalParams, other_bytes: int) -> tuple[int, int]:
    """(weights, quant metadata) bytes of the local slice stored in `fmt` (non-linear params at other_bytes)."""
    lins = decoder_linears(model.params)
    data = meta = 0.0
    for group, scale in (
        ([lin for lin in lins if lin.expert], loc.linear_scale_expert),
        ([lin for lin in lins if lin.replicated and not lin.expert], loc.linear_scale_repl),
        ([lin for lin in lins if not lin.expert and not lin.replicated], loc.linear_scale_dense),
    ):
        if group and scale:
            d, m = fmt.linear_bytes(group)
            data += d * scale
            meta += m * scale
    # GGUF/EXL2 store norms, output layer and embedding their own way (tools/rules/gguf.py non_linear_bytes)
    other = fmt.non_linear_bytes(loc) if hasattr(fmt, "non_linear_bytes") else loc.other * other_bytes
    return round(data) + other, round(meta)


def rates(fmt: WeightFormat) -> tuple[str, str]:
    """(data rate, metadata rate) of a weight format: '0.5 B', '1/64 B + 4/(64*256) B' (NF4)."""
    data, _, meta = fmt.rate_text().partition(" + ")
    return data, meta


def largest_linear(model: ModelRef, tp: int) -> int:
    """Elements of the largest decoder linear weight on one TP rank (a dequantised workspace's size)."""
    return max((lin.in_features * lin.out_features for lin in decoder_linears(model.params)), default=0) // tp
