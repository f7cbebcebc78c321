"""vLLM's KV block pool with its hybrid allocator: what the reservation leaves, cut into blocks by group.

- vllm/v1/worker/gpu_worker.py `determine_available_memory`: requested_memory = total x
  gpu_memory_utilization; the KV cache gets requested_memory - non_kv_cache_memory.
- vllm/v1/core/kv_cache_utils.py `_get_kv_cache_groups_uniform_page_size`: the layers of each attention
  kind are cut into groups of the same size (the smallest kind's layer count, or the largest when it is
  under 1.25 x the smallest; the last group of a kind is padded); one kind only: one group of every layer.
  A block id covers one layer of every group position, so one block is group_size x page_size bytes
  (`get_num_blocks`: available // page_size // num_layers_per_group).
- Blocks a sequence needs: per group, its kind's max_memory_usage (tools/rules/kv_cells.py VllmBlocks:
  full layers cdiv(n, block), sliding layers cdiv(min(W - 1 + max_num_batched_tokens, n), block) + 1).
- `get_max_concurrency_for_kv_cache_config`: num_blocks / blocks per request; `get_kv_cache_capacity`
  (the "GPU KV cache size: N tokens" log line): max_concurrency x max_model_len.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.engines.base import longest
from tools.rules.kv_cache import KvSpec
from tools.rules.kv_cells import VllmBlocks, cdiv

# kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: group size = the largest kind's layer count
# when it is under 1.25 x the smallest (little padding), else the smallest
GROUP_SIZE_SLACK = 1.25


@dataclass(frozen=True)
class KvGroups:
    """The layers one GPU holds, in vLLM's KV cache groups."""

    specs: tuple[KvSpec, ...]
    counts: tuple[int, ...]  # groups of each spec's kind
    group_size: int  # layers per group (one block id covers this many layer pages)
    cache: VllmBlocks

    @property
    def n_groups(self) -> int:
        return sum(self.counts)

    @property
    def block_bytes(self) -> int:
        """One block id over the group's layers (page sizes unified to the largest)."""
        page = max(spec.layer_bytes_per_token() for spec in self.specs) * self.cache.block_size
        return self.group_size * page

    def blocks_per_sequence(self, tokens: int) -> int:
        bs = self.cache.block_size
        return sum(
            n * (spec.held(tokens, 1, self.cache).cells // bs)
            for spec, n in zip(self.specs, self.counts, strict=True)
        )

    def text(self, tokens: int) -> str:
        """Blocks of one sequence, group by group, with the numbers."""
        bs = self.cache.block_size
        parts = [
            f"{n} x {spec.held(tokens, 1, self.cache).cells // bs:,}"
            for spec, n in zip(self.specs, self.counts, strict=True)
        ]
        return " + ".join(parts)


def kv_groups(specs: list[KvSpec], cache: VllmBlocks) -> KvGroups:
    """vLLM's grouping of the layers (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size)."""
    if len(specs) == 1:
        return KvGroups(tuple(specs), (1,), specs[0].layers, cache)
    smallest = min(spec.layers for spec in specs)
    largest = max(spec.layers for spec in specs)
    size = largest if largest < GROUP_SIZE_SLACK * smallest else smallest
    return KvGroups(tuple(specs), tuple(cdiv(spec.layers, size) for spec in specs), size, cache)


@dataclass(frozen=True)
class BlockPool:
    """vLLM's KV budget cut into blocks: what the reservation leaves after the non-KV memory."""

    reserved: int  # requested_memory = card x gpu_memory_utilization
    non_kv_bytes: int  # weights + profile peak + non-torch memory
    available: int  # the KV cache's share of the reservation
    groups: KvGroups
    num_blocks: int
    seq_len: int  # max_model_len of the requests

    @property
    def block_size(self) -> int:
        return self.groups.cache.block_size

    @property
    def block_bytes(self) -> int:
        return self.groups.block_bytes

    @property
    def blocks_per_sequence(self) -> int:
        return self.groups.blocks_per_sequence(self.seq_len)

    @property
    def max_concurrent(self) -> int:
        # kv_cache_utils.py get_max_concurrency_for_kv_cache_config: num_blocks / blocks per request
        return self.num_blocks // self.blocks_per_sequence

    @property
    def max_kv_tokens(self) -> int:
        if self.groups.n_groups == 1:  # kv_cache_utils.py _report_kv_cache_config: num_blocks x block_size
            return self.num_blocks * self.block_size
        # kv_cache_utils.py get_kv_cache_capacity (hybrid layouts): max_concurrency x max_model_len
        return self.num_blocks * self.seq_len // self.blocks_per_sequence

    def longest_sequence(self, hi: int) -> int:
        """The longest single sequence (<= hi) whose blocks fit in the pool."""
        return longest(lambda n: self.groups.blocks_per_sequence(n) <= self.num_blocks, hi)


def block_pool(
    *, card_bytes: int, fraction: float, non_kv_bytes: int, groups: KvGroups, seq_len: int
) -> BlockPool:
    """vLLM's start-up arithmetic from the reservation to the number of blocks."""
    # vllm/v1/worker/gpu_worker.py: requested_memory = total_memory x gpu_memory_utilization
    reserved = int(card_bytes * fraction)
    # vllm/v1/worker/gpu_worker.py: available_kv_cache_memory = requested_memory - non_kv_cache_memory
    available = max(0, reserved - non_kv_bytes)
    return BlockPool(
        reserved=reserved,
        non_kv_bytes=non_kv_bytes,
        available=available,
        groups=groups,
        # kv_cache_utils.py get_num_blocks: available // page_size // num_layers (per group)
        num_blocks=available // groups.block_bytes,
        seq_len=seq_len,
    )
