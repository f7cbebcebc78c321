"""KV cache of a generating model on one GPU (per-kind specs: tools/rules/kv_cache.py, vLLM KVCacheSpec style).

Prefill: transformers' DynamicCache holds every prompt token's K/V, sliding-window layers too (their
DynamicSlidingWindowLayer keeps a view of the whole prompt until the first decode step; traced
mistral-7b-v0.1 / gemma-3-1b prefill). Decode: seq tokens per sequence, sliding-window layers capped at
their window (tools/rules/kv_cells.py TransformersCache).
"""

from __future__ import annotations

from tools.components.phased import PhasedComponent, phased
from tools.components.step import ModelStep
from tools.rules.kv_cache import SOURCE, kv_bytes, kv_specs, kv_texts
from tools.rules.kv_cells import AFTER_PREFILL, DECODING


def kv_cache(ms: ModelStep, prompt_len: int, seqs: int) -> PhasedComponent | None:
    specs = kv_specs(ms.arch, layers=ms.stage.n_layers, tp=ms.lay.tp, dtype_bytes=ms.rs.kv_dtype_bytes)
    seq = ms.seq
    kv_pre = kv_bytes(specs, prompt_len, seqs, AFTER_PREFILL)
    kv_dec = kv_bytes(specs, seq, seqs, DECODING)
    at = {
        "prefill": (kv_pre, lambda: kv_texts(specs, prompt_len, seqs, AFTER_PREFILL)),
        "decode": (kv_dec, lambda: kv_texts(specs, seq, seqs, DECODING)),
    }
    # the window layers still hold the prompt after prefill: said on the component
    held_prompt = kv_pre > kv_bytes(specs, prompt_len, seqs, DECODING)
    return phased(
        "kv_cache",
        "kv_cache",
        SOURCE,
        at,
        ms.role,
        note_code="kv_cache.window_after_prefill" if held_prompt else None,
    )
