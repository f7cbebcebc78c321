"""vLLM-style serving capacity beside an HF-generate answer, and the serving engines (tools/engines/).

An inference estimate under transformers also says what vLLM would make of the same card: the KV pool
`gpu_memory_utilization` x card leaves after the weights, one profile-run forward and the non-torch memory,
cut into blocks by vLLM's hybrid allocator (tools/engines/vllm_pool.py, sliding-window layers holding their
window plus one step), the sequences of the asked length it holds and the longest single context, never
beyond the model's window. Not modelled: CUDA graph capture memory (outside the reservation), prefix-cache
sharing (makes real concurrency higher for shared prompts).
"""

from __future__ import annotations

from tools.engines import ENGINES, EngineInputs
from tools.engines.vllm import step_tokens
from tools.engines.vllm_pool import block_pool, kv_groups
from tools.result import ServingCapacity
from tools.rules.kv_cache import MLAKV, KvSpec
from tools.rules.kv_cache import kv_bytes_per_token as bytes_per_token
from tools.rules.kv_cells import VllmBlocks

VLLM_DEFAULT_BLOCK_SIZE = (
    16  # tokens per KV block: vllm/config/cache.py CacheConfig.block_size default (CUDA)
)

__all__ = ["ENGINES", "VLLM_DEFAULT_BLOCK_SIZE", "EngineInputs", "serving_capacity"]


def serving_capacity(
    *,
    gpu_memory_bytes: int,
    gpu_memory_utilization: float,
    non_kv_bytes: int,
    seq_len: int,
    kv_specs: list[KvSpec] | None = None,
    kv_bytes_per_token: int | None = None,
    block_size: int = VLLM_DEFAULT_BLOCK_SIZE,
    max_num_batched_tokens: int | None = None,
    max_model_len: int | None = None,
) -> ServingCapacity:
    """How many KV tokens and concurrent sequences a vLLM-style engine can hold on one GPU.

    `kv_specs`: the attention kinds of the layers this GPU holds (after TP), in the KV dtype; or
    `kv_bytes_per_token` for a uniform cache given as bytes per token. `seq_len`: tokens per request.
    `max_model_len`: the model's context window; the longest single context never exceeds it.
    """
    if gpu_memory_bytes <= 0:
        raise ValueError("gpu_memory_bytes must be positive")
    if not 0.0 < gpu_memory_utilization <= 1.0:
        raise ValueError("gpu_memory_utilization must be in (0, 1]")
    # a uniform cache given as bytes per token: one layer of that many bytes per token
    specs = kv_specs if kv_specs is not None else [MLAKV(1, int(kv_bytes_per_token or 0), 1)]
    per_token = bytes_per_token(specs) if kv_specs is not None else int(kv_bytes_per_token or 0)
    if per_token <= 0 or seq_len <= 0 or block_size <= 0:
        raise ValueError("kv_bytes_per_token, seq_len and block_size must be positive")
    step = step_tokens(gpu_memory_bytes, max_num_batched_tokens)
    pool = block_pool(
        card_bytes=gpu_memory_bytes,
        fraction=gpu_memory_utilization,
        non_kv_bytes=max(0, int(non_kv_bytes)),
        groups=kv_groups(specs, VllmBlocks(block_size=block_size, step=step)),
        seq_len=seq_len,
    )
    kv_context = pool.longest_sequence(max(max_model_len or 0, pool.num_blocks * block_size))
    room = min(kv_context, max_model_len) if max_model_len else kv_context
    return ServingCapacity(
        gpu_memory_utilization=gpu_memory_utilization,
        reserved_bytes=pool.reserved,
        kv_cache_bytes=pool.available,
        kv_bytes_per_token=per_token,
        max_kv_tokens=pool.max_kv_tokens,
        max_concurrent_sequences=pool.max_concurrent,
        max_context_at_batch_1=room,
        max_model_len=max_model_len,
        kv_context_at_batch_1=kv_context,
    )
