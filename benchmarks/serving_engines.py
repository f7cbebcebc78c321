"""Serving-engine figures against each engine's own arithmetic (prints markdown tables).

    python -m benchmarks.serving_engines

vLLM: the estimator's KV pool (gpu_memory_utilization x card - weights - profile peak - non-torch memory)
re-cut into blocks with vLLM's own formulas (vllm/v1/kv_cache_interface.py FullAttentionSpec.page_size_bytes
= 2 x block_size x num_kv_heads x head_size x dtype_size per layer; vllm/v1/core/kv_cache_utils.py
get_num_blocks = available // (page_size x num_layers); get_max_concurrency_for_kv_cache_config =
num_blocks / cdiv(max_model_len, block_size)). llama.cpp: the KV cache at n_ctx 4096 against
src/llama-kv-cache.cpp's n_ctx x n_layer x (n_embd_k_gqa + n_embd_v_gqa) x f16, and the Q4_K_M weights
(+ the token embedding llama.cpp keeps on the CPU) against the published GGUF file sizes.
Sliding-window models (Gemma-2, Gemma-3, Mistral-7B-v0.1): the KV cache of the asked sequences recomputed
here from each engine's code, independently of tools/rules/kv_cells.py: vLLM's hybrid allocator
(vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size; kv_cache_interface.py
SlidingWindowSpec: cdiv(min(W - 1 + max_num_batched_tokens, n), 16) + 1 blocks per sliding group), SGLang
(no SWA pool for these architectures: every token in every layer, model_config.is_hybrid_swa_model),
llama.cpp (llama-kv-cache-iswa.cpp: SWA layers GGML_PAD(min(n_ctx, n_swa x n_seq + n_ubatch), 256) cells,
for the interleaved patterns llama-model.cpp sets; Mistral-7B-v0.1's window on every layer is not applied)
and transformers decoding (cache_utils.py DynamicSlidingWindowLayer: min(n, W) per sequence).
"""

from __future__ import annotations

from tools.catalog import get_model
from tools.estimator import estimate
from tools.result import Estimate
from tools.rules.gguf import BLOCKS
from tools.scenario import Scenario

MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mistral-nemo-12b"]
# bartowski GGUF repos, Q4_K_M file sizes (GB): Meta-Llama-3.1-8B-Instruct, Qwen2.5-7B-Instruct, Mistral-Nemo-Instruct-2407
PUBLISHED_Q4_K_M = {"llama-3.1-8b": 4.92e9, "qwen2.5-7b": 4.68e9, "mistral-nemo-12b": 7.48e9}
MiB, GiB = 2**20, 2**30


def _terms(est: Estimate) -> dict[str, int]:
    return {c.name: c.bytes for c in est.components}


def vllm_rows() -> list[str]:
    rows = [
        "| model | KV pool (ours) | blocks (ours) | blocks (vLLM formula) | sequences of 32,768 (ours / vLLM) | max concurrency (vLLM log) |",
        "|---|---|---|---|---|---|",
    ]
    for model in MODELS:
        est = estimate(
            Scenario(
                model=model, task="inference", gpu="h100-80gb", engine="vllm", seq_len=32768, batch_size=8
            ),
            plan=False,
        )
        t = _terms(est)
        arch = get_model(model).architecture
        available = int(est.gpu.memory_bytes * 0.9) - (t["weights"] + t["activations"] + t["cuda_context"])
        assert est.serving is not None and est.serving.kv_cache_bytes == available
        page = 2 * 16 * arch.kv_heads * arch.d_head * 2
        blocks = available // (page * arch.num_hidden_layers)
        per_req = -(-32768 // 16)
        ours_blocks = est.serving.max_kv_tokens // 16
        rows.append(
            f"| {model} | {est.serving.kv_cache_bytes / GiB:.2f} GiB | {ours_blocks:,} | {blocks:,} | "
            f"{est.serving.max_concurrent_sequences} / {blocks // per_req} | {blocks / per_req:.2f}x |"
        )
    return rows


def llama_cpp_rows() -> list[str]:
    rows = [
        "| model | KV at n_ctx 4096 (ours) | llama.cpp formula | Q4_K_M file (ours) | published file | error |",
        "|---|---|---|---|---|---|",
    ]
    for model in MODELS:
        arch = get_model(model).architecture
        est = estimate(
            Scenario(
                model=model, task="inference", gpu="h100-80gb", engine="llama.cpp", weight_dtype="q4_k_m"
            ),
            plan=False,
        )
        t = _terms(est)
        formula = 4096 * arch.num_hidden_layers * 2 * arch.kv_heads * arch.d_head * 2
        file_bytes = t["weights"] + arch.vocab_size * arch.hidden_size // 256 * BLOCKS["q4_k"][0]
        pub = PUBLISHED_Q4_K_M[model]
        rows.append(
            f"| {model} | {t['kv_cache'] / MiB:,.0f} MiB | {formula / MiB:,.0f} MiB | {file_bytes / 1e9:.3f} GB | "
            f"{pub / 1e9:.2f} GB | {(file_bytes - pub) / pub:+.2%} |"
        )
    return rows


SWA_CASES = [  # (model, seq_len, sequences) on one H100 80GB, bf16 KV
    ("gemma-3-27b", 131072, 1),
    ("gemma-3-12b", 32768, 4),
    ("gemma-2-9b", 8192, 8),
    ("mistral-7b-v0.1", 32768, 2),
]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def swa_expected(model: str, seq: int, seqs: int) -> dict[str, int]:
    """Each engine's KV bytes for `seqs` sequences of `seq` tokens, from the engines' own formulas."""
    arch = get_model(model).architecture
    layers, window = arch.num_hidden_layers, arch.sliding_window or 0
    local = arch.sliding_window_layers if arch.sliding_window_layers is not None else layers
    glob = layers - local
    cell = 2 * arch.kv_heads * arch.d_head * 2  # K and V of one token in one layer, bf16 / f16
    # vLLM: group size = min(layers per kind), or the max when under 1.25 x the min; one kind: one group
    kinds = [n for n in (local, glob) if n]
    size = kinds[0] if len(kinds) == 1 else (max(kinds) if max(kinds) < 1.25 * min(kinds) else min(kinds))
    sw_blocks = _cdiv(min(window - 1 + 8192, seq), 16) + 1  # SlidingWindowSpec, max_num_batched_tokens 8192
    blocks = _cdiv(local, size) * sw_blocks + _cdiv(glob, size) * _cdiv(seq, 16) if glob else sw_blocks
    vllm = seqs * blocks * size * 16 * cell
    sglang = seqs * seq * layers * cell  # MHATokenToKVPool: every token, every layer
    n_ctx = seq * seqs
    swa_cells = _cdiv(min(n_ctx, window * seqs + 512), 256) * 256  # llama-kv-cache-iswa.cpp
    if not glob:  # a window on every layer (Mistral-7B-v0.1): llama.cpp sets no SWA pattern, n_ctx cells
        swa_cells = n_ctx
    llama_cpp = (local * swa_cells + glob * n_ctx) * cell
    transformers = seqs * (local * min(seq, window) + glob * seq) * cell  # decoding
    return {"vllm": vllm, "sglang": sglang, "llama.cpp": llama_cpp, "transformers": transformers}


def swa_rows() -> list[str]:
    rows = [
        "| model | n x seqs | engine | KV (ours) | KV (engine formula) | every layer full | match |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, seq, seqs in SWA_CASES:
        expected = swa_expected(model, seq, seqs)
        arch = get_model(model).architecture
        full = seqs * seq * arch.num_hidden_layers * 2 * arch.kv_heads * arch.d_head * 2
        for engine, want in expected.items():
            est = estimate(
                Scenario(
                    model=model,
                    task="inference",
                    gpu="h100-80gb",
                    engine=None if engine == "transformers" else engine,
                    seq_len=seq,
                    batch_size=seqs,
                ),
                plan=False,
            )
            ours = (
                next(c.bytes for c in est.components if c.name == "kv_cache")
                if engine != "transformers"
                else 0
            )
            if engine == "transformers":  # the decode phase's KV (prefill still holds the whole prompt)
                ours = _decode_kv(est)
            rows.append(
                f"| {model} | {seq:,} x {seqs} | {engine} | {ours / GiB:.3f} GiB | {want / GiB:.3f} GiB | "
                f"{full / GiB:.3f} GiB | {'yes' if ours == want else 'NO'} |"
            )
    return rows


def _decode_kv(est: Estimate) -> int:
    from tools.resolve import resolve
    from tools.rules.kv_cache import kv_bytes, kv_specs

    rs = resolve(est.scenario)
    return kv_bytes(kv_specs(rs.model.arch, dtype_bytes=rs.kv_dtype_bytes), rs.seq, rs.batch)


def main() -> None:
    print("vLLM on one H100 80GB, gpu_memory_utilization 0.9, max_model_len 32768, bf16 KV:")
    print("\n".join(vllm_rows()))
    print()
    print("llama.cpp (llama-server), KV f16:")
    print("\n".join(llama_cpp_rows()))
    print()
    print(
        "Sliding-window models on one H100 80GB, bf16 KV (f16 for llama.cpp), the asked sequences' KV cache:"
    )
    print("\n".join(swa_rows()))


if __name__ == "__main__":
    main()
