"""vLLM-style serving capacity: what the reserved memory leaves for KV-cache blocks.

Models vLLM v1's start-up sequence:
- vllm/v1/worker/gpu_worker.py `Worker.determine_available_memory`: a profile run measures
  the non-KV memory (weights + peak activation of the dummy forward + non-torch memory such as
  the CUDA context, NCCL and cuBLAS workspaces); what vLLM may use is
  `requested_memory = total_gpu_memory x gpu_memory_utilization`, and the KV cache gets
  `requested_memory - non_kv_cache_memory`.
- vllm/v1/core/kv_cache_utils.py `get_num_blocks` / `get_kv_cache_config`: that budget is cut into
  blocks of `block_size` tokens (default 16, vllm/config/cache.py) for every layer:
  `num_blocks = available // (page_size_bytes x num_layers)`; with per-token bytes summed over the
  layers this is `available // (block_size x kv_bytes_per_token)`.
- vllm/v1/core/kv_cache_utils.py `get_max_concurrency_for_kv_cache_config`: concurrency for
  requests of `max_model_len` tokens = num_blocks / cdiv(max_model_len, block_size) (vLLM logs
  it as "Maximum concurrency for N tokens per request: X.XXx"); we report the whole number.

Counted by the caller in `non_kv_bytes`: weights, the profile run's peak activation, runtime
overhead. Not modelled: CUDA graph capture memory (vLLM >= 0.10 reserves it separately, a few
hundred MiB), prefix-cache sharing (makes real concurrency higher for shared prompts), hybrid
models with per-layer-group block pools (sliding-window layers are expected to be folded into
`kv_bytes_per_token` by the caller).
"""

from __future__ import annotations

from tools.result import ServingCapacity

VLLM_DEFAULT_BLOCK_SIZE = (
    16  # tokens per KV block: vllm/config/cache.py CacheConfig.block_size default (CUDA)
)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def serving_capacity(
    *,
    gpu_memory_bytes: int,
    gpu_memory_utilization: float,
    non_kv_bytes: int,
    kv_bytes_per_token: int,
    seq_len: int,
    block_size: int = VLLM_DEFAULT_BLOCK_SIZE,
) -> ServingCapacity:
    """How many KV tokens and concurrent sequences a vLLM-style engine can hold on one GPU.

    `kv_bytes_per_token`: bytes of K and V for one token summed over all layers held by this GPU
    (after TP sharding), in the KV dtype. `seq_len`: tokens per request (prompt + generation).
    """
    if gpu_memory_bytes <= 0:
        raise ValueError("gpu_memory_bytes must be positive")
    if not 0.0 < gpu_memory_utilization <= 1.0:
        raise ValueError("gpu_memory_utilization must be in (0, 1]")
    if kv_bytes_per_token <= 0 or seq_len <= 0 or block_size <= 0:
        raise ValueError("kv_bytes_per_token, seq_len and block_size must be positive")
    non_kv_bytes = max(0, int(non_kv_bytes))

    # vllm/v1/worker/gpu_worker.py: requested_memory = total_memory x gpu_memory_utilization
    reserved = int(gpu_memory_bytes * gpu_memory_utilization)
    # vllm/v1/worker/gpu_worker.py: available_kv_cache_memory = requested_memory - non_kv_cache_memory
    available = max(0, reserved - non_kv_bytes)
    # vllm/v1/core/kv_cache_utils.py get_num_blocks: available // (page_size x num_layers)
    block_bytes = block_size * kv_bytes_per_token
    num_blocks = available // block_bytes
    max_kv_tokens = num_blocks * block_size
    # vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config: blocks / cdiv(len, block)
    blocks_per_sequence = _cdiv(seq_len, block_size)
    max_concurrent = num_blocks // blocks_per_sequence
    return ServingCapacity(
        gpu_memory_utilization=gpu_memory_utilization,
        reserved_bytes=reserved,
        kv_cache_bytes=available,
        kv_bytes_per_token=kv_bytes_per_token,
        max_kv_tokens=max_kv_tokens,
        max_concurrent_sequences=max_concurrent,
        max_context_at_batch_1=max_kv_tokens,
    )
