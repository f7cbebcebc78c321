"""The tracer's savers, master-weight step and RL steps: the fake-tensor peak equals the real-tensor
peak byte for byte, the re-written losses compute what the code they follow computes, and the GPU's
dropout kernel is the one traced."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch
import torch.nn.functional as F

from tools.model.architecture import Architecture
from tools.trace.savers import MasterWeightStep, chunked_ce_loss, fused_linear_ce_loss
from tools.trace.steps import TraceRequest, trace
from tools.trace.tracker import MemoryTracker

pytestmark = pytest.mark.trace

TINY = Architecture(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=160,
    vocab_size=300,
)


@pytest.mark.parametrize(
    "case",
    [
        {"task": "lora", "lora_rank": 8, "lora_dropout": 0.1},
        {"task": "lora", "lora_rank": 4, "lora_targets": ["q_proj", "v_proj", "lm_head", "embed_tokens"]},
        {"task": "full_finetune", "recipe": "bf16", "loss": "chunked"},
        {"task": "full_finetune", "recipe": "bf16", "loss": "fused_linear"},
        {"task": "lora", "lora_rank": 8, "loss": "fused_linear"},
        {"task": "full_finetune", "recipe": "bf16", "optimizer_in_backward": True},
        {
            "task": "full_finetune",
            "recipe": "bf16",
            "gradient_checkpointing": True,
            "activation_offload": True,
        },
        {"task": "full_finetune", "recipe": "mixed", "weight_dtype": "bf16"},
        {"task": "full_finetune", "recipe": "mixed", "weight_dtype": "bf16", "master_style": "bf16"},
        {"task": "dpo", "recipe": "amp", "lora_rank": 8},
        {"task": "dpo", "recipe": "bf16"},
        {"task": "grpo", "recipe": "amp", "lora_rank": 8, "max_new_tokens": 16},
    ],
    ids=lambda c: "-".join(str(v) for v in c.values()),
)
def test_fake_peak_equals_real_cpu_peak_byte_for_byte(case: dict) -> None:
    fake = trace(TraceRequest(architecture=TINY, batch_size=2, seq_len=48, fake=True, **case)).report
    real = trace(TraceRequest(architecture=TINY, batch_size=2, seq_len=48, fake=False, **case)).report
    assert fake.peak_bytes == real.peak_bytes
    assert fake.breakdown == real.breakdown


def test_cpu_dropout_saves_an_input_dtype_noise_the_gpu_kernel_a_bool_mask() -> None:
    x = torch.randn(4, 256, requires_grad=True)  # fp32, like PEFT's upcast LoRA input
    cpu = F.dropout(x, 0.1, True)
    saved = [
        t for t in (getattr(cpu.grad_fn, n, None) for n in dir(cpu.grad_fn)) if isinstance(t, torch.Tensor)
    ]
    assert any(t.dtype == torch.float32 and t.shape == x.shape for t in saved)  # ATen _dropout fallback
    out, mask = torch.native_dropout(x, 0.1, True)  # what CUDA runs (is_fused_kernel_acceptable)
    assert mask.dtype == torch.bool and mask.element_size() == 1
    assert type(out.grad_fn).__name__ == "NativeDropoutBackward0"


def test_lora_dropout_adds_the_mask_bytes_per_targeted_input() -> None:
    base = dict(architecture=TINY, task="lora", lora_rank=8, batch_size=2, seq_len=48, steps=1)
    plain = trace(TraceRequest(**base)).report
    dropped = trace(TraceRequest(**base, lora_dropout=0.05)).report
    assert dropped.peak_bytes > plain.peak_bytes


def _tiny_model(dtype: torch.dtype = torch.float32):
    from tools.trace.build import build_model

    return build_model(TINY, {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype], "sdpa", None)


def test_chunked_and_fused_losses_equal_the_hf_loss() -> None:
    torch.manual_seed(0)
    model = _tiny_model()
    ids = torch.randint(0, TINY.vocab_size, (2, 40))
    hf = model(input_ids=ids, labels=ids).loss
    assert torch.allclose(chunked_ce_loss(model, ids), hf, atol=1e-5)
    fused = fused_linear_ce_loss(model, ids)
    assert torch.allclose(fused, hf, atol=1e-5)
    # the fused loss's gradients (computed in its forward) equal autograd's through the full logits
    grads_hf = torch.autograd.grad(hf, [model.lm_head.weight])
    grads_fused = torch.autograd.grad(fused_linear_ce_loss(model, ids), [model.lm_head.weight])
    assert torch.allclose(grads_hf[0], grads_fused[0], atol=1e-5)


def test_fp16_optimizer_step_holds_eight_bytes_per_parameter_more() -> None:
    params = [torch.nn.Parameter(torch.zeros(1024, dtype=torch.bfloat16)) for _ in range(4)]
    n = sum(p.numel() for p in params)
    for p in params:
        p.grad = torch.zeros_like(p)
    tracker = MemoryTracker(block=1)
    with tracker:
        step = MasterWeightStep(params, "fp16")
        for p in params:
            p.grad = torch.zeros_like(p)
        before = tracker.live_bytes
        step.step()
    # the fp32 copies of every gradient and their flat concatenation are alive at once beside the 16-bit
    # gradients (4 + 4 B per parameter); at the first step the new Adam states (8 B) replace the copies
    assert tracker.peak_bytes - before >= 8 * n
    assert sum(t.numel() * t.element_size() for t in step.states() if t.dim()) == 8 * n


@pytest.mark.parametrize(
    "extra",
    [
        {"task": "lora", "lora_rank": 4, "lora_dropout": 0.05, "cross_entropy": "chunked"},
        {"task": "full_finetune", "precision_recipe": "mixed", "weight_dtype": "bf16"},
        {
            "task": "full_finetune",
            "precision_recipe": "bf16",
            "weight_dtype": "bf16",
            "optimizer_in_backward": True,
        },
        {"task": "dpo", "weight_dtype": "bf16", "lora_rank": 4},
        {"task": "grpo", "weight_dtype": "bf16", "precision_recipe": "bf16", "max_new_tokens": 8},
    ],
    ids=lambda e: "-".join(str(v) for v in e.values()),
)
def test_gpu_measure_runs_the_new_programs_for_real(extra: dict) -> None:
    """benchmarks/gpu_measure.py runs the tracer's own programs on real tensors (here on the CPU)."""
    from benchmarks.gpu_measure import run_program
    from tools.scenario import Scenario
    from tools.trace.request import plan_from_scenario

    s = Scenario(
        architecture=TINY, batch_size=2, seq_len=32, optimizer="adamw", gradient_checkpointing=True, **extra
    )
    run_program(plan_from_scenario(s), "cpu")
