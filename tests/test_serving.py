"""vLLM-style serving capacity (tools/serving.py), hand-checked against vLLM's own arithmetic.

vllm/v1/worker/gpu_worker.py: KV budget = total x gpu_memory_utilization - non-KV memory;
vllm/v1/core/kv_cache_utils.py: blocks of 16 tokens, concurrency = blocks / cdiv(len, 16).
"""

from __future__ import annotations

import pytest

from tools.estimator import estimate
from tools.scenario import Scenario
from tools.serving import VLLM_DEFAULT_BLOCK_SIZE, serving_capacity
from tools.units import GiB, KiB

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
    assert sv.max_context_at_batch_1 == sv.max_kv_tokens
    # fp8 KV halves bytes per token: the same budget holds (about) twice the tokens
    e8 = estimate(
        Scenario(model="llama-2-7b", task="inference", gpu="a100-80gb", seq_len=4096, kv_dtype="fp8"),
        plan=False,
    )
    assert e8.serving is not None and e8.serving.kv_bytes_per_token == 262_144
    assert e8.serving.max_kv_tokens >= 2 * sv.max_kv_tokens - 16


def test_training_has_no_serving_figure() -> None:
    assert estimate(Scenario(model="llama-2-7b", task="lora"), plan=False).serving is None
