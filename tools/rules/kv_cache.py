"""KV-cache bytes, one class per attention kind (vLLM vllm/v1/kv_cache_interface.py style).

Each spec answers `bytes_per_token()` (all its layers, one token of one sequence) and
`bytes_for(tokens, sequences)` (what `sequences` sequences of `tokens` tokens hold).
- FullAttentionKV (MHA/GQA/MQA): 2 (K and V) x layers x kv_heads x head_dim x B
  (vLLM FullAttentionSpec.page_size_bytes = 2 * block_size * num_kv_heads * head_size * dtype_size).
- MLAKV (DeepSeek-V2/V3): layers x (kv_lora_rank + qk_rope_head_dim) x B: one latent, no separate V
  (vLLM MLAAttentionSpec: head_size = kv_lora_rank + qk_rope_head_dim, num_kv_heads = 1, no factor 2).
- SlidingWindowKV: as full attention, but a sequence holds at most `window` tokens
  (vLLM SlidingWindowSpec.max_memory_usage_bytes).
Under TP each rank holds kv_heads / t heads; when t > kv_heads the heads are replicated (each rank
keeps one: vLLM `num_kv_heads = max(1, total_kv_heads // tp)`). The MLA latent is replicated on
every TP rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.model.architecture import Architecture

SOURCE = "vLLM vllm/v1/kv_cache_interface.py (FullAttentionSpec / MLAAttentionSpec / SlidingWindowSpec)"


@dataclass(frozen=True)
class FullAttentionKV:
    """K and V of every token in every full-attention layer this GPU holds."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int

    def bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    def bytes_for(self, tokens: int, sequences: int) -> int:
        return self.bytes_per_token() * tokens * sequences

    def formula(self) -> str:
        return "2 x L x g x d x B"

    def substituted(self) -> str:
        return f"2 x {self.layers} x {self.kv_heads} x {self.head_dim} x {self.dtype_bytes} B"


@dataclass(frozen=True)
class SlidingWindowKV(FullAttentionKV):
    """K and V of sliding-window layers: at most `window` tokens per sequence."""

    window: int = 4096

    def bytes_for(self, tokens: int, sequences: int) -> int:
        return self.bytes_per_token() * min(tokens, self.window) * sequences

    def formula(self) -> str:
        return "2 x L_sw x g x d x B x min(tokens, window)"

    def substituted(self) -> str:
        return super().substituted() + f" (window {self.window})"


@dataclass(frozen=True)
class MLAKV:
    """Multi-head latent attention (DeepSeek): one compressed latent plus the RoPE key per token and layer."""

    layers: int
    latent_dim: int  # kv_lora_rank + qk_rope_head_dim
    dtype_bytes: int

    def bytes_per_token(self) -> int:
        return self.layers * self.latent_dim * self.dtype_bytes

    def bytes_for(self, tokens: int, sequences: int) -> int:
        return self.bytes_per_token() * tokens * sequences

    def formula(self) -> str:
        return "L x (kv_lora_rank + qk_rope_head_dim) x B"

    def substituted(self) -> str:
        return f"{self.layers} x {self.latent_dim} x {self.dtype_bytes} B"


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


def kv_bytes(specs: list[KvSpec], tokens: int, sequences: int) -> int:
    return sum(spec.bytes_for(tokens, sequences) for spec in specs)


def kv_bytes_per_token(specs: list[KvSpec]) -> int:
    """Per-token bytes if every layer held every token (sliding windows not capped)."""
    return sum(spec.bytes_per_token() for spec in specs)
