"""Serving engines with their own memory models, checked against each engine's own arithmetic.

vLLM: the KV pool cut into blocks as vllm/v1/core/kv_cache_utils.py does (page_size_bytes of
FullAttentionSpec = 2 x block_size x kv_heads x head_size x dtype bytes per layer; num_blocks =
available // (page_size x num_layers); concurrency = num_blocks // cdiv(max_model_len, block_size)).
llama.cpp: the KV cache as src/llama-kv-cache.cpp sizes it (n_ctx x n_layer x (n_embd_k_gqa +
n_embd_v_gqa) x f16) and GGUF weights against the published Q4_K_M files.
"""

from __future__ import annotations

import pytest

from service.agent.render import note_text
from tools.catalog import get_model
from tools.estimator import estimate
from tools.result import Estimate
from tools.rules.gguf import BLOCKS
from tools.scenario import Scenario

MiB, GiB = 2**20, 2**30
MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mistral-nemo-12b"]


def _est(**kw: object) -> Estimate:
    base: dict[str, object] = {"task": "inference"}
    base.update(kw)
    return estimate(Scenario.model_validate(base), plan=False)


def _vllm_blocks(model: str, available: int, block_size: int = 16, dtype_bytes: int = 2) -> int:
    arch = get_model(model).architecture
    page_size = (
        2 * block_size * arch.kv_heads * arch.d_head * dtype_bytes
    )  # FullAttentionSpec.page_size_bytes
    return available // (page_size * arch.num_hidden_layers)  # kv_cache_utils.get_num_blocks


@pytest.mark.parametrize("model", MODELS)
def test_vllm_kv_pool_matches_vllm_arithmetic(model: str) -> None:
    est = _est(model=model, gpu="h100-80gb", engine="vllm", seq_len=32768, batch_size=8)
    card = est.gpu.memory_bytes
    terms = {c.name: c.bytes for c in est.components}
    requested = int(card * 0.9)  # gpu_worker.py: total x gpu_memory_utilization
    available = requested - (terms["weights"] + terms["activations"] + terms["cuda_context"])
    assert est.serving is not None
    assert est.serving.reserved_bytes == requested and est.serving.kv_cache_bytes == available
    blocks = _vllm_blocks(model, available)
    assert est.serving.max_kv_tokens == blocks * 16
    assert est.serving.max_concurrent_sequences == blocks // -(-32768 // 16)
    # the job's KV: 8 sequences x cdiv(32768, 16) blocks x one block over every layer
    arch = get_model(model).architecture
    assert terms["kv_cache"] == 8 * 2048 * (2 * 16 * arch.kv_heads * arch.d_head * 2) * arch.num_hidden_layers
    # one meaning for every engine: the components sum to the total, the verdict is total <= usable
    assert est.per_gpu.total_bytes == sum(terms.values())
    assert est.headroom_bytes == est.usable_bytes - est.per_gpu.total_bytes
    assert est.fits == (est.per_gpu.total_bytes <= est.usable_bytes)
    # with gpu_memory_utilization = 1 - safety margin, a job that fits is one the pool holds
    assert not est.fits or est.serving.max_concurrent_sequences >= 8


def test_vllm_does_not_sum_a_full_batch_prefill() -> None:
    # "32k context x 8 users": vLLM's chunked prefill bounds one step by max_num_batched_tokens (8192 on an
    # H100), so the activation term is one 8192-token forward, not 8 x 32768 tokens as HF generate would
    hf = _est(model="llama-3.1-8b", gpu="h100-80gb", seq_len=32768, batch_size=8)
    vllm = _est(model="llama-3.1-8b", gpu="h100-80gb", seq_len=32768, batch_size=8, engine="vllm")
    hf_act = next(c.bytes for c in hf.components if c.name == "activations")
    vllm_act = next(c.bytes for c in vllm.components if c.name == "activations")
    assert vllm_act * 16 < hf_act
    assert vllm.fits and vllm.serving is not None and vllm.serving.max_concurrent_sequences >= 8
    assert any(a.field == "max_num_batched_tokens" and a.value == 8192 for a in vllm.assumptions)
    # on a card under 70 GiB vLLM's OpenAI-server default is 2048 tokens per step
    small = _est(model="llama-3.1-8b", gpu="4090", seq_len=4096, engine="vllm")
    assert any(a.field == "max_num_batched_tokens" and a.value == 2048 for a in small.assumptions)


def test_vllm_refuses_when_one_sequence_does_not_fit() -> None:
    est = _est(model="llama-3.1-70b", gpu="4090", engine="vllm", seq_len=8192)
    assert not est.fits and est.serving is not None and est.serving.max_concurrent_sequences == 0
    assert any(n.code == "vllm_refuses_to_start" for n in est.notes)


@pytest.mark.parametrize(
    ("model", "kv_mib"), [("llama-3.1-8b", 512), ("qwen2.5-7b", 224), ("mistral-nemo-12b", 640)]
)
def test_llama_cpp_kv_matches_its_formula(model: str, kv_mib: int) -> None:
    arch = get_model(model).architecture
    n_ctx = 4096
    # llama-kv-cache.cpp: n_ctx x n_layer x (n_embd_k_gqa + n_embd_v_gqa) x ggml_type_size(f16)
    expected = n_ctx * arch.num_hidden_layers * 2 * arch.kv_heads * arch.d_head * 2
    assert expected == kv_mib * MiB  # what llama.cpp logs as "KV self size" at -c 4096
    est = _est(model=model, gpu="h100-80gb", engine="llama.cpp", weight_dtype="q4_k_m", seq_len=n_ctx)
    assert next(c.bytes for c in est.components if c.name == "kv_cache") == expected


@pytest.mark.parametrize(
    ("model", "published"),
    # Q4_K_M files (bartowski GGUF repos): Meta-Llama-3.1-8B-Instruct 4.92 GB, Qwen2.5-7B-Instruct 4.68 GB,
    # Mistral-Nemo-Instruct-2407 7.48 GB
    [("llama-3.1-8b", 4.92e9), ("qwen2.5-7b", 4.68e9), ("mistral-nemo-12b", 7.48e9)],
)
def test_gguf_weights_match_the_published_files(model: str, published: float) -> None:
    arch = get_model(model).architecture
    est = _est(model=model, gpu="h100-80gb", engine="llama.cpp", weight_dtype="q4_k_m")
    gpu = next(c.bytes for c in est.components if c.name == "weights")
    # the GPU holds all but the token embedding (llama.cpp keeps the input layer on the CPU), Q4_K there
    file_bytes = gpu + arch.vocab_size * arch.hidden_size // 256 * BLOCKS["q4_k"][0]
    assert abs(file_bytes - published) / published < 0.005, file_bytes


def test_llama_cpp_offloads_layers_when_the_model_does_not_fit() -> None:
    one = _est(model="llama-3.1-70b", gpu="4090", engine="ollama", weight_dtype="q4_k_m")
    # "fits" means every layer on the GPU: the total is what that needs, above the card
    assert not one.fits and one.per_gpu.total_bytes > one.usable_bytes
    note = next(note_text(n, "en") for n in one.notes if n.values.get("engine") == "ollama")
    assert "-ngl" in note and "of 80 layers" in note and "CPU RAM" in note
    assert one.serving is not None and one.serving.gpu_layers is not None and 0 < one.serving.gpu_layers < 80
    assert one.serving.host_bytes > 20 * GiB
    # asked for offload: the verdict is for the layers that stay on the GPU
    asked = _est(
        model="llama-3.1-70b", gpu="4090", engine="ollama", weight_dtype="q4_k_m", offload_params="cpu"
    )
    assert asked.fits and asked.per_gpu.total_bytes <= asked.usable_bytes
    assert asked.serving is not None and asked.serving.gpu_layers == one.serving.gpu_layers
    # two 4090s hold it only without the 10% safety margin; three with it
    three = _est(model="llama-3.1-70b", gpu="4090", num_gpus=3, engine="llama.cpp", weight_dtype="q4_k_m")
    assert three.fits and "all of 80 layers on 3 GPUs" in next(
        note_text(n, "en") for n in three.notes if n.values.get("engine") == "llama.cpp"
    )
    w_one_card = next(c.bytes for c in three.components if c.name == "weights")
    full = _est(model="llama-3.1-70b", gpu="h200", engine="llama.cpp", weight_dtype="q4_k_m")
    w_full = next(c.bytes for c in full.components if c.name == "weights")
    assert 0.31 < w_one_card / w_full < 0.36  # 27 of 80 layers (or 26 + the output layer on the last card)


def test_ollama_default_context_is_stated() -> None:
    est = _est(model="qwen2.5-7b", gpu="3060-12gb", engine="ollama", weight_dtype="q4_k_m")
    assert "n_ctx 4,096" in next(note_text(n, "en") for n in est.notes if n.values.get("engine") == "ollama")
    assert any(a.field == "n_ctx" and a.value == 4096 for a in est.assumptions)


def test_sglang_static_fraction() -> None:
    est = _est(model="qwen2.5-7b", gpu="h100-80gb", engine="sglang", seq_len=8192)
    terms = {c.name: c.bytes for c in est.components}
    assert est.serving is not None and est.serving.reserved_bytes == int(est.gpu.memory_bytes * 0.88)
    assert terms["weights"] + est.serving.kv_cache_bytes == est.serving.reserved_bytes
    assert terms["kv_cache"] == 8192 * 2 * 28 * 4 * 128 * 2  # one sequence of 8,192 tokens, Qwen2.5-7B bf16
    assert est.per_gpu.total_bytes == sum(terms.values())
    assert any(a.field == "gpu_memory_utilization" and a.value == 0.88 for a in est.assumptions)


def test_default_engine_is_stated() -> None:
    est = _est(model="qwen2.5-7b", gpu="4090")
    assert any(a.field == "engine" and a.value == "transformers" for a in est.assumptions)


def test_question_names_the_engine() -> None:
    from service.agent.offline.parser import parse_question

    parsed = parse_question("serve Llama-3.1-8B with vLLM on one H100, 32k context, 8 users")
    assert parsed.scenario.get("engine") == "vllm"


def test_planner_verdicts_follow_the_engine() -> None:
    from tools.estimator import fit_of

    for engine in ("vllm", "sglang", "llama.cpp"):
        sc = Scenario(
            model="llama-3.1-70b", task="inference", gpu="4090", engine=engine, weight_dtype="q4_k_m"
        )
        est = estimate(sc, plan=False)
        fit = fit_of(sc)
        assert (fit.fits, fit.total_bytes) == (est.fits, est.per_gpu.total_bytes)
    planned = estimate(Scenario(model="llama-3.1-70b", task="inference", gpu="4090", engine="vllm"))
    assert not planned.fits and planned.min_gpus and planned.min_gpus > 1
