"""vLLM v1: what a job needs on the most loaded GPU, and the KV pool gpu_memory_utilization leaves.

vllm/v1/worker/gpu_worker.py `determine_available_memory`: requested_memory = total x
gpu_memory_utilization; non_kv_cache_memory = weights + the profile run's torch peak (one dummy forward of
max_num_batched_tokens tokens: chunked prefill bounds a scheduler step, not batch x context; plus the
sampler's logits for max_num_seqs rows) + non-torch memory; the KV pool = the rest (tools/engines/vllm_pool.py).
CUDA graphs are captured after the KV cache is allocated (`compile_or_warm_up_model` -> `capture_model`).
The job's total: weights + profile peak + the KV blocks of the asked sequences + non-torch memory + graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.engines.base import (
    VLLM_MAX_CUDAGRAPH_CAPTURE,
    EngineInputs,
    EngineResult,
    EngineTerm,
    context_notes,
    cuda_context_term,
    cuda_graph_pool,
    cuda_graphs_term,
    gib,
    weights_term,
)
from tools.engines.vllm_pool import BlockPool, block_pool, kv_groups
from tools.notes import Note, note
from tools.rules.kv_cells import VllmBlocks

# vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (OpenAI server usage context):
# max_num_batched_tokens 8192 and max_num_seqs 1024 on cards >= 70 GiB that are not A100s, else 2048 / 256
VLLM_BIG_CARD_BYTES = 70 * 2**30
VLLM_MAX_NUM_BATCHED_TOKENS = {True: 8192, False: 2048}
VLLM_MAX_NUM_SEQS = {True: 1024, False: 256}
SOURCE = "vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_utils.py"


@dataclass(frozen=True)
class ProfileRun:
    """vLLM's profile run (vllm/v1/worker/gpu_model_runner.py profile_run): one dummy forward of a
    scheduler step (_dummy_run) and the sampler's fp32 logits (_dummy_sampler_run); the peak is the larger."""

    step: int  # tokens of one scheduler step: max_num_batched_tokens
    forward: int  # activations of one forward over `step` tokens
    rows: int  # sampler rows: min(max_num_seqs, step)
    sampler: int  # fp32 logits of `rows` rows

    @property
    def peak(self) -> int:
        return max(self.forward, self.sampler)


def step_tokens(card_bytes: int, stated: int | None) -> int:
    return stated or VLLM_MAX_NUM_BATCHED_TOKENS[card_bytes >= VLLM_BIG_CARD_BYTES]


class VllmEngine:
    """vLLM v1 (see the module docstring)."""

    name = "vllm"
    source = SOURCE

    def fraction(self, x: EngineInputs) -> float:
        return x.gpu_memory_utilization

    def profile_run(self, x: EngineInputs) -> ProfileRun:
        step = step_tokens(x.card_bytes, x.max_num_batched_tokens)
        # gpu_model_runner._dummy_sampler_run: fp32 logits for min(max_num_seqs, step) rows
        rows = min(VLLM_MAX_NUM_SEQS[x.card_bytes >= VLLM_BIG_CARD_BYTES], step)
        return ProfileRun(
            step=step, forward=x.activation_bytes(step), rows=rows, sampler=rows * x.vocab_size * 4
        )

    def kv_pool(self, x: EngineInputs, profile: ProfileRun) -> BlockPool:
        # gpu_worker.py: non_kv_cache_memory = weights + the profile run's torch peak + non-torch memory
        return block_pool(
            card_bytes=x.card_bytes,
            fraction=self.fraction(x),
            non_kv_bytes=x.weights_bytes + profile.peak + x.overhead_bytes,
            groups=kv_groups(list(x.kv_specs), VllmBlocks(step=profile.step)),
            seq_len=x.seq_len,
        )

    def kv_term(self, x: EngineInputs, pool: BlockPool) -> EngineTerm:
        g = pool.groups
        per_seq = pool.blocks_per_sequence
        cell = pool.block_bytes // (g.group_size * g.cache.block_size)
        kv = x.sequences * per_seq * pool.block_bytes
        return EngineTerm(
            "kv_cache",
            kv,
            "n_seq x N_blocks x L_group x block_size x C_tok",
            f"{x.sequences} x ({g.text(x.seq_len)} = {per_seq:,}) x {g.group_size} x {g.cache.block_size}"
            f" x {cell:,} B = {kv:,} B",
            "vllm/v1/kv_cache_interface.py max_memory_usage_bytes; kv_cache_utils.py (hybrid KV groups)",
            "kv_cache",
        )

    def terms(self, x: EngineInputs, profile: ProfileRun, pool: BlockPool, graphs: int) -> list[EngineTerm]:
        p = profile
        return [
            weights_term(x, "vllm model loader (weights_memory in the profile)"),
            EngineTerm(
                "activations",
                p.peak,
                "max(A_forward(max_num_batched_tokens), max_num_seqs x V x 4 B)",
                f"max(A_forward({p.step:,}) = {p.forward:,} B, {p.rows} x {x.vocab_size:,} x 4 B = {p.sampler:,} B)",
                "vllm/v1/worker/gpu_model_runner.py profile_run (_dummy_run + _dummy_sampler_run)",
                "activations.profile_run",
                label_values=(("step", p.step),),
            ),
            self.kv_term(x, pool),
            cuda_context_term(x, "M_non_torch", "vllm/utils memory_profiling non_torch_increase"),
            cuda_graphs_term(
                graphs,
                f"A_graph({VLLM_MAX_CUDAGRAPH_CAPTURE})",
                "vllm/v1/worker/gpu_model_runner.py capture_model (after KV allocation, outside the reservation)",
            ),
        ]

    def notes(self, x: EngineInputs, pool: BlockPool, longest: int) -> list[Note]:
        out = [
            note(
                "vllm_pool",
                engine=self.name,
                fraction=self.fraction(x),
                card=gib(x.card_bytes),
                reserved=gib(pool.reserved),
                non_kv=gib(pool.non_kv_bytes),
                pool=gib(pool.available),
                kv_tokens=pool.max_kv_tokens,
                sequences=pool.max_concurrent,
                seq_len=x.seq_len,
                asked=x.sequences,
                longest=longest,
            )
        ]
        # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: one max_model_len sequence must fit
        if pool.num_blocks < pool.blocks_per_sequence:
            needed = gib(pool.blocks_per_sequence * pool.block_bytes)
            out.append(
                note(
                    "vllm_refuses_to_start",
                    engine=self.name,
                    max_model_len=x.seq_len,
                    needed=needed,
                    pool=gib(pool.available),
                )
            )
        elif pool.max_concurrent < x.sequences:
            out.append(
                note(
                    "engine_pool_short",
                    engine=self.name,
                    sequences=pool.max_concurrent,
                    asked=x.sequences,
                    seq_len=x.seq_len,
                )
            )
        return out

    def run(self, x: EngineInputs) -> EngineResult:
        profile = self.profile_run(x)
        pool = self.kv_pool(x, profile)
        # the graphs are captured after the KV cache is allocated: on top of the reservation
        graphs = cuda_graph_pool(x, profile.step)
        room = pool.longest_sequence(x.max_model_len or pool.num_blocks * pool.block_size)
        kv_context = pool.longest_sequence(max(room, pool.num_blocks * pool.block_size))
        longest = x.window_cap(room)
        return EngineResult(
            engine=self.name,
            terms=self.terms(x, profile, pool, graphs),
            reserved_bytes=pool.reserved,
            kv_pool_bytes=pool.available,
            max_kv_tokens=pool.max_kv_tokens,
            max_concurrent_sequences=pool.max_concurrent,
            max_context_tokens=longest,
            kv_context_tokens=kv_context,
            notes=self.notes(x, pool, longest) + context_notes(x, kv_context),
            assumptions=[
                ("max_num_batched_tokens", profile.step, "max_num_batched_tokens.vllm_default", {}),
                ("gpu_memory_utilization", self.fraction(x), "gpu_memory_utilization.vllm_engine", {}),
            ],
        )
