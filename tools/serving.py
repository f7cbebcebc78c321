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
    name: str
    bytes: int
    formula: str
    substituted: str
    source: str
    label: str
    kind: str = "tensor"


@dataclass(frozen=True)
class EngineResult:
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
    assumptions: list[tuple[str, object, str]] = field(default_factory=list)
    reserved_bytes: int = 0  # what the engine takes up front (vLLM/SGLang: fraction x card); 0 = total_bytes


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


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

    def run(self, x: EngineInputs) -> EngineResult:
        frac = self.fraction(x)
        requested = int(x.card_bytes * frac)
        step = self.step_tokens(x)
        act = x.activation_bytes(step)
        # gpu_model_runner._dummy_sampler_run: fp32 logits for min(max_num_seqs, step) rows
        rows = min(self.max_seqs(x), step)
        sampler = rows * x.vocab_size * 4
        graphs = x.activation_bytes(min(VLLM_MAX_CUDAGRAPH_CAPTURE, step))
        non_kv = x.weights_bytes + max(act, sampler) + x.overhead_bytes
        pool = max(0, requested - non_kv)
        block_bytes = VLLM_DEFAULT_BLOCK_SIZE * x.kv_bytes_per_token
        blocks = pool // block_bytes
        kv_tokens = blocks * VLLM_DEFAULT_BLOCK_SIZE
        per_seq_blocks = _cdiv(x.seq_len, VLLM_DEFAULT_BLOCK_SIZE)
        concurrent = blocks // per_seq_blocks
        terms = [
            EngineTerm(
                "weights",
                x.weights_bytes,
                "weights on this GPU (after TP)",
                f"{x.weights_bytes:,} B",
                "vllm model loader (weights_memory in the profile)",
                "weights",
            ),
            EngineTerm(
                "activations",
                max(act, sampler),
                "max(one forward of max_num_batched_tokens, sampler fp32 logits of max_num_seqs rows)",
                f"max({act:,} B for {step:,} tokens, {rows} x {x.vocab_size:,} x 4 B = {sampler:,} B)",
                "vllm/v1/worker/gpu_model_runner.py profile_run (_dummy_run + _dummy_sampler_run)",
                f"profile-run peak ({step:,}-token step)",
            ),
            EngineTerm(
                "kv_cache",
                pool,
                "gpu_memory_utilization x card - weights - profile peak - non-torch memory",
                f"{frac} x {x.card_bytes:,} - {non_kv:,} = {pool:,} B ({blocks:,} blocks of {VLLM_DEFAULT_BLOCK_SIZE})",
                self.source,
                "KV-cache pool (pre-allocated)",
            ),
            EngineTerm(
                "cuda_context",
                x.overhead_bytes,
                "CUDA context, cuBLAS/NCCL (non-torch memory of the profile)",
                f"{x.overhead_bytes:,} B",
                "vllm/utils memory_profiling non_torch_increase",
                "CUDA context",
                "overhead",
            ),
            EngineTerm(
                "cuda_graphs",
                graphs,
                f"graph pool: one forward of the largest capture size ({VLLM_MAX_CUDAGRAPH_CAPTURE} tokens)",
                f"{graphs:,} B",
                "vllm/v1/worker/gpu_model_runner.py capture_model (after KV allocation, outside the reservation)",
                "CUDA graphs",
                "overhead",
            ),
        ]
        total = requested + graphs
        need_blocks = x.sequences * per_seq_blocks
        fits = blocks >= need_blocks and total <= x.card_bytes and non_kv < requested
        notes = [
            note(
                "vllm_pool",
                engine=self.name,
                fraction=frac,
                card=_gib(x.card_bytes),
                reserved=_gib(requested),
                kv_tokens=kv_tokens,
                sequences=concurrent,
                seq_len=x.seq_len,
                asked=x.sequences,
                longest=min(kv_tokens, x.max_model_len or kv_tokens),
            )
        ]
        if blocks < per_seq_blocks:
            notes.append(
                note(
                    "vllm_refuses_to_start",
                    engine=self.name,
                    max_model_len=x.seq_len,
                    needed=_gib(per_seq_blocks * block_bytes),
                    pool=_gib(pool),
                )
            )
        return EngineResult(
            engine=self.name,
            terms=terms,
            total_bytes=total,
            fits=fits,
            headroom_bytes=(blocks - need_blocks) * block_bytes
            if total <= x.card_bytes
            else x.card_bytes - total,
            kv_pool_bytes=pool,
            max_kv_tokens=kv_tokens,
            max_concurrent_sequences=concurrent,
            max_context_tokens=kv_tokens,
            notes=notes,
            reserved_bytes=requested,
            assumptions=[
                (
                    "max_num_batched_tokens",
                    step,
                    "vllm/engine/arg_utils.py get_batch_defaults (OpenAI server)",
                ),
                ("gpu_memory_utilization", frac, "vLLM default (vllm/config/cache.py)"),
            ],
        )


class SglangEngine(VllmEngine):
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

    def run(self, x: EngineInputs) -> EngineResult:
        frac = self.fraction(x)
        static = int(x.card_bytes * frac)
        step = self.step_tokens(x)
        act = x.activation_bytes(step)
        graphs = x.activation_bytes(min(VLLM_MAX_CUDAGRAPH_CAPTURE, step))
        pool = max(0, static - x.weights_bytes)
        kv_tokens = pool // x.kv_bytes_per_token
        concurrent = kv_tokens // x.seq_len
        dynamic = act + graphs + x.overhead_bytes
        total = static + dynamic
        terms = [
            EngineTerm(
                "weights",
                x.weights_bytes,
                "weights on this GPU (after TP)",
                f"{x.weights_bytes:,} B",
                "sglang model loader",
                "weights",
            ),
            EngineTerm(
                "kv_cache",
                pool,
                "mem_fraction_static x card - weights",
                f"{frac} x {x.card_bytes:,} - {x.weights_bytes:,} = {pool:,} B",
                self.source,
                "KV token pool (pre-allocated)",
            ),
            EngineTerm(
                "activations",
                act,
                f"one chunked-prefill step of {step:,} tokens",
                f"{act:,} B",
                "sglang server_args.py chunked_prefill_size",
                f"prefill chunk ({step:,} tokens)",
            ),
            EngineTerm(
                "cuda_graphs",
                graphs,
                f"graph pool of the largest capture ({VLLM_MAX_CUDAGRAPH_CAPTURE})",
                f"{graphs:,} B",
                "sglang cuda_graph_runner.py",
                "CUDA graphs",
                "overhead",
            ),
            EngineTerm(
                "cuda_context",
                x.overhead_bytes,
                "CUDA context, cuBLAS/NCCL",
                f"{x.overhead_bytes:,} B",
                "calibration.CUDA_CONTEXT_BYTES",
                "CUDA context",
                "overhead",
            ),
        ]
        fits = concurrent >= x.sequences and total <= x.card_bytes
        notes = [
            note(
                "sglang_pool",
                fraction=frac,
                card=_gib(x.card_bytes),
                static=_gib(static),
                kv_tokens=kv_tokens,
                sequences=concurrent,
                seq_len=x.seq_len,
                asked=x.sequences,
                other=_gib(x.card_bytes - static),
            )
        ]
        if total > x.card_bytes:
            notes.append(note("sglang_step_does_not_fit", step=_gib(dynamic)))
        return EngineResult(
            engine=self.name,
            terms=terms,
            total_bytes=total,
            fits=fits,
            headroom_bytes=(kv_tokens - x.sequences * x.seq_len) * x.kv_bytes_per_token
            if total <= x.card_bytes
            else x.card_bytes - total,
            kv_pool_bytes=pool,
            max_kv_tokens=kv_tokens,
            max_concurrent_sequences=concurrent,
            max_context_tokens=kv_tokens,
            notes=notes,
            reserved_bytes=static,
            assumptions=[
                ("gpu_memory_utilization", frac, "SGLang mem_fraction_static (sglang/srt/server_args.py)"),
                ("max_num_batched_tokens", step, "SGLang chunked_prefill_size default"),
            ],
        )


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

    def run(self, x: EngineInputs) -> EngineResult:
        n_ctx = x.seq_len * max(1, x.sequences)  # llama-server: n_ctx is shared by its n_parallel slots
        L = max(1, x.num_layers)
        layer_w = max(0, x.weights_bytes - x.output_bytes) // L
        layer_kv = x.kv_bytes_per_token * n_ctx // L
        full_buf = llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=True)
        part_buf = llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=False)
        cards = max(1, x.num_gpus)
        budget = x.card_bytes - x.overhead_bytes
        # whole model on the GPUs: layers split evenly, the output layer and its buffer on the last card
        per_card_layers = _cdiv(L, cards)
        last_layers = L - per_card_layers * (cards - 1)
        last_load = last_layers * (layer_w + layer_kv) + x.output_bytes + full_buf
        first_load = per_card_layers * (layer_w + layer_kv) + full_buf
        most = max(first_load if cards > 1 else 0, last_load)
        if most <= budget:
            ngl, host = L + 1, 0
            gpu_w = (per_card_layers if cards > 1 and first_load >= last_load else last_layers) * layer_w
            gpu_w += x.output_bytes if not (cards > 1 and first_load >= last_load) else 0
            gpu_kv = (per_card_layers if cards > 1 and first_load >= last_load else last_layers) * layer_kv
            buf = full_buf
        else:
            fit_per_card = max(0, (budget - part_buf) // max(1, layer_w + layer_kv))
            ngl = min(L, fit_per_card * cards)
            on_card = min(fit_per_card, ngl)
            gpu_w, gpu_kv, buf = on_card * layer_w, on_card * layer_kv, part_buf
            host = (L - ngl) * (layer_w + layer_kv) + x.output_bytes
        total = gpu_w + gpu_kv + buf + x.overhead_bytes
        kv_room = max(0, budget - (L * layer_w + x.output_bytes) // cards - full_buf)
        max_ctx = kv_room * cards // max(1, x.kv_bytes_per_token)
        terms = [
            EngineTerm(
                "weights",
                gpu_w,
                "GGUF tensors of the layers on this GPU (+ output layer when all fit)",
                f"{gpu_w:,} B",
                "tools.gguf (ggml-common.h block sizes, llama-quant.cpp mixes)",
                "weights (GGUF)",
            ),
            EngineTerm(
                "kv_cache",
                gpu_kv,
                "n_ctx x layers here x (n_embd_k_gqa + n_embd_v_gqa) x 2 B (f16)",
                f"{n_ctx:,} tokens x {x.kv_bytes_per_token:,} B/token x (layers here / {L})",
                "llama.cpp src/llama-kv-cache.cpp",
                f"KV cache (f16, n_ctx {n_ctx:,})",
            ),
            EngineTerm(
                "compute_buffer",
                buf,
                f"one {self.ubatch}-token ubatch graph ({'full' if ngl > L else 'partial'} offload)",
                f"{buf:,} B",
                "ollama fs/ggml/ggml.go GraphSize (llama.cpp ggml_backend_sched reserve)",
                "compute buffer",
            ),
            EngineTerm(
                "cuda_context",
                x.overhead_bytes,
                "CUDA context, cuBLAS workspaces",
                f"{x.overhead_bytes:,} B",
                "calibration.CUDA_CONTEXT_BYTES",
                "CUDA context",
                "overhead",
            ),
        ]
        fits = ngl > L
        where = {"engine": self.name, "layers": L, "cards": cards, "n_ctx": n_ctx, "max_context": max_ctx}
        notes = [
            note("gguf_all_layers_on_gpu", **where)
            if fits
            else note("gguf_some_layers_on_gpu", **where, gpu_layers=ngl, host=_gib(host))
        ]
        return EngineResult(
            engine=self.name,
            terms=terms,
            total_bytes=total,
            fits=fits,
            headroom_bytes=budget - (gpu_w + gpu_kv + buf) if fits else -(host // cards),
            kv_pool_bytes=gpu_kv,
            max_kv_tokens=n_ctx,
            max_concurrent_sequences=max_ctx // x.seq_len if x.seq_len else 0,
            max_context_tokens=max_ctx,
            gpu_layers=ngl,
            host_bytes=host,
            notes=notes,
            assumptions=[
                (
                    "n_ctx",
                    n_ctx,
                    "the asked context x parallel sequences (llama.cpp common.h n_ctx 4096 when not asked)",
                ),
                ("kv_dtype", "f16", "llama.cpp cache_type_k / cache_type_v default"),
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
