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
    seq = ms.seq
    kv_pre, kv_dec = per_tok * prompt_len * seqs, kv_bytes(specs, seq, seqs)

    def texts(n_tok: int, total: int) -> tuple[str, str]:
        kv_f = "(" + " + ".join(s.formula() for s in specs) + ") x n_tok x n_seq"
        kv_s = " + ".join(s.substituted() for s in specs)
        return kv_f, f"({kv_s} = {per_tok:,} B) x {n_tok:,} x {seqs} = {total:,} B"

    at = {
        "prefill": (kv_pre, lambda: texts(prompt_len, kv_pre)),
        "decode": (kv_dec, lambda: texts(seq, kv_dec)),
    }
    return phased("kv_cache", "kv_cache", SOURCE, at, ms.role)
