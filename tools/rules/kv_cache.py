"""KV-cache bytes, one class per attention kind (vLLM vllm/v1/kv_cache_interface.py style).

Each spec owns its bytes and its text: `layer_bytes_per_token()` (one layer, one token),
`bytes_per_token()` (all its layers), `held(tokens, sequences, cache)` (the cells each of its layers keeps
under an engine's cache, tools/rules/kv_cells.py), `bytes_for(...)`, `formula(cache)` and
`substituted(tokens, sequences, cache)`. Callers sum and join; they never branch on the kind.
- FullAttentionKV (MHA/GQA/MQA): 2 (K and V) x layers x kv_heads x head_dim x B per cell
  (vLLM FullAttentionSpec.page_size_bytes = 2 * block_size * num_kv_heads * head_size * dtype_size).
- SlidingWindowKV: the same bytes per cell, but the cache keeps only the window's cells once it can
  (vLLM SlidingWindowSpec.max_memory_usage_bytes; transformers DynamicSlidingWindowLayer).
- MLAKV (DeepSeek-V2/V3): layers x (kv_lora_rank + qk_rope_head_dim) x B: one latent, no separate V
  (vLLM MLAAttentionSpec: head_size = kv_lora_rank + qk_rope_head_dim, num_kv_heads = 1, no factor 2).
Under TP each rank holds kv_heads / t heads; when t > kv_heads the heads are replicated (each rank
keeps one: vLLM `num_kv_heads = max(1, total_kv_heads // tp)`). The MLA latent is replicated on
every TP rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.model.architecture import Architecture
from tools.rules.kv_cells import DECODING, Held, KvCache

SOURCE = "vLLM vllm/v1/kv_cache_interface.py (FullAttentionSpec / MLAAttentionSpec / SlidingWindowSpec)"


@dataclass(frozen=True)
class FullAttentionKV:
    """K and V of every token in every full-attention layer this GPU holds."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int

    def layer_bytes_per_token(self) -> int:
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes

    def bytes_per_token(self) -> int:
        return self.layers * self.layer_bytes_per_token()

    def held(self, tokens: int, sequences: int, cache: KvCache) -> Held:
        return cache.full(tokens, sequences)

    def bytes_for(self, tokens: int, sequences: int, cache: KvCache = DECODING) -> int:
        return self.bytes_per_token() * self.held(tokens, sequences, cache).cells

    def formula(self, cache: KvCache = DECODING) -> str:
        return f"2 x L x g x d x B x {cache.full_formula()}"

    def substituted(self, tokens: int, sequences: int, cache: KvCache = DECODING) -> str:
        held = self.held(tokens, sequences, cache)
        return f"2 x {self.layers} x {self.kv_heads} x {self.head_dim} x {self.dtype_bytes} B x {held.text}"


@dataclass(frozen=True)
class SlidingWindowKV(FullAttentionKV):
    """K and V of sliding-window layers: the cache keeps at most `window` tokens once it can."""

    window: int = 4096

    def held(self, tokens: int, sequences: int, cache: KvCache) -> Held:
        return cache.window(self.window, tokens, sequences)

    def formula(self, cache: KvCache = DECODING) -> str:
        return f"2 x L_sw x g x d x B x {cache.window_formula()}"


@dataclass(frozen=True)
class MLAKV:
    """Multi-head latent attention (DeepSeek): one compressed latent plus the RoPE key per token and layer."""

    layers: int
    latent_dim: int  # kv_lora_rank + qk_rope_head_dim
    dtype_bytes: int

    def layer_bytes_per_token(self) -> int:
        return self.latent_dim * self.dtype_bytes

    def bytes_per_token(self) -> int:
        return self.layers * self.layer_bytes_per_token()

    def held(self, tokens: int, sequences: int, cache: KvCache) -> Held:
        return cache.full(tokens, sequences)

    def bytes_for(self, tokens: int, sequences: int, cache: KvCache = DECODING) -> int:
        return self.bytes_per_token() * self.held(tokens, sequences, cache).cells

    def formula(self, cache: KvCache = DECODING) -> str:
        return f"L x (kv_lora_rank + qk_rope_head_dim) x B x {cache.full_formula()}"

    def substituted(self, tokens: int, sequences: int, cache: KvCache = DECODING) -> str:
        held = self.held(tokens, sequences, cache)
        return f"{self.layers} x {self.latent_dim} x {self.dtype_bytes} B x {held.text}"


KvSpec = FullAttentionKV | SlidingWindowKV | MLAKV


def kv_specs(
    arch: Architecture, *, layers: int | None = None, tp: int = 1, dtype_bytes: int = 2
) -> list[KvSpec]:
    """The KV specs of `layers` decoder layers (default all) on one TP rank."""
    n_layers = arch.num_hidden_layers if layers is None else layers
    if n_layers <= 0:
        return []
    if arch.kv_lora_rank:
        latent = int(arch.kv_lora_rank) + int(arch.qk_rope_head_dim or 0)
        return [MLAKV(n_layers, latent, dtype_bytes)]
    heads = max(1, arch.kv_heads // tp)
    if arch.sliding_window:
        total_sw = (
            arch.sliding_window_layers if arch.sliding_window_layers is not None else arch.num_hidden_layers
        )
        sw = round(total_sw * n_layers / arch.num_hidden_layers)
        specs: list[KvSpec] = []
        if sw:
            specs.append(SlidingWindowKV(sw, heads, arch.d_head, dtype_bytes, window=arch.sliding_window))
        if n_layers - sw:
            specs.append(FullAttentionKV(n_layers - sw, heads, arch.d_head, dtype_bytes))
        return specs
    return [FullAttentionKV(n_layers, heads, arch.d_head, dtype_bytes)]


def kv_bytes(specs: list[KvSpec], tokens: int, sequences: int, cache: KvCache = DECODING) -> int:
    """What `sequences` sequences of `tokens` tokens hold under `cache` (default: transformers decoding)."""
    return sum(spec.bytes_for(tokens, sequences, cache) for spec in specs)


def kv_bytes_per_token(specs: list[KvSpec]) -> int:
    """Per-token bytes if every layer held every token (sliding windows not capped)."""
    return sum(spec.bytes_per_token() for spec in specs)


def kv_texts(specs: list[KvSpec], tokens: int, sequences: int, cache: KvCache = DECODING) -> tuple[str, str]:
    """(formula, substituted) of the KV cache: each kind renders its own term; the terms are summed."""
    formula = " + ".join(spec.formula(cache) for spec in specs)
    parts = [spec.substituted(tokens, sequences, cache) for spec in specs]
    joined = parts[0] if len(parts) == 1 else " + ".join(f"({part})" for part in parts)
    return formula, f"{joined} = {kv_bytes(specs, tokens, sequences, cache):,} B"
