"""KV cache of a generating model on one GPU (per-kind specs: tools/rules/kv_cache.py, vLLM KVCacheSpec style).

Prefill: transformers' DynamicCache holds every prompt token's K/V, sliding-window layers too (trimmed
to the window only for decode; traced mistral-7b / gemma-3-1b prefill). Decode: seq tokens per sequence,
sliding-window layers capped at their window.
"""

from __future__ import annotations

from tools.components.phased import PhasedComponent, phased
from tools.components.step import ModelStep
from tools.rules.kv_cache import SOURCE, kv_bytes, kv_specs


def kv_cache(ms: ModelStep, prompt_len: int, seqs: int) -> PhasedComponent | None:
    specs = kv_specs(ms.arch, layers=ms.stage.n_layers, tp=ms.lay.tp, dtype_bytes=ms.rs.kv_dtype_bytes)
    per_tok = sum(s.bytes_per_token() for s in specs)
    kv_f = " + ".join(s.formula() for s in specs) + " per token x tokens x sequences"
    kv_s = " + ".join(s.substituted() for s in specs)
    seq = ms.seq
    kv_pre, kv_dec = per_tok * prompt_len * seqs, kv_bytes(specs, seq, seqs)
    at = {
        "prefill": (kv_pre, kv_f, f"({kv_s} = {per_tok:,} B/token) x {prompt_len:,} x {seqs} = {kv_pre:,} B"),
        "decode": (kv_dec, kv_f, f"({kv_s} = {per_tok:,} B/token) x {seq:,} x {seqs} = {kv_dec:,} B"),
    }
    return phased("kv_cache", "kv_cache", SOURCE, at, ms.role)
