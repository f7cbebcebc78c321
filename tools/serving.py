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

from collections.abc import Callable
from dataclasses import dataclass, field

from tools.notes import Note, note
from tools.result import ServingCapacity

VLLM_DEFAULT_BLOCK_SIZE = (
    16  # tokens per KV block: vllm/config/cache.py CacheConfig.block_size default (CUDA)
)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class BlockPool:
    """vLLM's KV budget cut into blocks: what the reservation leaves after the non-KV memory."""

    reserved: int  # requested_memory = card x gpu_memory_utilization
    non_kv_bytes: int  # weights + profile peak + non-torch memory
    available: int  # the KV cache's share of the reservation
    block_size: int  # tokens per block
    block_bytes: int  # one block over all layers this GPU holds
    num_blocks: int
    blocks_per_sequence: int  # cdiv(seq_len, block_size)

    @property
    def max_kv_tokens(self) -> int:
        return self.num_blocks * self.block_size

    @property
    def max_concurrent(self) -> int:
        return self.num_blocks // self.blocks_per_sequence


def block_pool(
    *,
    gpu_memory_bytes: int,
    gpu_memory_utilization: float,
    non_kv_bytes: int,
    kv_bytes_per_token: int,
    seq_len: int,
    block_size: int = VLLM_DEFAULT_BLOCK_SIZE,
) -> BlockPool:
    """vLLM's start-up arithmetic from the reservation to the number of blocks and of sequences."""
    # vllm/v1/worker/gpu_worker.py: requested_memory = total_memory x gpu_memory_utilization
    reserved = int(gpu_memory_bytes * gpu_memory_utilization)
    # vllm/v1/worker/gpu_worker.py: available_kv_cache_memory = requested_memory - non_kv_cache_memory
    available = max(0, reserved - non_kv_bytes)
    # vllm/v1/core/kv_cache_utils.py get_num_blocks: available // (page_size x num_layers)
    block_bytes = block_size * kv_bytes_per_token
    return BlockPool(
        reserved=reserved,
        non_kv_bytes=non_kv_bytes,
        available=available,
        block_size=block_size,
        block_bytes=block_bytes,
        num_blocks=available // block_bytes,
        # vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config: blocks / cdiv(len, block)
        blocks_per_sequence=_cdiv(seq_len, block_size),
    )


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
    pool = block_pool(
        gpu_memory_bytes=gpu_memory_bytes,
        gpu_memory_utilization=gpu_memory_utilization,
        non_kv_bytes=max(0, int(non_kv_bytes)),
        kv_bytes_per_token=kv_bytes_per_token,
        seq_len=seq_len,
        block_size=block_size,
    )
    return ServingCapacity(
        gpu_memory_utilization=gpu_memory_utilization,
        reserved_bytes=pool.reserved,
        kv_cache_bytes=pool.available,
        kv_bytes_per_token=kv_bytes_per_token,
        max_kv_tokens=pool.max_kv_tokens,
        max_concurrent_sequences=pool.max_concurrent,
        max_context_at_batch_1=pool.max_kv_tokens,
    )


# --------------------------------------------------------------------------------------------------
# Serving engines, each with its own memory model (one small class per engine, answering the same
# questions: what it holds on the most loaded GPU, whether the asked load fits, how many sequences of
# the asked length fit and the longest context).
# --------------------------------------------------------------------------------------------------

# vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (OpenAI server usage context):
# max_num_batched_tokens 8192 and max_num_seqs 1024 on cards >= 70 GiB that are not A100s, else 2048 / 256
VLLM_BIG_CARD_BYTES = 70 * 2**30
VLLM_MAX_NUM_BATCHED_TOKENS = {True: 8192, False: 2048}
VLLM_MAX_NUM_SEQS = {True: 1024, False: 256}
# vllm/config/compilation.py: CUDA graphs are captured for batch sizes up to max_cudagraph_capture_size
# (default 512 tokens); the captured graphs share one memory pool, sized by the largest capture
VLLM_MAX_CUDAGRAPH_CAPTURE = 512
# sglang/srt/server_args.py: mem_fraction_static default (0.88 on cards with 80 GB class memory; the
# library picks 0.79-0.88 by card size and TP; 0.88 taken) and chunked_prefill_size 8192 (>= 80 GB cards)
SGLANG_MEM_FRACTION_STATIC = 0.88
SGLANG_CHUNKED_PREFILL = 8192
# llama.cpp common/common.h common_params: n_ctx 4096, n_batch 2048, n_ubatch 512, KV cache type f16
LLAMA_CPP_N_UBATCH = 512
LLAMA_CPP_KV_BYTES = 2
# ollama envconfig/config.go: OLLAMA_CONTEXT_LENGTH 4096 (2048 before v0.6; recent builds choose
# 4k/32k/256k by VRAM), num_batch 512, OLLAMA_KV_CACHE_TYPE f16, OLLAMA_NUM_PARALLEL 1
OLLAMA_NUM_BATCH = 512


@dataclass(frozen=True)
class EngineInputs:
    """What an engine's memory model needs, per GPU (after tensor-parallel sharding)."""

    card_bytes: int
    num_gpus: int  # cards serving one copy (vLLM/SGLang: TP size; llama.cpp: layer split)
    weights_bytes: int  # the weights one GPU holds when the whole model is on the GPUs (after TP)
    output_bytes: int  # of which the LM head / output layer (llama.cpp keeps it with the last layers)
    num_layers: int
    kv_bytes_per_token: int  # K and V of one token over the layers one GPU holds, engine KV dtype
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
    max_model_len: int | None = None


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
    """An engine's answer: its terms, what the most loaded GPU shows, the verdict and the KV room."""

    engine: str
    terms: list[EngineTerm]
    total_bytes: int  # what nvidia-smi shows on the most loaded GPU
    fits: bool
    headroom_bytes: int
    kv_pool_bytes: int
    max_kv_tokens: int
    max_concurrent_sequences: int  # of seq_len tokens
    max_context_tokens: int  # the longest single sequence the KV room holds
    gpu_layers: int | None = None  # llama.cpp -ngl: layers on the GPU(s)
    host_bytes: int = 0  # weights + KV left in CPU RAM (llama.cpp partial offload)
    notes: list[Note] = field(default_factory=list)
    # (field, value, code, values): the engine's defaults as assumptions (tools/assumptions.py codes)
    assumptions: list[tuple[str, object, str, dict[str, object]]] = field(default_factory=list)
    reserved_bytes: int = 0  # what the engine takes up front (vLLM/SGLang: fraction x card); 0 = total_bytes


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


# ---- steps more than one engine takes ------------------------------------------------------------


def cuda_graph_pool(x: EngineInputs, step: int) -> int:
    """The CUDA-graph memory pool: one forward of the largest captured batch, never above the step
    (vllm/config/compilation.py max_cudagraph_capture_size; sglang cuda_graph_runner.py the same)."""
    return x.activation_bytes(min(VLLM_MAX_CUDAGRAPH_CAPTURE, step))


def _headroom(x: EngineInputs, total: int, spare_kv: int) -> int:
    """KV room left after the asked sequences while the whole footprint fits the card, else how far
    the footprint is over the card."""
    return spare_kv if total <= x.card_bytes else x.card_bytes - total


def _tp_weights_term(x: EngineInputs, source: str) -> EngineTerm:
    return EngineTerm(
        "weights",
        x.weights_bytes,
        "weights on this GPU (after TP)",
        f"{x.weights_bytes:,} B",
        source,
        "weights.engine",
    )


def _cuda_context_term(x: EngineInputs, formula: str, source: str) -> EngineTerm:
    return EngineTerm(
        "cuda_context",
        x.overhead_bytes,
        formula,
        f"{x.overhead_bytes:,} B",
        source,
        "cuda_context",
        "overhead",
    )


def _cuda_graphs_term(graphs: int, formula: str, source: str) -> EngineTerm:
    return EngineTerm("cuda_graphs", graphs, formula, f"{graphs:,} B", source, "cuda_graphs", "overhead")


# ---- vLLM ----------------------------------------------------------------------------------------


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


class VllmEngine:
    """vLLM v1: gpu_memory_utilization x card taken up front; the KV pool is what the profile run leaves.

    vllm/v1/worker/gpu_worker.py `determine_available_memory`: requested_memory = total x
    gpu_memory_utilization; non_kv_cache_memory = weights + the profile run's torch peak (one dummy
    forward of max_num_batched_tokens tokens: chunked prefill bounds a scheduler step, not batch x
    context; plus the sampler's logits for max_num_seqs rows) + non-torch memory; KV = the rest.
    CUDA graphs are captured after the KV cache is allocated (`compile_or_warm_up_model` ->
    `capture_model`), outside the requested memory.
    """

    name = "vllm"
    source = "vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_utils.py"

    def fraction(self, x: EngineInputs) -> float:
        return x.gpu_memory_utilization

    def step_tokens(self, x: EngineInputs) -> int:
        big = x.card_bytes >= VLLM_BIG_CARD_BYTES
        return x.max_num_batched_tokens or VLLM_MAX_NUM_BATCHED_TOKENS[big]

    def max_seqs(self, x: EngineInputs) -> int:
        return VLLM_MAX_NUM_SEQS[x.card_bytes >= VLLM_BIG_CARD_BYTES]

    def profile_run(self, x: EngineInputs) -> ProfileRun:
        step = self.step_tokens(x)
        # gpu_model_runner._dummy_sampler_run: fp32 logits for min(max_num_seqs, step) rows
        rows = min(self.max_seqs(x), step)
        return ProfileRun(
            step=step, forward=x.activation_bytes(step), rows=rows, sampler=rows * x.vocab_size * 4
        )

    def kv_pool(self, x: EngineInputs, profile: ProfileRun) -> BlockPool:
        # gpu_worker.py: non_kv_cache_memory = weights + the profile run's torch peak + non-torch memory
        return block_pool(
            gpu_memory_bytes=x.card_bytes,
            gpu_memory_utilization=self.fraction(x),
            non_kv_bytes=x.weights_bytes + profile.peak + x.overhead_bytes,
            kv_bytes_per_token=x.kv_bytes_per_token,
            seq_len=x.seq_len,
        )

    def terms(self, x: EngineInputs, profile: ProfileRun, pool: BlockPool, graphs: int) -> list[EngineTerm]:
        p = profile
        return [
            _tp_weights_term(x, "vllm model loader (weights_memory in the profile)"),
            EngineTerm(
                "activations",
                p.peak,
                "max(one forward of max_num_batched_tokens, sampler fp32 logits of max_num_seqs rows)",
                f"max({p.forward:,} B for {p.step:,} tokens, {p.rows} x {x.vocab_size:,} x 4 B = {p.sampler:,} B)",
                "vllm/v1/worker/gpu_model_runner.py profile_run (_dummy_run + _dummy_sampler_run)",
                "activations.profile_run",
                label_values=(("step", p.step),),
            ),
            EngineTerm(
                "kv_cache",
                pool.available,
                "gpu_memory_utilization x card - weights - profile peak - non-torch memory",
                f"{self.fraction(x)} x {x.card_bytes:,} - {pool.non_kv_bytes:,} = {pool.available:,} B "
                f"({pool.num_blocks:,} blocks of {pool.block_size})",
                self.source,
                "kv_cache.vllm_pool",
            ),
            _cuda_context_term(
                x,
                "CUDA context, cuBLAS/NCCL (non-torch memory of the profile)",
                "vllm/utils memory_profiling non_torch_increase",
            ),
            _cuda_graphs_term(
                graphs,
                f"graph pool: one forward of the largest capture size ({VLLM_MAX_CUDAGRAPH_CAPTURE} tokens)",
                "vllm/v1/worker/gpu_model_runner.py capture_model (after KV allocation, outside the reservation)",
            ),
        ]

    def notes(self, x: EngineInputs, pool: BlockPool) -> list[Note]:
        kv_tokens = pool.max_kv_tokens
        out = [
            note(
                "vllm_pool",
                engine=self.name,
                fraction=self.fraction(x),
                card=_gib(x.card_bytes),
                reserved=_gib(pool.reserved),
                kv_tokens=kv_tokens,
                sequences=pool.max_concurrent,
                seq_len=x.seq_len,
                asked=x.sequences,
                longest=min(kv_tokens, x.max_model_len or kv_tokens),
            )
        ]
        # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: one max_model_len sequence must fit
        if pool.num_blocks < pool.blocks_per_sequence:
            needed = _gib(pool.blocks_per_sequence * pool.block_bytes)
            out.append(
                note(
                    "vllm_refuses_to_start",
                    engine=self.name,
                    max_model_len=x.seq_len,
                    needed=needed,
                    pool=_gib(pool.available),
                )
            )
        return out

    def run(self, x: EngineInputs) -> EngineResult:
        profile = self.profile_run(x)
        pool = self.kv_pool(x, profile)
        # the graphs are captured after the KV cache is allocated: on top of the reservation
        graphs = cuda_graph_pool(x, profile.step)
        total = pool.reserved + graphs
        need_blocks = x.sequences * pool.blocks_per_sequence
        return EngineResult(
            engine=self.name,
            terms=self.terms(x, profile, pool, graphs),
            total_bytes=total,
            fits=pool.num_blocks >= need_blocks
            and total <= x.card_bytes
            and pool.non_kv_bytes < pool.reserved,
            headroom_bytes=_headroom(x, total, (pool.num_blocks - need_blocks) * pool.block_bytes),
            kv_pool_bytes=pool.available,
            max_kv_tokens=pool.max_kv_tokens,
            max_concurrent_sequences=pool.max_concurrent,
            max_context_tokens=pool.max_kv_tokens,
            notes=self.notes(x, pool),
            reserved_bytes=pool.reserved,
            assumptions=[
                ("max_num_batched_tokens", profile.step, "max_num_batched_tokens.vllm_default", {}),
                ("gpu_memory_utilization", self.fraction(x), "gpu_memory_utilization.vllm_engine", {}),
            ],
        )


# ---- SGLang --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticSplit:
    """SGLang's split of the card: mem_fraction_static x card holds the weights and the KV token pool;
    one chunked-prefill step, the CUDA graphs and the CUDA context live in the rest."""

    static: int  # mem_fraction_static x card
    pool: int  # the KV token pool: static - weights
    kv_tokens: int  # pool // bytes per token (SGLang's pool is per token, no blocks)
    step: int  # chunked_prefill_size
    forward: int  # activations of one prefill chunk
    graphs: int  # CUDA-graph pool
    dynamic: int  # what lives outside the static fraction

    @property
    def total(self) -> int:
        return self.static + self.dynamic


class SglangEngine:
    """SGLang: mem_fraction_static x card holds weights + the KV pool; activations live in the rest.

    sglang/srt/model_executor/model_runner.py `profile_max_num_token`: rest_memory = available -
    total x (1 - mem_fraction_static); the token pool gets rest_memory // cell_size. The chunked
    prefill step (chunked_prefill_size) and CUDA graphs run in the (1 - fraction) outside the pool.
    """

    name = "sglang"
    source = (
        "sglang/srt/model_executor/model_runner.py profile_max_num_token; server_args.py mem_fraction_static"
    )

    def fraction(self, x: EngineInputs) -> float:
        return x.gpu_memory_utilization if x.fraction_stated else SGLANG_MEM_FRACTION_STATIC

    def step_tokens(self, x: EngineInputs) -> int:
        return x.max_num_batched_tokens or SGLANG_CHUNKED_PREFILL

    def split(self, x: EngineInputs) -> StaticSplit:
        static = int(x.card_bytes * self.fraction(x))
        # model_runner.py profile_max_num_token: the token pool is what the static fraction leaves after
        # the weights, cut into per-token cells (rest_memory // cell_size)
        pool = max(0, static - x.weights_bytes)
        step = self.step_tokens(x)
        forward = x.activation_bytes(step)
        graphs = cuda_graph_pool(x, step)
        return StaticSplit(
            static=static,
            pool=pool,
            kv_tokens=pool // x.kv_bytes_per_token,
            step=step,
            forward=forward,
            graphs=graphs,
            dynamic=forward + graphs + x.overhead_bytes,
        )

    def terms(self, x: EngineInputs, s: StaticSplit) -> list[EngineTerm]:
        return [
            _tp_weights_term(x, "sglang model loader"),
            EngineTerm(
                "kv_cache",
                s.pool,
                "mem_fraction_static x card - weights",
                f"{self.fraction(x)} x {x.card_bytes:,} - {x.weights_bytes:,} = {s.pool:,} B",
                self.source,
                "kv_cache.sglang_pool",
            ),
            EngineTerm(
                "activations",
                s.forward,
                f"one chunked-prefill step of {s.step:,} tokens",
                f"{s.forward:,} B",
                "sglang server_args.py chunked_prefill_size",
                "activations.prefill_chunk",
                label_values=(("step", s.step),),
            ),
            _cuda_graphs_term(
                s.graphs,
                f"graph pool of the largest capture ({VLLM_MAX_CUDAGRAPH_CAPTURE})",
                "sglang cuda_graph_runner.py",
            ),
            _cuda_context_term(x, "CUDA context, cuBLAS/NCCL", "calibration.CUDA_CONTEXT_BYTES"),
        ]

    def notes(self, x: EngineInputs, s: StaticSplit) -> list[Note]:
        out = [
            note(
                "sglang_pool",
                fraction=self.fraction(x),
                card=_gib(x.card_bytes),
                static=_gib(s.static),
                kv_tokens=s.kv_tokens,
                sequences=s.kv_tokens // x.seq_len,
                seq_len=x.seq_len,
                asked=x.sequences,
                other=_gib(x.card_bytes - s.static),
            )
        ]
        if s.total > x.card_bytes:
            out.append(note("sglang_step_does_not_fit", step=_gib(s.dynamic)))
        return out

    def run(self, x: EngineInputs) -> EngineResult:
        s = self.split(x)
        concurrent = s.kv_tokens // x.seq_len
        return EngineResult(
            engine=self.name,
            terms=self.terms(x, s),
            total_bytes=s.total,
            fits=concurrent >= x.sequences and s.total <= x.card_bytes,
            headroom_bytes=_headroom(
                x, s.total, (s.kv_tokens - x.sequences * x.seq_len) * x.kv_bytes_per_token
            ),
            kv_pool_bytes=s.pool,
            max_kv_tokens=s.kv_tokens,
            max_concurrent_sequences=concurrent,
            max_context_tokens=s.kv_tokens,
            notes=self.notes(x, s),
            reserved_bytes=s.static,
            assumptions=[
                ("gpu_memory_utilization", self.fraction(x), "gpu_memory_utilization.sglang_default", {}),
                ("max_num_batched_tokens", s.step, "max_num_batched_tokens.sglang_default", {}),
            ],
        )


# ---- llama.cpp / ollama --------------------------------------------------------------------------


def llama_cpp_compute_buffer(x: EngineInputs, n_ctx: int, batch: int, *, full: bool) -> int:
    """The ggml compute buffer of one ubatch, ollama's estimate of llama.cpp's graph (fs/ggml/ggml.go
    GraphSize, "llama" case): full offload max(4b(1 + 4h + n_ctx(1 + heads)), 4b(h + vocab)); partial
    offload 4bh + max(4b(1 + h + max(n_ctx, h)) + h^2 x 9/16 + 4 n_ctx(b heads + h), 4b(h + vocab) + h vocab x 105/128)."""
    h, heads, vocab, b = x.hidden_size, x.num_heads, x.vocab_size, batch
    if full:
        return max(4 * b * (1 + 4 * h + n_ctx * (1 + heads)), 4 * b * (h + vocab))
    return 4 * b * h + max(
        4 * b * (1 + h + max(n_ctx, h)) + h * h * 9 // 16 + 4 * n_ctx * (b * heads + h),
        4 * b * (h + vocab) + h * vocab * 105 // 128,
    )


@dataclass(frozen=True)
class GgufLayers:
    """What llama.cpp places, layer by layer, at this n_ctx, and the room each card has for it."""

    n_ctx: int  # llama-server: n_ctx is shared by its n_parallel slots
    layers: int  # repeating layers (n_layer)
    layer_weights: int  # GGUF tensors of one repeating layer
    layer_kv: int  # K and V of one layer at n_ctx
    output_bytes: int  # the output layer (on the GPU only when every repeating layer is)
    full_buffer: int  # compute buffer, whole model offloaded
    partial_buffer: int  # compute buffer, some layers on the CPU
    cards: int  # --split-mode layer: the layers are split over the cards
    budget: int  # one card less its CUDA context

    @property
    def layer_bytes(self) -> int:
        return self.layer_weights + self.layer_kv


@dataclass(frozen=True)
class Placement:
    """Where llama.cpp puts the model: -ngl, what the most loaded card holds, what stays in CPU RAM."""

    gpu_layers: int  # -ngl: n_layer + 1 when the output layer is on the GPU too
    weights: int
    kv: int
    buffer: int
    host: int  # weights + KV left in CPU RAM

    @property
    def on_card(self) -> int:
        return self.weights + self.kv + self.buffer


class LlamaCppEngine:
    """llama.cpp (llama-server): GGUF weights, KV at n_ctx in f16, one compute buffer, -ngl layers offloaded.

    KV: llama.cpp src/llama-kv-cache.cpp allocates n_ctx cells x n_layer x (n_embd_k_gqa + n_embd_v_gqa)
    in type_k/type_v (f16 default); the compute buffer is what ggml_backend_sched reserves for one
    ubatch graph. When the model does not fit, layers are left on the CPU (-ngl N: N repeating layers
    on the GPU, the output layer only when N > n_layer); several cards split the layers
    (--split-mode layer, the default).
    """

    name = "llama.cpp"
    ubatch = LLAMA_CPP_N_UBATCH

    def layers(self, x: EngineInputs) -> GgufLayers:
        n_ctx = x.seq_len * max(1, x.sequences)
        L = max(1, x.num_layers)
        return GgufLayers(
            n_ctx=n_ctx,
            layers=L,
            layer_weights=max(0, x.weights_bytes - x.output_bytes) // L,
            # src/llama-kv-cache.cpp: n_ctx cells x (n_embd_k_gqa + n_embd_v_gqa) per layer
            layer_kv=x.kv_bytes_per_token * n_ctx // L,
            output_bytes=x.output_bytes,
            full_buffer=llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=True),
            partial_buffer=llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=False),
            cards=max(1, x.num_gpus),
            budget=x.card_bytes - x.overhead_bytes,
        )

    def whole_model(self, g: GgufLayers) -> Placement | None:
        """Every layer on the GPUs, split evenly, the output layer and its buffer on the last card (None
        when the most loaded card would be over its budget)."""
        per_card = _cdiv(g.layers, g.cards)
        last_layers = g.layers - per_card * (g.cards - 1)
        last_load = last_layers * g.layer_bytes + g.output_bytes + g.full_buffer
        first_load = per_card * g.layer_bytes + g.full_buffer
        if max(first_load if g.cards > 1 else 0, last_load) > g.budget:
            return None
        first_heavier = g.cards > 1 and first_load >= last_load
        here = per_card if first_heavier else last_layers
        return Placement(
            gpu_layers=g.layers + 1,
            weights=here * g.layer_weights + (0 if first_heavier else g.output_bytes),
            kv=here * g.layer_kv,
            buffer=g.full_buffer,
            host=0,
        )

    def partial_offload(self, g: GgufLayers) -> Placement:
        """As many repeating layers per card as fit beside the partial-offload buffer (-ngl); the rest and
        the output layer stay in CPU RAM."""
        fit_per_card = max(0, (g.budget - g.partial_buffer) // max(1, g.layer_bytes))
        ngl = min(g.layers, fit_per_card * g.cards)
        here = min(fit_per_card, ngl)
        return Placement(
            gpu_layers=ngl,
            weights=here * g.layer_weights,
            kv=here * g.layer_kv,
            buffer=g.partial_buffer,
            host=(g.layers - ngl) * g.layer_bytes + g.output_bytes,
        )

    def max_context(self, x: EngineInputs, g: GgufLayers) -> int:
        """The longest n_ctx whose KV fits beside the whole model and its full-offload buffer."""
        kv_room = max(0, g.budget - (g.layers * g.layer_weights + g.output_bytes) // g.cards - g.full_buffer)
        return kv_room * g.cards // max(1, x.kv_bytes_per_token)

    def terms(self, x: EngineInputs, g: GgufLayers, p: Placement) -> list[EngineTerm]:
        offload = "full" if p.gpu_layers > g.layers else "partial"
        return [
            EngineTerm(
                "weights",
                p.weights,
                "GGUF tensors of the layers on this GPU (+ output layer when all fit)",
                f"{p.weights:,} B",
                "tools.rules.gguf (ggml-common.h block sizes, llama-quant.cpp mixes)",
                "weights.gguf_layers",
            ),
            EngineTerm(
                "kv_cache",
                p.kv,
                "n_ctx x layers here x (n_embd_k_gqa + n_embd_v_gqa) x 2 B (f16)",
                f"{g.n_ctx:,} tokens x {x.kv_bytes_per_token:,} B/token x (layers here / {g.layers})",
                "llama.cpp src/llama-kv-cache.cpp",
                "kv_cache.gguf",
                label_values=(("n_ctx", g.n_ctx),),
            ),
            EngineTerm(
                "compute_buffer",
                p.buffer,
                f"one {self.ubatch}-token ubatch graph ({offload} offload)",
                f"{p.buffer:,} B",
                "ollama fs/ggml/ggml.go GraphSize (llama.cpp ggml_backend_sched reserve)",
                "compute_buffer",
            ),
            _cuda_context_term(x, "CUDA context, cuBLAS workspaces", "calibration.CUDA_CONTEXT_BYTES"),
        ]

    def run(self, x: EngineInputs) -> EngineResult:
        g = self.layers(x)
        p = self.whole_model(g) or self.partial_offload(g)
        max_ctx = self.max_context(x, g)
        fits = p.gpu_layers > g.layers
        where = {
            "engine": self.name,
            "layers": g.layers,
            "cards": g.cards,
            "n_ctx": g.n_ctx,
            "max_context": max_ctx,
        }
        return EngineResult(
            engine=self.name,
            terms=self.terms(x, g, p),
            total_bytes=p.on_card + x.overhead_bytes,
            fits=fits,
            headroom_bytes=g.budget - p.on_card if fits else -(p.host // g.cards),
            kv_pool_bytes=p.kv,
            max_kv_tokens=g.n_ctx,
            max_concurrent_sequences=max_ctx // x.seq_len if x.seq_len else 0,
            max_context_tokens=max_ctx,
            gpu_layers=p.gpu_layers,
            host_bytes=p.host,
            notes=[
                note("gguf_all_layers_on_gpu", **where)
                if fits
                else note("gguf_some_layers_on_gpu", **where, gpu_layers=p.gpu_layers, host=_gib(p.host))
            ],
            assumptions=[
                ("n_ctx", g.n_ctx, "n_ctx.gguf", {}),  # llama.cpp common.h n_ctx 4096 when not asked
                ("kv_dtype", "f16", "kv_dtype.gguf", {}),  # llama.cpp cache_type_k / cache_type_v default
            ],
        )


class OllamaEngine(LlamaCppEngine):
    """ollama: llama.cpp underneath, num_ctx 4096 and num_batch 512 by default (envconfig/config.go)."""

    name = "ollama"
    ubatch = OLLAMA_NUM_BATCH


ENGINES: dict[str, VllmEngine | SglangEngine | LlamaCppEngine | OllamaEngine] = {
    "vllm": VllmEngine(),
    "sglang": SglangEngine(),
    "llama.cpp": LlamaCppEngine(),
    "ollama": OllamaEngine(),
}
