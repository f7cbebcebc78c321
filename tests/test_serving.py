"""vLLM-style serving capacity (tools/serving.py), hand-checked against vLLM's own arithmetic.

vllm/v1/worker/gpu_worker.py: KV budget = total x gpu_memory_utilization - non-KV memory;
vllm/v1/core/kv_cache_utils.py: blocks of 16 tokens, concurrency = blocks / cdiv(len, 16).
"""

from __future__ import annotations

import pytest

from service.agent.assumption_text import assumption_text
from service.agent.render import render_answer
from tests.answer_support import answer_text
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.serving import VLLM_DEFAULT_BLOCK_SIZE, serving_capacity
from tools.units import GiB, KiB, fmt_gib

# Llama-3-8B: 32 layers x 8 KV heads x head_dim 128 x (K and V) x 2 B = 131,072 B = 128 KiB per token
LLAMA3_8B_KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def test_block_size_is_vllm_default() -> None:
    assert VLLM_DEFAULT_BLOCK_SIZE == 16


def test_llama3_8b_on_80gib_card_hand_checked() -> None:
    cap = serving_capacity(
        gpu_memory_bytes=80 * GiB,
        gpu_memory_utilization=0.9,
        non_kv_bytes=18 * GiB,  # weights 16 GiB + profile-run activation and runtime 2 GiB
        kv_bytes_per_token=LLAMA3_8B_KV_PER_TOKEN,
        seq_len=8192,
    )
    assert 128 * KiB == LLAMA3_8B_KV_PER_TOKEN
    assert cap.reserved_bytes == 72 * GiB  # 80 GiB x 0.9
    assert cap.kv_cache_bytes == 54 * GiB  # 72 - 18
    assert cap.max_kv_tokens == 442_368  # 54 GiB / 128 KiB = 27,648 blocks x 16
    assert cap.max_kv_tokens % 16 == 0
    assert cap.max_concurrent_sequences == 54  # 27,648 blocks / (8192 / 16 = 512 blocks)
    assert cap.max_context_at_batch_1 == 442_368
    assert cap.kv_bytes_per_token == LLAMA3_8B_KV_PER_TOKEN
    assert cap.gpu_memory_utilization == 0.9


def test_partial_blocks_round_like_vllm() -> None:
    # 1000-token requests need cdiv(1000, 16) = 63 blocks each; the budget holds 1000 blocks exactly
    cap = serving_capacity(
        gpu_memory_bytes=1000 * 16 * 1024 + 100,
        gpu_memory_utilization=1.0,
        non_kv_bytes=100,
        kv_bytes_per_token=1024,
        seq_len=1000,
    )
    assert cap.max_kv_tokens == 16_000
    assert cap.max_concurrent_sequences == 15  # floor(1000 / 63)
    # a budget one byte short of a whole block loses that block
    cap2 = serving_capacity(
        gpu_memory_bytes=1000 * 16 * 1024 + 99,
        gpu_memory_utilization=1.0,
        non_kv_bytes=100,
        kv_bytes_per_token=1024,
        seq_len=1000,
    )
    assert cap2.max_kv_tokens == 999 * 16


def test_no_room_for_kv_gives_zero_not_negative() -> None:
    cap = serving_capacity(
        gpu_memory_bytes=24 * GiB,
        gpu_memory_utilization=0.9,
        non_kv_bytes=30 * GiB,
        kv_bytes_per_token=LLAMA3_8B_KV_PER_TOKEN,
        seq_len=4096,
    )
    assert cap.kv_cache_bytes == 0
    assert cap.max_kv_tokens == 0
    assert cap.max_concurrent_sequences == 0
    assert cap.max_context_at_batch_1 == 0


def test_lower_utilization_and_fp8_kv() -> None:
    base = dict(gpu_memory_bytes=80 * GiB, non_kv_bytes=18 * GiB, seq_len=8192)
    lo = serving_capacity(gpu_memory_utilization=0.5, kv_bytes_per_token=LLAMA3_8B_KV_PER_TOKEN, **base)
    assert lo.kv_cache_bytes == 22 * GiB  # 40 - 18
    assert lo.max_kv_tokens == 22 * GiB // (128 * KiB)  # 180,224
    fp8 = serving_capacity(gpu_memory_utilization=0.9, kv_bytes_per_token=LLAMA3_8B_KV_PER_TOKEN // 2, **base)
    assert fp8.max_kv_tokens == 2 * 442_368  # fp8 KV halves bytes per token, doubles tokens
    assert fp8.max_concurrent_sequences == 108


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(gpu_memory_utilization=0.0),
        dict(gpu_memory_utilization=1.5),
        dict(kv_bytes_per_token=0),
        dict(seq_len=0),
    ],
)
def test_bad_inputs_raise(kwargs: dict) -> None:
    args = dict(
        gpu_memory_bytes=80 * GiB,
        gpu_memory_utilization=0.9,
        non_kv_bytes=0,
        kv_bytes_per_token=1024,
        seq_len=16,
    )
    args.update(kwargs)
    with pytest.raises(ValueError):
        serving_capacity(**args)


def test_estimate_reports_vllm_capacity_for_inference() -> None:
    e = estimate(Scenario(model="llama-2-7b", task="inference", gpu="a100-80gb", seq_len=4096), plan=False)
    sv = e.serving
    assert sv is not None
    assert sv.gpu_memory_utilization == 0.9  # vLLM default, stated as an assumption
    assert any(a.field == "gpu_memory_utilization" for a in e.assumptions)
    assert sv.reserved_bytes == int(e.gpu.memory_bytes * 0.9)
    assert sv.kv_bytes_per_token == 524_288  # Llama-2-7B: 0.5 MiB per token
    weights = e.component("weights").bytes
    assert 0 < sv.kv_cache_bytes < sv.reserved_bytes - weights  # weights, transient and overhead come first
    assert sv.max_kv_tokens == sv.kv_cache_bytes // (16 * 524_288) * 16
    assert sv.max_concurrent_sequences == sv.max_kv_tokens // 4096
    # the KV room holds far more than one sequence, but Llama-2-7B's window is 4,096 tokens
    assert sv.max_model_len == 4096 and sv.max_context_at_batch_1 == 4096 < sv.max_kv_tokens
    # fp8 KV halves bytes per token: the same budget holds (about) twice the tokens
    e8 = estimate(
        Scenario(model="llama-2-7b", task="inference", gpu="a100-80gb", seq_len=4096, kv_dtype="fp8"),
        plan=False,
    )
    assert e8.serving is not None and e8.serving.kv_bytes_per_token == 262_144
    assert e8.serving.max_kv_tokens >= 2 * sv.max_kv_tokens - 16


def test_training_has_no_serving_figure() -> None:
    assert estimate(Scenario(model="llama-2-7b", task="lora"), plan=False).serving is None


def test_serving_70b_on_two_h100_is_tensor_parallel_not_two_copies() -> None:
    """'serve Llama-3-70B on 2x H100' was 2 data-parallel copies: 138.16 GiB per GPU, does not fit.
    Serving users mean vLLM --tensor-parallel-size 2: half the weights per GPU."""
    e = estimate(Scenario(model="llama-3-70b", task="inference", gpu="h100", num_gpus=2))
    assert e.scenario.tp == 2
    tp = next(a for a in e.assumptions if a.field == "tp")
    assert tp.value == 2 and "--tensor-parallel-size 2" in assumption_text(tp, "en")
    # 70,553,706,496 params; 161 RMSNorm vectors of 8192 (1,318,912 params) replicated, the rest split:
    # (70,553,706,496 - 1,318,912) / 2 + 1,318,912 = 35,277,512,704 params x 2 B
    assert e.component("weights").bytes == 35_277_512_704 * 2 == 70_555_025_408
    assert e.fits and e.min_gpus == 2 and e.min_gpus_changes == {}
    sv = e.serving
    assert sv is not None
    assert sv.kv_bytes_per_token == 2 * 80 * (8 // 2) * 128 * 2 == 163_840  # 8 KV heads split 2 ways
    # 0.9 x 79.65 GiB = 71.68 GiB reserved; minus 65.71 GiB of weights = 5.97 GiB before the CUDA
    # context, NCCL and vLLM's profile-run transient: 4.56 GiB of KV blocks, 29,872 tokens
    assert sv.reserved_bytes - e.component("weights").bytes == 6_413_703_577
    assert sv.kv_cache_bytes == 4_894_980_761 and sv.max_kv_tokens == 29_872
    assert sv.max_concurrent_sequences == 7  # of 4,096 tokens
    assert sv.max_model_len == 8192


def test_serving_tp_default_takes_the_largest_divisor_of_the_heads() -> None:
    # Qwen2.5-72B: 64 heads, 8 KV heads. 6 GPUs: TP=6 does not divide 64 -> TP=2, 3 replicas
    e6 = estimate(Scenario(model="qwen2.5-72b", task="inference", gpu="a800", num_gpus=6), plan=False)
    assert e6.scenario.tp == 2
    assert "TP=2 is the largest" in next(assumption_text(a, "en") for a in e6.assumptions if a.field == "tp")
    # 3 GPUs: no TP > 1 divides 64 -> three full copies, said so
    e3 = estimate(Scenario(model="qwen2.5-72b", task="inference", gpu="a800", num_gpus=3))
    assert e3.scenario.tp == 1
    tp3 = next(a for a in e3.assumptions if a.field == "tp")
    assert tp3.code == "tp.serving_replicas" and "data-parallel replicas" in assumption_text(tp3, "en")
    assert e3.min_gpus == 4 and e3.min_gpus_changes == {"num_gpus": 4, "tp": 4, "pp": 1}
    # a stated TP is kept; training is not touched
    stated = estimate(
        Scenario(model="llama-3-8b", task="inference", gpu="4090", num_gpus=2, tp=1), plan=False
    )
    assert stated.scenario.tp == 1 and not any(a.field == "tp" for a in stated.assumptions)
    train = estimate(Scenario(model="llama-3-8b", task="full_finetune", gpu="a100", num_gpus=2), plan=False)
    assert train.scenario.tp is None


def test_answers_say_how_the_fewest_gpus_fit_in_both_languages() -> None:
    """'Fewest A100 80GB that fit with this strategy: **2**' did not say which strategy."""
    e = estimate(Scenario(model="llama-2-7b", task="full_finetune", gpu="a100"))
    assert e.min_gpus == 2 and e.min_gpus_changes == {"num_gpus": 2, "zero_stage": 3}
    en, zh = render_answer(e, "en"), render_answer(e, "zh")
    assert (
        "Fewest A100 80GB that fit: **2**, with ZeRO-3 over 2 data-parallel GPUs "
        "(weights, gradients and optimizer states split 2 ways)." in en
    )
    assert (
        "最少需要 **2** 张 A100 80GB：在 2 张数据并行卡上用 ZeRO-3（权重、梯度和优化器状态都切成 2 份）。"
        in zh
    )
    text = answer_text("部署Qwen2.5-72B需要几张A800")
    assert "最少需要 **4** 张 A800 80GB：张量并行 TP=4（每层的矩阵切成 4 份）。" in text


def test_deepseek_v3_is_served_in_its_fp8_checkpoint() -> None:
    """'DeepSeek-V3 671B 推理要多少显存' was answered in bf16 (1255.38 GiB on one card, 32 A100s).
    The official checkpoint is FP8: 8 x H200 serve it (the common deployment)."""
    e = estimate(Scenario(model="deepseek-r1", task="inference", gpu="h200", num_gpus=8), plan=False)
    assert e.scenario.weight_dtype == "fp8" and e.scenario.tp == 8
    # 84,441,235,456 linear weights at 1 B + 339,121,664 other params (embeddings, head, norms) at 2 B
    assert e.component("weights").bytes == 85_119_478_784
    # prefill counts MLA's decompressed per-head q/k/v (transformers
    # modeling_deepseek_v3 expands the latent for the prompt in every layer)
    assert e.fits and fmt_gib(e.per_gpu.total_bytes) == "84.71 GiB"
    assert e.serving is not None and e.serving.max_model_len == 163_840
    lora = estimate(Scenario(model="deepseek-v3", task="lora", gpu="h200", num_gpus=8), plan=False)
    assert lora.scenario.weight_dtype == "bf16"  # training keeps the 16-bit default
