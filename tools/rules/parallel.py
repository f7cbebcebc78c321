"""Parallel layout: which slice of the model, its states and its micro-batches one GPU holds.

- Data parallel N = num_gpus / (t * p * c). DP does not shrink activations for a fixed micro-batch.
- ZeRO (Rajbhandari et al. 2020, sec. 5; DeepSpeed stage_1_and_2.py / stage3.py; FSDP FULL_SHARD =
  stage 3): stage 1 shards fp32 master weights and optimizer states over N, stage 2 also gradients,
  stage 3 also the weights, which are gathered one layer at a time (+ a prefetch bucket).
- TP (Shoeybi et al. 2019, Megatron-LM): attention/MLP matrices split by t, norms replicated,
  vocab-parallel embedding and LM head split by t.
- PP (Narayanan et al. 2021): layers split over p stages; the embedding lives on the first stage, the
  LM head on the last (tied embeddings: a copy on the last stage as well, Megatron
  `share_embeddings_and_output_weights`). 1F1B: stage k holds min(p - k, m) micro-batches in flight.
- EP: routed experts split over ep ranks (Megatron expert_tensor_parallel = t: experts also split by t).
- CP: the sequence split over c ranks (ring attention / Megatron context parallel).
- Offload (ZeRO-Offload / ZeRO-Infinity): optimizer states, master weights and gradient partitions
  (offload_optimizer) and/or parameters (offload_params, ZeRO-3 only) live in CPU RAM or NVMe.
"""

from __future__ import annotations

from typing import NamedTuple


class Stage(NamedTuple):
    """One pipeline stage: its layers and the micro-batches in flight on it (an immutable value)."""

    index: int
    num_stages: int
    first_layer: int
    n_layers: int
    in_flight: int  # micro-batches whose activations are alive at once (1F1B)

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def last(self) -> bool:
        return self.index == self.num_stages - 1


class Layout(NamedTuple):
    """How the job is spread over its GPUs: TP, PP, CP, EP, ZeRO stage and offload (an immutable value,
    made once per candidate of a planner search and a key of its memo: a named tuple)."""

    num_gpus: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero_stage: int = 0
    sequence_parallel: bool = False
    offload_optimizer: bool = False
    offload_params: bool = False
    microbatches: int = 1  # micro-batches per step under PP (1F1B)
    # the GPU's runtime, whose context the overhead counts (tools/rules/overhead.py): cuda, rocm, metal
    runtime: str = "cuda"

    @property
    def dp(self) -> int:
        return max(1, self.num_gpus // (self.tp * self.pp * self.cp))

    # ZeRO divisors (1 = not sharded)
    @property
    def states_divisor(self) -> int:
        return self.dp if self.zero_stage >= 1 else 1

    @property
    def grads_divisor(self) -> int:
        return self.dp if self.zero_stage >= 2 else 1

    @property
    def weights_divisor(self) -> int:
        return self.dp if self.zero_stage >= 3 else 1

    def layer_split(self, num_layers: int) -> list[int]:
        """Layers per stage: an even split, the first stages taking the remainder (most loaded first)."""
        base, rem = divmod(num_layers, self.pp)
        return [base + (1 if k < rem else 0) for k in range(self.pp)]

    def stages(self, num_layers: int) -> list[Stage]:
        """The stages worth evaluating: the first (embedding, most micro-batches in flight) and the
        last (LM head, logits); every stage in between holds less than the first."""
        split = self.layer_split(num_layers)
        picks = [0] if self.pp == 1 else [0, self.pp - 1]
        out = []
        for k in picks:
            in_flight = max(1, min(self.pp - k, self.microbatches))
            out.append(Stage(k, self.pp, sum(split[:k]), split[k], in_flight))
        return out

    def gpu_role(self, stage: Stage) -> tuple[dict[str, object], ...]:
        """Which GPU the estimate is for, as data: one part per parallel dimension, each a code
        (tools/labels.py GPU_ROLE_CODES) and its values; `single_gpu` alone for one GPU."""
        parts: list[dict[str, object]] = []
        if self.pp > 1:
            where = "first" if stage.first else "last" if stage.last else "middle"
            values = {"index": stage.index, "of": self.pp, "where": where, "layers": stage.n_layers}
            parts.append({"code": "pp_stage", "values": values})
        for code, size in (("tp_rank", self.tp), ("cp_rank", self.cp), ("ep_rank", self.ep)):
            if size > 1:
                parts.append({"code": code, "values": {"of": size}})
        if self.dp > 1:
            if self.zero_stage:
                parts.append({"code": "dp_rank_zero", "values": {"of": self.dp, "zero": self.zero_stage}})
            else:
                parts.append({"code": "dp_rank", "values": {"of": self.dp}})
        return tuple(parts) or ({"code": "single_gpu", "values": {}},)

    def communicator_count(self, *, training: bool) -> int:
        """len(communicators(training=training)), without naming them (what the planner sums)."""
        n = (self.tp > 1) + (self.pp > 1) + (self.cp > 1) + (self.ep > 1)
        return n + (1 if training and self.dp > 1 else 0)

    def communicators(self, *, training: bool) -> list[str]:
        """Process groups that allocate NCCL buffers on this GPU."""
        groups = []
        if self.tp > 1:
            groups.append(f"TP({self.tp})")
        if self.pp > 1:
            groups.append(f"PP({self.pp})")
        if self.cp > 1:
            groups.append(f"CP({self.cp})")
        if self.ep > 1:
            groups.append(f"EP({self.ep})")
        if training and self.dp > 1:
            groups.append(f"DP({self.dp})")
        return groups


def tp_fits_heads(heads: int, kv_heads: int, tp: int) -> bool:
    """TP `tp` splits the attention heads evenly and divides the KV heads or is a multiple of them (each
    KV head replicated on tp / kv ranks: Megatron/vLLM). kv_heads = 0: no KV-head constraint (MLA)."""
    if heads % tp:
        return False
    return not kv_heads or kv_heads % tp == 0 or tp % kv_heads == 0


# The smallest hidden size per tensor-parallel shard Megatron-LM trains with (Shoeybi et al. 2019, Table 1:
# the 8.3B model, h = 3072 on TP = 8, is 384 columns a shard; Narayanan et al. 2021, Table 1, never goes below
# 768): a training layout never splits a model thinner (a 1.3B model, h = 2048, is offered TP <= 4, never 8).
MIN_HIDDEN_PER_TP_SHARD = 384


def training_tp_cap(hidden_size: int, cap: int = 8) -> int:
    """The largest TP a training layout offers for a model of `hidden_size` (MIN_HIDDEN_PER_TP_SHARD), at most
    `cap` (one node)."""
    return max(1, min(cap, hidden_size // MIN_HIDDEN_PER_TP_SHARD))
