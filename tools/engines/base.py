"""What every serving engine's memory model takes and gives back, and the terms several engines share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tools.notes import Note
from tools.rules.kv_cache import KvSpec, kv_bytes_per_token

# vllm/config/compilation.py: CUDA graphs are captured for batch sizes up to max_cudagraph_capture_size
# (default 512 tokens); the captured graphs share one memory pool, sized by the largest capture
VLLM_MAX_CUDAGRAPH_CAPTURE = 512


@dataclass(frozen=True)
class EngineInputs:
    """What an engine's memory model needs, per GPU (after tensor-parallel sharding)."""

    card_bytes: int
    usable_bytes: int  # the card less the safety margin: the verdict's budget
    num_gpus: int  # cards serving one copy (vLLM/SGLang: TP size; llama.cpp: layer split)
    weights_bytes: int  # the weights one GPU holds when the whole model is on the GPUs (after TP)
    output_bytes: int  # of which the LM head / output layer (llama.cpp keeps it with the last layers)
    num_layers: int
    kv_specs: tuple[KvSpec, ...]  # K and V per attention kind over the layers one GPU holds, engine KV dtype
    seq_len: int  # tokens per sequence (prompt + generation): vLLM max_model_len, llama.cpp n_ctx
    sequences: int  # sequences served at once (users, batch)
    activation_bytes: Callable[[int], int]  # the transient of one forward over n tokens on one GPU
    hidden_size: int
    vocab_size: int
    num_heads: int
    overhead_bytes: int  # CUDA context, cuBLAS workspaces, NCCL (non-torch memory vLLM's profiler sees)
    gpu_memory_utilization: float = 0.9
    fraction_stated: bool = False  # the user set gpu_memory_utilization / mem_fraction_static
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None  # the model's context window (max_position_embeddings)
    offload_asked: bool = False  # llama.cpp / ollama: the user asked for layers on the CPU
    hybrid_swa: bool = False  # SGLang: the architecture gets the SWA pool (model_config.is_hybrid_swa_model)
    interleaved_swa: bool = False  # sliding and global layers interleave (llama.cpp's SWA cache applies)
    rope_scaling: tuple[str, float, int] | None = None  # (method, factor, tokens) the model card supports

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token over every layer, windows not capped (the per-token figure shown)."""
        return max(1, kv_bytes_per_token(list(self.kv_specs)))

    def window_cap(self, tokens: int) -> int:
        """`tokens`, never beyond the model's context window."""
        return min(tokens, self.max_model_len) if self.max_model_len else tokens


@dataclass(frozen=True)
class EngineTerm:
    """One line of an engine's memory: bytes with formula, substitution, source and label."""

    name: str
    bytes: int
    formula: str
    substituted: str
    source: str
    label: str  # a label code (tools/labels.py LABEL_CODES), filled by `label_values`
    kind: str = "tensor"
    label_values: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class EngineResult:
    """An engine's answer: the terms of the job on the most loaded GPU, and what the engine holds beside it."""

    engine: str
    terms: list[EngineTerm]
    reserved_bytes: int  # what the engine takes up front (vLLM/SGLang: fraction x card; llama.cpp: the total)
    kv_pool_bytes: int  # the KV room the engine makes
    max_kv_tokens: int
    max_concurrent_sequences: int  # of seq_len tokens
    max_context_tokens: int  # the longest single sequence: the KV room's, capped at the model's window
    kv_context_tokens: int  # the longest single sequence the KV room would hold, not capped
    gpu_layers: int | None = None  # llama.cpp -ngl: layers on the GPU(s)
    host_bytes: int = 0  # weights + KV left in CPU RAM (llama.cpp partial offload)
    notes: list[Note] = field(default_factory=list)
    # (field, value, code, values): the engine's defaults as assumptions (tools/assumptions.py codes)
    assumptions: list[tuple[str, object, str, dict[str, object]]] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        """What this job needs on the most loaded GPU: the sum of the terms."""
        return sum(t.bytes for t in self.terms)


def gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def cuda_graph_pool(x: EngineInputs, step: int) -> int:
    """The CUDA-graph memory pool: one forward of the largest captured batch, never above the step
    (vllm/config/compilation.py max_cudagraph_capture_size; sglang cuda_graph_runner.py the same)."""
    return x.activation_bytes(min(VLLM_MAX_CUDAGRAPH_CAPTURE, step))


def weights_term(x: EngineInputs, source: str) -> EngineTerm:
    return EngineTerm(
        "weights", x.weights_bytes, "W_local", f"{x.weights_bytes:,} B", source, "weights.engine"
    )


def cuda_context_term(x: EngineInputs, formula: str, source: str) -> EngineTerm:
    return EngineTerm(
        "cuda_context",
        x.overhead_bytes,
        formula,
        f"{x.overhead_bytes:,} B",
        source,
        "cuda_context",
        "overhead",
    )


def cuda_graphs_term(graphs: int, formula: str, source: str) -> EngineTerm:
    return EngineTerm("cuda_graphs", graphs, formula, f"{graphs:,} B", source, "cuda_graphs", "overhead")


def context_notes(x: EngineInputs, kv_context: int) -> list[Note]:
    """When the KV room would hold a longer sequence than the model's window: the cap, said."""
    from tools.notes import note

    if not x.max_model_len or kv_context <= x.max_model_len:
        return []
    out = [note("context_capped", kv_context=kv_context, window=x.max_model_len)]
    if x.rope_scaling:
        method, factor, tokens = x.rope_scaling
        out.append(
            note("context_rope_scaling", method=method, factor=factor, tokens=tokens, kv_context=kv_context)
        )
    return out


def longest(fits: Callable[[int], bool], hi: int) -> int:
    """The largest n in [0, hi] with fits(n) (fits is monotone: true up to some n, false beyond)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
