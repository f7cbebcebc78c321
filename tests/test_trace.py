"""`vramwise trace`: the live-storage tracker on fake tensors equals the same tracker on real CPU
tensors byte for byte, and its breakdown matches hand-computed parameter/state/KV sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch

from tools.model.architecture import Architecture
from tools.trace.request import plan_from_scenario
from tools.trace.steps import TraceRequest, trace
from tools.trace.tracker import MemoryTracker, block_bytes

pytestmark = pytest.mark.trace

TINY = Architecture(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=160,
    vocab_size=300,
)
TINY_MOE = TINY.model_copy(
    update={"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "qk_norm": True}
)


def _param_numels(arch: Architecture) -> list[int]:
    """Every parameter tensor of the tiny Llama (modeling_llama module shapes), by hand."""
    h, i, v, L = arch.hidden_size, arch.intermediate_size, arch.vocab_size, arch.num_hidden_layers
    q, kv = arch.num_attention_heads * arch.d_head, arch.kv_heads * arch.d_head
    per_layer = [q * h, kv * h, kv * h, h * q, i * h, i * h, h * i, h, h]  # q k v o gate up down + 2 norms
    return [v * h] + per_layer * L + [h, v * h]  # embed, layers, final norm, lm_head (untied)


def test_block_rounding_matches_cuda_caching_allocator() -> None:
    assert [block_bytes(n) for n in (0, 1, 511, 512, 513, 4096, 5000)] == [0, 512, 512, 512, 1024, 4096, 5120]


@pytest.mark.parametrize(
    "case",
    [
        {"task": "full_finetune", "recipe": "fp32"},
        {"task": "full_finetune", "recipe": "amp"},
        {"task": "full_finetune", "recipe": "bf16"},
        {"task": "full_finetune", "recipe": "amp", "gradient_checkpointing": True},
        {"task": "full_finetune", "recipe": "amp", "attention": "eager"},
        {"task": "lora", "lora_rank": 8},
        {"task": "lora", "lora_rank": 4, "dora": True, "lora_targets": ["all-linear"]},
        {"task": "inference", "max_new_tokens": 3},
    ],
    ids=lambda c: "-".join(str(v) for v in c.values()),
)
def test_fake_peak_equals_real_cpu_peak_byte_for_byte(case: dict) -> None:
    fake = trace(TraceRequest(architecture=TINY, batch_size=2, seq_len=48, fake=True, **case)).report
    real = trace(TraceRequest(architecture=TINY, batch_size=2, seq_len=48, fake=False, **case)).report
    assert fake.peak_bytes == real.peak_bytes
    assert fake.breakdown == real.breakdown
    assert [(p.name, p.peak_bytes) for p in fake.phases] == [(p.name, p.peak_bytes) for p in real.phases]


def test_breakdown_matches_hand_computed_states_in_fp32_training() -> None:
    # checkpointing on and a long step: the peak is in step 2 with every state resident
    res = trace(
        TraceRequest(
            architecture=TINY,
            task="full_finetune",
            recipe="fp32",
            batch_size=1,
            seq_len=16,
            gradient_checkpointing=True,
        )
    ).report
    params = sum(block_bytes(4 * n) for n in _param_numels(TINY))
    # rotary inv_freq and original_inv_freq buffers (head_dim/2 fp32 each) count with the parameters
    assert res.breakdown["parameters"] == params + 2 * block_bytes(4 * TINY.d_head // 2)
    # AdamW: exp_avg + exp_avg_sq per parameter, plus fused AdamW's per-parameter fp32 step tensor
    n_tensors = len(_param_numels(TINY))
    assert res.breakdown["optimizer_states"] == 2 * params + n_tensors * 512
    assert res.peak_phase == "backward"
    assert res.breakdown["gradients"] > 0


def test_amp_keeps_bf16_weight_copies_and_kv_cache_is_exact() -> None:
    amp = trace(
        TraceRequest(architecture=TINY, task="full_finetune", recipe="amp", batch_size=2, seq_len=64)
    ).report
    linear_bf16 = sum(block_bytes(2 * n) for n in _param_numels(TINY) if n > TINY.hidden_size)
    assert 0 < amp.breakdown["autocast_weight_copies"] <= linear_bf16

    b, s, new = 2, 40, 0
    inf = trace(
        TraceRequest(architecture=TINY, task="inference", batch_size=b, seq_len=s, max_new_tokens=new)
    )
    kv_per_tensor = block_bytes(b * TINY.kv_heads * s * TINY.d_head * 2)  # bf16 keys or values of one layer
    assert inf.report.breakdown["kv_cache"] == 2 * TINY.num_hidden_layers * kv_per_tensor
    assert any("scaled_dot_product" in k for k in inf.kernels)


@pytest.mark.parametrize("task", ["full_finetune", "inference"])
def test_moe_fake_peak_equals_real_cpu_peak(task: str) -> None:
    # real routing sends tokens to data-dependent experts; torch._grouped_mm's buffers depend only on
    # tokens x top-k, so the peak is the same byte for byte
    kw = {"architecture": TINY_MOE, "task": task, "recipe": "bf16", "batch_size": 2, "seq_len": 32}
    fake = trace(TraceRequest(fake=True, **kw)).report
    real = trace(TraceRequest(fake=False, **kw)).report
    assert fake.peak_bytes == real.peak_bytes and fake.breakdown == real.breakdown


def test_moe_traces_with_every_expert_resident() -> None:
    res = trace(TraceRequest(architecture=TINY_MOE, task="full_finetune", recipe="bf16", seq_len=32))
    assert res.family == "qwen3_moe"
    # experts are fused 3-D tensors in transformers 5: one gate_up and one down per layer, all resident
    assert res.report.breakdown["parameters"] >= 2 * TINY_MOE.num_hidden_layers * 4 * 3 * 64 * 32


def test_tracker_counts_a_storage_once_and_releases_it() -> None:
    tracker = MemoryTracker()
    with tracker:
        x = torch.empty(1000)  # 4000 B -> 4096 B block
        view = x[10:]
        assert tracker.live_bytes == 4096
        del x
        assert tracker.live_bytes == 4096  # the view keeps the storage alive
        del view
        assert tracker.live_bytes == 0
    assert tracker.peak_bytes == 4096


def test_cli_trace_json_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from service.cli import main

    scenario = {"architecture": TINY.model_dump(), "task": "inference", "batch_size": 1, "seq_len": 32}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    assert main(["trace", "--scenario", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plan = plan_from_scenario(__import__("tools.scenario", fromlist=["Scenario"]).Scenario(**scenario))
    assert plan.task == "inference" and plan.seq_len == 32
    assert out["peak_bytes"] == out["breakdown"]["parameters"] + sum(
        v for k, v in out["breakdown"].items() if k != "parameters"
    )
    assert out["breakdown"]["kv_cache"] > 0

    path.write_text(json.dumps({**scenario, "task": "qlora"}))
    assert main(["trace", "--scenario", str(path)]) == 2
    assert "qlora cannot be traced" in capsys.readouterr().err


def test_sdpa_kernel_follows_the_gpu_choice() -> None:
    # fp32 + GQA: CUDA has no flash kernel for fp32 and no enable_gqa in the memory-efficient one -> math
    fp32 = trace(TraceRequest(architecture=TINY, task="full_finetune", recipe="fp32", seq_len=32, steps=1))
    assert "GPU SDPA kernel modelled: math" in fp32.kernels
    assert not any("flash_attention" in k for k in fp32.kernels)
    bf16 = trace(TraceRequest(architecture=TINY, task="full_finetune", recipe="bf16", seq_len=32, steps=1))
    assert "GPU SDPA kernel modelled: flash" in bf16.kernels
    assert any("_scaled_dot_product_flash_attention_for_cpu" in k for k in bf16.kernels)
    mha = TINY.model_copy(update={"num_key_value_heads": 4})
    eff = trace(TraceRequest(architecture=mha, task="full_finetune", recipe="fp32", seq_len=32, steps=1))
    assert "GPU SDPA kernel modelled: efficient" in eff.kernels
    assert any("_scaled_dot_product_flash_attention_for_cpu" in k for k in eff.kernels)  # same memory


@pytest.mark.parametrize(
    "model",
    [
        "llama-3-70b",
        "qwen2.5-7b",
        "gemma-2-2b",
        "mixtral-8x7b",
        "qwen3-30b-a3b",
        "gpt2",
        "phi-3-mini",
        "deepseek-v2-lite",
    ],
)
def test_built_model_has_the_catalog_parameter_count_exactly(model: str) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tools.catalog.models import find_model
    from tools.trace.build import build_model
    from tools.trace.request import CATALOG_FAMILIES

    spec = find_model(model)
    built = build_model(
        spec.architecture, "bf16", "eager", FakeTensorMode(), CATALOG_FAMILIES.get(spec.family)
    )
    assert sum(p.numel() for p in built.parameters()) == spec.params


@pytest.mark.parametrize("recipe,attention", [("fp32", "sdpa"), ("bf16", "eager")])
def test_agrees_with_pytorch_mem_tracker_on_real_tensors(recipe: str, attention: str) -> None:
    """An independent implementation: torch.distributed._tools.mem_tracker.MemTracker (no block
    rounding on CPU) reports the same peak for one real training step as ours with block=1."""
    from torch.distributed._tools.mem_tracker import MemTracker

    from tools.trace.build import build_model

    model = build_model(TINY, recipe, attention, None)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, TINY.vocab_size, (2, 48))
    reference = MemTracker()
    reference.track_external(model, optimizer)
    ours = MemoryTracker(block=1)
    with reference, ours:
        ours.note("parameters", [*model.parameters(), *model.buffers()])
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        del loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    assert ours.peak_bytes == reference.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
