"""Serving-engine figures against each engine's own arithmetic (prints a markdown table).

    python -m benchmarks.serving_engines

vLLM: the estimator's KV pool (gpu_memory_utilization x card - weights - profile peak - non-torch memory)
re-cut into blocks with vLLM's own formulas (vllm/v1/kv_cache_interface.py FullAttentionSpec.page_size_bytes
= 2 x block_size x num_kv_heads x head_size x dtype_size per layer; vllm/v1/core/kv_cache_utils.py
get_num_blocks = available // (page_size x num_layers); get_max_concurrency_for_kv_cache_config =
num_blocks / cdiv(max_model_len, block_size)). llama.cpp: the KV cache at n_ctx 4096 against
src/llama-kv-cache.cpp's n_ctx x n_layer x (n_embd_k_gqa + n_embd_v_gqa) x f16, and the Q4_K_M weights
(+ the token embedding llama.cpp keeps on the CPU) against the published GGUF file sizes.
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
        page = 2 * 16 * arch.kv_heads * arch.d_head * 2
        blocks = available // (page * arch.num_hidden_layers)
        per_req = -(-32768 // 16)
        ours_blocks = est.serving.max_kv_tokens // 16
        rows.append(
            f"| {model} | {t['kv_cache'] / GiB:.2f} GiB | {ours_blocks:,} | {blocks:,} | "
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


def main() -> None:
    print("vLLM on one H100 80GB, gpu_memory_utilization 0.9, max_model_len 32768, bf16 KV:")
    print("\n".join(vllm_rows()))
    print()
    print("llama.cpp (llama-server), KV f16:")
    print("\n".join(llama_cpp_rows()))


if __name__ == "__main__":
    main()
