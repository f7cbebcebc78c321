"""llama.cpp (llama-server) and ollama: GGUF weights, KV at n_ctx in f16, one compute buffer, layers placed.

KV: llama.cpp src/llama-kv-cache.cpp allocates n_ctx cells x (n_embd_k_gqa + n_embd_v_gqa) per non-SWA
layer in type_k/type_v (f16 default); src/llama-kv-cache-iswa.cpp gives SWA layers
GGML_PAD(min(n_ctx, n_swa x n_seq_max + n_ubatch), 256) cells (n_ctx with --swa-full). The compute buffer
is what ggml_backend_sched reserves for one ubatch graph. Every layer on the GPUs is the job as asked
(several cards split the layers: --split-mode layer, the default): its total is the most loaded card's.
When that does not fit, layers can be left on the CPU (-ngl N: N repeating layers on the GPU, the output
layer only when N > n_layer): the verdict stays "does not fit" unless the user asked for offload, and a note
says how many layers would stay on the GPU and what the CPU would hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.engines.base import (
    EngineInputs,
    EngineResult,
    EngineTerm,
    context_notes,
    cuda_context_term,
    gib,
    longest,
)
from tools.notes import note
from tools.rules.kv_cache import kv_bytes, kv_texts
from tools.rules.kv_cells import GgmlCells, cdiv

# llama.cpp common/common.h common_params: n_ctx 4096, n_batch 2048, n_ubatch 512, KV cache type f16
LLAMA_CPP_N_UBATCH = 512
# ollama envconfig/config.go: OLLAMA_CONTEXT_LENGTH 4096 (2048 before v0.6; recent builds choose
# 4k/32k/256k by VRAM), num_batch 512, OLLAMA_KV_CACHE_TYPE f16, OLLAMA_NUM_PARALLEL 1
OLLAMA_NUM_BATCH = 512


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
    kv_total: int  # K and V of every layer at n_ctx (SWA layers at their own cell count)
    output_bytes: int  # the output layer (on the GPU only when every repeating layer is)
    full_buffer: int  # compute buffer, whole model offloaded
    partial_buffer: int  # compute buffer, some layers on the CPU
    cards: int  # --split-mode layer: the layers are split over the cards
    budget: int  # one card's usable memory less its CUDA context

    @property
    def layer_kv(self) -> int:
        """One layer's KV, the layers' average (SWA and full layers interleave: llama.cpp set_swa_pattern)."""
        return self.kv_total // self.layers

    @property
    def layer_bytes(self) -> int:
        return self.layer_weights + self.layer_kv


@dataclass(frozen=True)
class Placement:
    """Where llama.cpp puts the model: -ngl, what the most loaded card holds, what stays in CPU RAM."""

    gpu_layers: int  # -ngl: n_layer + 1 when the output layer is on the GPU too
    layers_here: int  # repeating layers on the most loaded card
    weights: int
    kv: int
    buffer: int
    host: int  # weights + KV left in CPU RAM

    @property
    def on_card(self) -> int:
        return self.weights + self.kv + self.buffer


def whole_model(g: GgufLayers) -> Placement:
    """Every layer on the GPUs, split evenly, the output layer and its buffer on the last card: what the
    most loaded card holds."""
    per_card = cdiv(g.layers, g.cards)
    last_layers = g.layers - per_card * (g.cards - 1)
    last_load = last_layers * g.layer_bytes + g.output_bytes + g.full_buffer
    first_load = per_card * g.layer_bytes + g.full_buffer
    first_heavier = g.cards > 1 and first_load >= last_load
    here = per_card if first_heavier else last_layers
    return Placement(
        gpu_layers=g.layers + 1,
        layers_here=here,
        weights=here * g.layer_weights + (0 if first_heavier else g.output_bytes),
        kv=g.kv_total * here // g.layers,
        buffer=g.full_buffer,
        host=0,
    )


def partial_offload(g: GgufLayers) -> Placement:
    """As many repeating layers per card as fit beside the partial-offload buffer (-ngl); the rest and the
    output layer stay in CPU RAM."""
    fit_per_card = max(0, (g.budget - g.partial_buffer) // max(1, g.layer_bytes))
    ngl = min(g.layers, fit_per_card * g.cards)
    here = min(fit_per_card, ngl)
    return Placement(
        gpu_layers=ngl,
        layers_here=here,
        weights=here * g.layer_weights,
        kv=g.kv_total * here // g.layers,
        buffer=g.partial_buffer,
        host=(g.layers - ngl) * g.layer_bytes + g.output_bytes,
    )


class LlamaCppEngine:
    """llama.cpp (see the module docstring)."""

    name = "llama.cpp"
    ubatch = LLAMA_CPP_N_UBATCH

    def cells(self, x: EngineInputs) -> GgmlCells:
        return GgmlCells(n_ubatch=self.ubatch, iswa=x.interleaved_swa)

    def layers(self, x: EngineInputs) -> GgufLayers:
        n_ctx = x.seq_len * max(1, x.sequences)
        return GgufLayers(
            n_ctx=n_ctx,
            layers=max(1, x.num_layers),
            layer_weights=max(0, x.weights_bytes - x.output_bytes) // max(1, x.num_layers),
            # src/llama-kv-cache.cpp / llama-kv-cache-iswa.cpp: cells x (n_embd_k_gqa + n_embd_v_gqa) per layer
            kv_total=kv_bytes(list(x.kv_specs), x.seq_len, max(1, x.sequences), self.cells(x)),
            output_bytes=x.output_bytes,
            full_buffer=llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=True),
            partial_buffer=llama_cpp_compute_buffer(x, n_ctx, self.ubatch, full=False),
            cards=max(1, x.num_gpus),
            budget=x.usable_bytes - x.overhead_bytes,
        )

    def max_context(self, x: EngineInputs, g: GgufLayers) -> int:
        """The longest n_ctx (one sequence) whose KV fits beside the whole model and its buffer."""
        room = g.budget - (g.layers * g.layer_weights + g.output_bytes) // g.cards

        def fits(n: int) -> bool:
            kv = kv_bytes(list(x.kv_specs), n, 1, self.cells(x)) // g.cards
            return kv + llama_cpp_compute_buffer(x, n, self.ubatch, full=True) <= room

        return longest(fits, max(0, room))

    def terms(self, x: EngineInputs, g: GgufLayers, p: Placement) -> list[EngineTerm]:
        offload = "full" if p.gpu_layers > g.layers else "partial"
        kv_formula, kv_substituted = kv_texts(list(x.kv_specs), x.seq_len, max(1, x.sequences), self.cells(x))
        return [
            EngineTerm(
                "weights",
                p.weights,
                "W_gguf_local",
                f"{p.weights:,} B",
                "tools.rules.gguf (ggml-common.h block sizes, llama-quant.cpp mixes)",
                "weights.gguf_layers",
            ),
            EngineTerm(
                "kv_cache",
                p.kv,
                f"({kv_formula}) x L_local / L",
                f"({kv_substituted}) x {p.layers_here}/{g.layers} = {p.kv:,} B",
                "llama.cpp src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp",
                "kv_cache.gguf",
                label_values=(("n_ctx", g.n_ctx),),
            ),
            EngineTerm(
                "compute_buffer",
                p.buffer,
                ("A_ubatch_full" if offload == "full" else "A_ubatch_partial") + f"({self.ubatch})",
                f"{p.buffer:,} B",
                "ollama fs/ggml/ggml.go GraphSize (llama.cpp ggml_backend_sched reserve)",
                "compute_buffer",
            ),
            cuda_context_term(x, "M_context", "calibration.CUDA_CONTEXT_BYTES"),
        ]

    def run(self, x: EngineInputs) -> EngineResult:
        g = self.layers(x)
        whole = whole_model(g)
        whole_fits = whole.on_card <= g.budget
        partial = partial_offload(g)
        shown = partial if x.offload_asked and not whole_fits else whole
        room = self.max_context(x, g)
        where = {
            "engine": self.name,
            "layers": g.layers,
            "cards": g.cards,
            "n_ctx": g.n_ctx,
            "max_context": x.window_cap(room),
        }
        if whole_fits:
            verdict = note("gguf_all_layers_on_gpu", **where)
        else:
            code = "gguf_some_layers_on_gpu" if x.offload_asked else "gguf_offload_would_fit"
            verdict = note(code, **where, gpu_layers=partial.gpu_layers, host=gib(partial.host))
        terms = self.terms(x, g, shown)
        return EngineResult(
            engine=self.name,
            terms=terms,
            reserved_bytes=sum(t.bytes for t in terms),
            kv_pool_bytes=shown.kv,
            max_kv_tokens=g.n_ctx,
            max_concurrent_sequences=room // x.seq_len if x.seq_len else 0,
            max_context_tokens=x.window_cap(room),
            kv_context_tokens=room,
            gpu_layers=whole.gpu_layers if whole_fits else partial.gpu_layers,
            host_bytes=0 if whole_fits else partial.host,
            notes=[verdict, *context_notes(x, room)],
            assumptions=[
                ("n_ctx", g.n_ctx, "n_ctx.gguf", {}),  # llama.cpp common.h n_ctx 4096 when not asked
                ("kv_dtype", "f16", "kv_dtype.gguf", {}),  # llama.cpp cache_type_k / cache_type_v default
            ],
        )


class OllamaEngine(LlamaCppEngine):
    """ollama: llama.cpp underneath, num_ctx 4096 and num_batch 512 by default (envconfig/config.go)."""

    name = "ollama"
    ubatch = OLLAMA_NUM_BATCH
