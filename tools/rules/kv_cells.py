"""How many token cells one attention layer's cache holds, per engine (one small frozen class per cache).

An attention kind (tools/rules/kv_cache.py) owns its bytes per cell; the engine's cache decides how many
cells a full-attention layer and a sliding-window layer keep for `sequences` sequences of `tokens`
tokens. Each cache answers `full(...)` and `window(...)` with the count and the text that shows how it
was counted, and `full_formula()` / `window_formula()` with the symbols.

- TransformersCache: transformers src/transformers/cache_utils.py. DynamicLayer keeps every token;
  DynamicSlidingWindowLayer.update stores `full_states[:, :, -sliding_window + 1:, :]`, a view of the
  whole concatenation, so after prefill the prompt's storage is still alive (traced mistral-7b-v0.1 /
  gemma-3-1b prefill); from the first decode step on it holds at most the window.
- VllmBlocks: vllm/v1/kv_cache_interface.py. FullAttentionSpec.max_memory_usage_bytes =
  cdiv(max_model_len, block_size) blocks; SlidingWindowSpec.max_memory_usage_bytes = cdiv(min(W - 1 +
  max_num_batched_tokens, max_model_len), block_size) + 1 blocks (+1: the window may start mid-block).
- SglangTokens: sglang/srt/mem_cache/memory_pool.py MHATokenToKVPool keeps one cell per token; only the
  hybrid-SWA architectures (sglang/srt/configs/model_config.py is_hybrid_swa_model: Llama-4, gpt-oss,
  MiMo-V2, Step-3.5) get SWAKVPool (mem_cache/swa_memory_pool.py), where a sliding layer frees the
  tokens that left its window; Gemma-2/3 and Mistral keep every token in every layer.
- GgmlCells: llama.cpp src/llama-kv-cache-iswa.cpp: non-SWA layers hold n_ctx cells; SWA layers
  GGML_PAD(min(n_ctx, n_swa x n_seq_max + n_ubatch), 256) cells, n_ctx with --swa-full. Only the
  architectures whose loader sets an interleaved SWA pattern (src/llama-model.cpp set_swa_pattern:
  Gemma-2/3, Cohere2, gpt-oss, Llama-4) get that cache; a window on every layer (Mistral-7B-v0.1) is not
  applied there: every layer holds n_ctx cells.
"""

from __future__ import annotations

from dataclasses import dataclass


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Held:
    """Cells per layer over all sequences, and how they were counted (with the numbers)."""

    cells: int
    text: str


@dataclass(frozen=True)
class TransformersCache:
    """transformers DynamicCache: `after_prefill` = the prompt's full storage still alive in window layers."""

    after_prefill: bool = False

    def full(self, tokens: int, sequences: int) -> Held:
        return Held(tokens * sequences, f"{tokens:,} x {sequences}")

    def window(self, window: int, tokens: int, sequences: int) -> Held:
        if self.after_prefill:  # cache_utils.py DynamicSlidingWindowLayer.update: a view of the whole prompt
            return Held(tokens * sequences, f"{tokens:,} x {sequences}")
        # cache_utils.py DynamicSlidingWindowLayer: at most the window per sequence once decoding
        return Held(min(tokens, window) * sequences, f"min({tokens:,}, {window:,}) x {sequences}")

    def full_formula(self) -> str:
        return "n_tok x n_seq"

    def window_formula(self) -> str:
        # after prefill the window layers still hold the whole prompt (the module docstring)
        return "n_tok x n_seq" if self.after_prefill else "min(n_tok, W) x n_seq"


@dataclass(frozen=True)
class VllmBlocks:
    """vLLM's paged cache: whole blocks of `block_size` tokens; sliding layers keep W - 1 + one step."""

    block_size: int = 16  # vllm/config/cache.py CacheConfig.block_size default (CUDA)
    step: int = 8192  # max_num_batched_tokens

    def blocks_full(self, tokens: int) -> int:
        # kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes: cdiv(max_model_len, block_size)
        return cdiv(tokens, self.block_size)

    def blocks_window(self, window: int, tokens: int) -> int:
        # kv_cache_interface.py SlidingWindowSpec: cdiv(min(W - 1 + max_num_batched_tokens, len), block) + 1
        return cdiv(min(window - 1 + self.step, tokens), self.block_size) + 1

    def full(self, tokens: int, sequences: int) -> Held:
        blocks = self.blocks_full(tokens)
        return Held(
            blocks * self.block_size * sequences,
            f"cdiv({tokens:,}, {self.block_size}) x {self.block_size} x {sequences}",
        )

    def window(self, window: int, tokens: int, sequences: int) -> Held:
        blocks = self.blocks_window(window, tokens)
        text = f"(cdiv(min({window:,} - 1 + {self.step:,}, {tokens:,}), {self.block_size}) + 1) x {self.block_size} x {sequences}"
        return Held(blocks * self.block_size * sequences, text)

    def full_formula(self) -> str:
        return "cdiv(n_tok, block_size) x block_size x n_seq"

    def window_formula(self) -> str:
        return "(cdiv(min(W - 1 + max_num_batched_tokens, n_tok), block_size) + 1) x block_size x n_seq"


@dataclass(frozen=True)
class SglangTokens:
    """SGLang's token pool: one cell per token; sliding layers free out-of-window tokens only in SWAKVPool."""

    hybrid_swa: bool = False

    def full(self, tokens: int, sequences: int) -> Held:
        return Held(tokens * sequences, f"{tokens:,} x {sequences}")

    def window(self, window: int, tokens: int, sequences: int) -> Held:
        if not self.hybrid_swa:  # model_config.py is_hybrid_swa_model: MHATokenToKVPool, every token kept
            return self.full(tokens, sequences)
        # swa_memory_pool.py SWAKVPool: a sliding layer keeps the tokens inside its window
        return Held(min(tokens, window) * sequences, f"min({tokens:,}, {window:,}) x {sequences}")

    def full_formula(self) -> str:
        return "n_tok x n_seq"

    def window_formula(self) -> str:
        return "min(n_tok, W) x n_seq" if self.hybrid_swa else "n_tok x n_seq"


GGML_SWA_PAD = 256  # src/llama-kv-cache-iswa.cpp: "the SWA cache is always padded to 256"


@dataclass(frozen=True)
class GgmlCells:
    """llama.cpp: n_ctx cells shared by the sequences; SWA layers a window-sized cache unless --swa-full."""

    n_ubatch: int = 512
    swa_full: bool = False
    iswa: bool = True  # the architecture gets llama_kv_cache_iswa (an interleaved SWA pattern)

    def full(self, tokens: int, sequences: int) -> Held:
        return Held(tokens * sequences, f"n_ctx = {tokens:,} x {sequences}")

    def window(self, window: int, tokens: int, sequences: int) -> Held:
        n_ctx = tokens * sequences
        if not self.iswa:  # src/llama-model.cpp: no SWA pattern for this architecture
            return Held(n_ctx, f"n_ctx = {n_ctx:,}")
        if self.swa_full:
            return Held(n_ctx, f"n_ctx = {n_ctx:,}")
        # src/llama-kv-cache-iswa.cpp: size_swa = GGML_PAD(min(n_ctx, n_swa x n_seq_max + n_ubatch), 256)
        cells = cdiv(min(n_ctx, window * sequences + self.n_ubatch), GGML_SWA_PAD) * GGML_SWA_PAD
        text = f"pad256(min({n_ctx:,}, {window:,} x {sequences} + {self.n_ubatch}))"
        return Held(cells, text)

    def full_formula(self) -> str:
        return "n_ctx"

    def window_formula(self) -> str:
        if not self.iswa or self.swa_full:  # no SWA pattern for the architecture, or --swa-full
            return "n_ctx"
        return "pad256(min(n_ctx, W x n_seq + n_ubatch))"


KvCache = TransformersCache | VllmBlocks | SglangTokens | GgmlCells

DECODING = TransformersCache()
AFTER_PREFILL = TransformersCache(after_prefill=True)
