"""SGLang: what a job needs on the most loaded GPU, and the token pool mem_fraction_static leaves.

sglang/srt/model_executor/model_runner.py `profile_max_num_token`: rest_memory = available - total x
(1 - mem_fraction_static); the token pool gets rest_memory // cell_size, cell_size = K and V of one token
over every layer (`get_cell_size_per_token`). The chunked prefill step (chunked_prefill_size) and CUDA graphs
run in the (1 - fraction) outside the pool. Hybrid-SWA architectures (model_config.is_hybrid_swa_model)
split the pool (`set_num_token_hybrid`): full_tokens = total_tokens / (swa_full_tokens_ratio x L_swa +
L_full), swa_tokens = full_tokens x swa_full_tokens_ratio; others keep every token in every layer.
The job's total: weights + the KV of the asked sequences + one prefill chunk + CUDA graphs + context.
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
from tools.notes import Note, note
from tools.rules.kv_cache import kv_bytes, kv_texts
from tools.rules.kv_cells import SglangTokens

# sglang/srt/server_args.py: mem_fraction_static default (0.88 on cards with 80 GB class memory; the
# library picks 0.79-0.88 by card size and TP; 0.88 taken) and chunked_prefill_size 8192 (>= 80 GB cards)
SGLANG_MEM_FRACTION_STATIC = 0.88
SGLANG_CHUNKED_PREFILL = 8192
SGLANG_SWA_FULL_TOKENS_RATIO = 0.8  # sglang/srt/server_args.py swa_full_tokens_ratio default
PROBE = 2**40  # a sequence longer than any window
SOURCE = "sglang/srt/model_executor/model_runner.py profile_max_num_token; server_args.py mem_fraction_static"


@dataclass(frozen=True)
class TokenPool:
    """SGLang's split of the card: mem_fraction_static x card holds the weights and the KV token pool."""

    static: int  # mem_fraction_static x card
    pool: int  # the KV token pool: static - weights
    full_tokens: int  # cells of a full-attention layer
    swa_tokens: int  # cells of a sliding layer (= full_tokens without the SWA pool)
    window: int  # tokens a sliding layer keeps of one sequence (= seq_len without the SWA pool)

    def sequences(self, seq_len: int) -> int:
        return min(self.full_tokens // seq_len, self.swa_tokens // max(1, min(seq_len, self.window)))


class SglangEngine:
    """SGLang (see the module docstring)."""

    name = "sglang"
    source = SOURCE

    def fraction(self, x: EngineInputs) -> float:
        return x.gpu_memory_utilization if x.fraction_stated else SGLANG_MEM_FRACTION_STATIC

    def step_tokens(self, x: EngineInputs) -> int:
        return x.max_num_batched_tokens or SGLANG_CHUNKED_PREFILL

    def token_pool(self, x: EngineInputs) -> TokenPool:
        static = int(x.card_bytes * self.fraction(x))
        pool = max(0, static - x.weights_bytes)
        # model_runner.py profile_max_num_token: rest_memory // cell_size (every layer, every token)
        tokens = pool // x.kv_bytes_per_token
        cache = SglangTokens(hybrid_swa=x.hybrid_swa)
        layers = sum(spec.layers for spec in x.kv_specs)
        # the layers whose cells stop growing (the SWA pool's sliding layers) and the window they keep
        sliding = sum(s.layers for s in x.kv_specs if s.held(PROBE, 1, cache).cells < PROBE)
        window = min((s.held(PROBE, 1, cache).cells for s in x.kv_specs), default=PROBE)
        if not sliding:
            return TokenPool(static, pool, tokens, tokens, PROBE)
        # model_runner.py set_num_token_hybrid: the pool split by swa_full_tokens_ratio
        ratio = SGLANG_SWA_FULL_TOKENS_RATIO
        full = int(tokens * layers / (ratio * sliding + layers - sliding))
        return TokenPool(static, pool, full, int(full * ratio), window)

    def terms(self, x: EngineInputs, tp: TokenPool, step: int, forward: int, graphs: int) -> list[EngineTerm]:
        cache = SglangTokens(hybrid_swa=x.hybrid_swa)
        specs = list(x.kv_specs)
        kv_formula, kv_substituted = kv_texts(specs, x.seq_len, x.sequences, cache)
        return [
            weights_term(x, "sglang model loader"),
            EngineTerm(
                "kv_cache",
                kv_bytes(specs, x.seq_len, x.sequences, cache),
                kv_formula,
                kv_substituted,
                "sglang/srt/mem_cache/memory_pool.py MHATokenToKVPool / swa_memory_pool.py SWAKVPool",
                "kv_cache",
            ),
            EngineTerm(
                "activations",
                forward,
                f"A_forward({step:,})",
                f"{forward:,} B",
                "sglang server_args.py chunked_prefill_size",
                "activations.prefill_chunk",
                label_values=(("step", step),),
            ),
            cuda_graphs_term(graphs, f"A_graph({VLLM_MAX_CUDAGRAPH_CAPTURE})", "sglang cuda_graph_runner.py"),
            cuda_context_term(x, "M_context", "calibration.CUDA_CONTEXT_BYTES"),
        ]

    def notes(self, x: EngineInputs, tp: TokenPool, longest: int) -> list[Note]:
        concurrent = tp.sequences(x.seq_len)
        out = [
            note(
                "sglang_pool",
                fraction=self.fraction(x),
                card=gib(x.card_bytes),
                static=gib(tp.static),
                weights=gib(x.weights_bytes),
                pool=gib(tp.pool),
                kv_tokens=tp.full_tokens,
                sequences=concurrent,
                seq_len=x.seq_len,
                asked=x.sequences,
                longest=longest,
                other=gib(x.card_bytes - tp.static),
            )
        ]
        if concurrent < x.sequences:
            out.append(
                note(
                    "engine_pool_short",
                    engine=self.name,
                    sequences=concurrent,
                    asked=x.sequences,
                    seq_len=x.seq_len,
                )
            )
        return out

    def run(self, x: EngineInputs) -> EngineResult:
        tp = self.token_pool(x)
        step = self.step_tokens(x)
        forward = x.activation_bytes(step)
        graphs = cuda_graph_pool(x, step)
        longest = x.window_cap(tp.full_tokens)
        outside = forward + graphs + x.overhead_bytes
        notes = self.notes(x, tp, longest) + context_notes(x, tp.full_tokens)
        if tp.static + outside > x.card_bytes:
            notes.append(note("sglang_step_does_not_fit", step=gib(outside)))
        return EngineResult(
            engine=self.name,
            terms=self.terms(x, tp, step, forward, graphs),
            reserved_bytes=tp.static,
            kv_pool_bytes=tp.pool,
            max_kv_tokens=tp.full_tokens,
            max_concurrent_sequences=tp.sequences(x.seq_len),
            max_context_tokens=longest,
            kv_context_tokens=tp.full_tokens,
            notes=notes,
            assumptions=[
                ("gpu_memory_utilization", self.fraction(x), "gpu_memory_utilization.sglang_default", {}),
                ("max_num_batched_tokens", step, "max_num_batched_tokens.sglang_default", {}),
            ],
        )
