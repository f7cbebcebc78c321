"""The estimator's must-show figures: published numbers and hand-checked cases, exact bytes."""

from __future__ import annotations

import pytest

from tools.estimator import estimate
from tools.footprint import model_footprint
from tools.resolve import resolve
from tools.rules.kv_cache import kv_bytes_per_token, kv_specs
from tools.scenario import Scenario
from tools.units import GB, GiB, MiB

P_7B = 6_738_415_616  # Llama-2-7B (HF safetensors total / PEFT print_trainable_parameters "all params")
# Llama-2-7B by hand: per layer 4*4096^2 (attention) + 3*4096*11008 (SwiGLU) + 2*4096 (RMSNorms)
LINEARS_PER_LAYER = 4 * 4096 * 4096 + 3 * 4096 * 11008  # 202,375,168
LAYER = LINEARS_PER_LAYER + 2 * 4096  # 202,383,360
EMB = 32000 * 4096  # 131,072,000 (embed_tokens; lm_head untied: the same again)


def est(**kw) -> object:
    return estimate(Scenario(**kw), plan=False)


def comp(e, name: str) -> int:
    c = e.component(name)
    return c.bytes if c else 0


def test_llama2_7b_hand_count_matches_published() -> None:
    assert 32 * LAYER + 2 * EMB + 4096 == P_7B


def test_7b_fp16_weights_are_14_gb_decimal_12_55_gib() -> None:
    e = est(model="llama-2-7b", task="inference", weight_dtype="fp16", gpu="a100-80gb")
    assert comp(e, "weights") == P_7B * 2 == 13_476_831_232
    assert round(comp(e, "weights") / GB) == 13  # 13.48 GB: the seed's "7B x 2 B = 14 GB" uses 7e9
    assert round(7 * 10**9 * 2 / GB) == 14
    assert comp(e, "weights") / GiB == pytest.approx(12.55, abs=0.005)


def test_mixed_precision_adam_is_16_bytes_per_param_112_gb_for_7b() -> None:
    e = est(model="llama-2-7b", task="full_finetune", precision_recipe="mixed", optimizer="adamw", gpu="h100")
    states = sum(comp(e, n) for n in ("weights", "gradients", "master_weights", "optimizer_states"))
    assert comp(e, "weights") == 2 * P_7B
    assert comp(e, "gradients") == 2 * P_7B
    assert comp(e, "master_weights") == 4 * P_7B
    assert comp(e, "optimizer_states") == 8 * P_7B
    assert states == 16 * P_7B  # 107.8 GB for the real 6.74B; the seed's 7e9 x 16 B = 112 GB
    assert 112 * GB == 16 * 7 * 10**9
    assert not e.fits  # 100 GiB of model states alone on an 80 GiB card


def test_megatron_18_bytes_and_distributed_optimizer_6_plus_12_over_n() -> None:
    e1 = est(model="llama-2-7b", task="full_finetune", precision_recipe="megatron", gpu="h100")
    model_states = ("weights", "gradients", "master_weights", "optimizer_states")
    assert sum(comp(e1, n) for n in model_states) == 18 * P_7B
    # Megatron distributed optimizer (= ZeRO-1 over N=8): 2 + 4 + 12/N bytes per parameter
    e8 = est(
        model="llama-2-7b",
        task="full_finetune",
        precision_recipe="megatron",
        gpu="h100",
        num_gpus=8,
        zero_stage=1,
    )
    assert sum(comp(e8, n) for n in model_states) == 6 * P_7B + 12 * P_7B // 8


@pytest.mark.parametrize(
    ("stage", "weights", "grads", "master", "states"),
    [
        (0, 2 * P_7B, 2 * P_7B, 4 * P_7B, 8 * P_7B),
        (1, 2 * P_7B, 2 * P_7B, 4 * P_7B // 8, 8 * P_7B // 8),
        (2, 2 * P_7B, 2 * P_7B // 8, 4 * P_7B // 8, 8 * P_7B // 8),
        (3, 2 * P_7B // 8, 2 * P_7B // 8, 4 * P_7B // 8, 8 * P_7B // 8),
    ],
)
def test_zero_stages_shard_states_grads_weights_over_dp(stage, weights, grads, master, states) -> None:
    e = est(model="llama-2-7b", task="full_finetune", gpu="a100-80gb", num_gpus=8, zero_stage=stage)
    assert (comp(e, "weights"), comp(e, "gradients")) == (weights, grads)
    assert (comp(e, "master_weights"), comp(e, "optimizer_states")) == (master, states)
    gathered = comp(e, "zero3_gathered_params")
    assert (gathered > 0) == (stage == 3)
    if stage in (1, 2):  # DeepSpeed builds the fp32 gradient of its partition at the step
        assert (
            e.per_gpu.peak_phase != "optimizer_step" or comp(e, "optimizer_step_temporaries") == 4 * P_7B // 8
        )


def test_zero3_gathered_layer_is_one_layer_plus_prefetch() -> None:
    e = est(model="llama-2-7b", task="full_finetune", gpu="a100-80gb", num_gpus=8, zero_stage=3)
    c = e.component("zero3_gathered_params")
    # the largest gathered unit is a decoder layer (202.4M > embedding 131M); prefetch min(5e7, layer)
    assert c.bytes in ((LAYER + 50_000_000) * 2, (LAYER + 50_000_000) * 2 + LAYER * 2)


def test_tp2_shards_linears_embedding_and_head_but_not_norms() -> None:
    e = est(model="llama-2-7b", task="inference", gpu="a100-80gb", tp=2, weight_dtype="bf16")
    local = 32 * LINEARS_PER_LAYER // 2 + 32 * 2 * 4096 + 4096 + 2 * EMB // 2
    assert local == 3_369_340_928
    assert comp(e, "weights") == 2 * local
    # GQA-free Llama-2-7B: 32 KV heads split 16 per rank -> KV halves too
    assert comp(e, "kv_cache") == 524_288 // 2 * 4096
    assert e.component("nccl_buffers") is not None


def test_pp2_reports_the_first_stage_with_embedding_and_two_microbatches_in_flight() -> None:
    e = est(model="llama-2-7b", task="full_finetune", gpu="a100-80gb", pp=2, num_gpus=2)
    assert e.per_gpu.gpu_role_parts == [
        {"code": "pp_stage", "values": {"index": 0, "of": 2, "where": "first", "layers": 16}}
    ]
    assert comp(e, "weights") == 2 * (16 * LAYER + EMB)
    assert e.component("logits") is None  # the LM head and the loss live on the last stage
    rs = resolve(Scenario(model="llama-2-7b", task="full_finetune", pp=2, num_gpus=2))
    stages = rs.layout.stages(32)
    assert [(s.index, s.n_layers, s.in_flight) for s in stages] == [(0, 16, 2), (1, 16, 1)]
    one_layer = est(model="llama-2-7b", task="full_finetune", gpu="a100-80gb")
    # the single-GPU figure also holds the final norm's saved tensors (last stage only): (8h + 4) per token
    tokens = one_layer.scenario.batch_size * one_layer.scenario.seq_len
    per_layer = (comp(one_layer, "activations") - tokens * (8 * 4096 + 4)) // 32
    assert comp(e, "activations") == 2 * 16 * per_layer  # p micro-batches x L/p layers = L layers' worth


def test_kv_cache_llama2_7b_half_mib_per_token_2_gib_at_4096() -> None:
    rs = resolve(Scenario(model="llama-2-7b", task="inference", kv_dtype="fp16"))
    specs = kv_specs(rs.model.arch, dtype_bytes=2)
    assert kv_bytes_per_token(specs) == 524_288 == MiB // 2
    e = est(
        model="llama-2-7b", task="inference", seq_len=4096, batch_size=1, kv_dtype="fp16", gpu="a100-80gb"
    )
    assert comp(e, "kv_cache") == 2 * GiB


@pytest.mark.parametrize(
    ("model", "per_token"),
    [
        # vLLM FullAttentionSpec: 2 * layers * kv_heads * head_size * dtype = 2*32*8*128*2
        ("llama-3-8b", 131_072),
        # vLLM MLAAttentionSpec: layers * (kv_lora_rank + qk_rope_head_dim) * dtype = 27*(512+64)*2
        ("deepseek-v2-lite", 31_104),
    ],
)
def test_kv_bytes_per_token_match_vllm(model: str, per_token: int) -> None:
    rs = resolve(Scenario(model=model, task="inference"))
    assert kv_bytes_per_token(kv_specs(rs.model.arch, dtype_bytes=2)) == per_token
    e = est(model=model, task="inference", seq_len=1000, batch_size=3, gpu="h100")
    assert comp(e, "kv_cache") == per_token * 1000 * 3
    assert e.serving is not None and e.serving.kv_bytes_per_token == per_token


def test_lora_count_matches_peft_llama2_7b_r8_q_v() -> None:
    e = est(model="llama-2-7b", task="lora", lora_rank=8, lora_targets=["q_proj", "v_proj"], gpu="a100-80gb")
    assert e.params_trainable == 4_194_304  # PEFT print_trainable_parameters
    assert e.params_total == P_7B
    # the frozen base is fully resident; adapters fp32 (PEFT autocast_adapter_dtype) + grads + Adam
    assert comp(e, "weights") == 2 * P_7B + 4 * 4_194_304
    # HF Trainer without accumulation: the adapters' fp32 gradients exist from backward to the step
    # (zero_grad(set_to_none=True)); the peak is the loss backward, before any of them (traced)
    assert comp(e, "gradients") == 0
    rs = resolve(Scenario(model="llama-2-7b", task="lora", lora_rank=8, lora_targets=["q_proj", "v_proj"]))
    step = {c.name: c.bytes for c in model_footprint(rs).components_at("optimizer_step")}
    assert step["gradients"] == 4 * 4_194_304
    assert comp(e, "optimizer_states") == 8 * 4_194_304


def test_qlora_nf4_double_quant_metadata_and_16bit_embeddings_upcast() -> None:
    e = est(model="llama-2-7b", task="qlora", gpu="4090")
    lin = 32 * LINEARS_PER_LAYER  # 6,476,005,376 quantised parameters
    # double quant: 8-bit absmax per 64 + fp32 per 256 blocks: 1/64 + 4/(64*256) B per param
    assert comp(e, "quant_metadata") == lin // 64 + 4 * lin // (64 * 256) == 102_768_640
    # NF4 codes 0.5 B; embeddings, LM head and norms cast to fp32 by prepare_model_for_kbit_training
    base = lin // 2 + 4 * (2 * EMB + 32 * 2 * 4096 + 4096)
    assert comp(e, "weights") == base + 4 * 4_194_304
    assert e.fits


def test_mixtral_all_experts_resident_active_per_token_by_top_k() -> None:
    e = est(model="mixtral-8x7b", task="inference", gpu="h100", tp=2, num_gpus=2)
    assert e.params_total == pytest.approx(46.7e9, rel=0.005)
    assert e.params_active_per_token == pytest.approx(12.9e9, rel=0.005)
    single = est(model="mixtral-8x7b", task="inference", gpu="h200")
    assert comp(single, "weights") == 2 * single.params_total  # every expert is in memory


def test_inference_prefill_vs_decode_peak() -> None:
    # whole context as prompt: prefill holds the KV of the prompt plus the prompt's transient
    e = est(model="llama-2-7b", task="inference", seq_len=4096, batch_size=4, gpu="a100-80gb")
    phases = {p.phase: p.tensor_bytes for p in e.per_gpu.phases}
    assert e.per_gpu.peak_phase == "prefill" and phases["prefill"] > phases["decode"]
    # short prompt, long generation: the decode-time KV cache dominates
    e2 = est(
        model="llama-2-7b", task="inference", seq_len=4096, max_new_tokens=3584, batch_size=4, gpu="a100-80gb"
    )
    phases2 = {p.phase: p.tensor_bytes for p in e2.per_gpu.phases}
    assert e2.per_gpu.peak_phase == "decode" and phases2["decode"] > phases2["prefill"]
    assert comp(e2, "kv_cache") == 4 * 4096 * 524_288


def test_components_sum_to_tensor_peak_and_total() -> None:
    for kw in (
        {"model": "llama-2-7b", "task": "inference"},
        {"model": "qwen2.5-7b", "task": "qlora", "gpu": "4090"},
        {"model": "llama-3-8b", "task": "full_finetune", "num_gpus": 8, "zero_stage": 3, "gpu": "h100"},
        {"model": "mixtral-8x7b", "task": "lora", "tp": 2, "pp": 2, "num_gpus": 8, "gpu": "h100"},
    ):
        e = est(**kw)
        tensors = sum(c.bytes for c in e.components if c.kind == "tensor")
        assert tensors == e.per_gpu.tensor_peak_bytes
        assert sum(c.bytes for c in e.components) == e.per_gpu.total_bytes
        assert max(p.tensor_bytes for p in e.per_gpu.phases) == e.per_gpu.tensor_peak_bytes
        budget = int(e.gpu.memory_bytes * (1 - e.safety_margin))
        assert e.headroom_bytes == budget - e.per_gpu.total_bytes
        assert e.fits == (e.headroom_bytes >= 0)
        for c in e.components:
            assert c.bytes >= 0 and c.formula and c.substituted and c.source


def test_estimate_is_a_valid_contract_object_and_json_roundtrips() -> None:
    from tools.result import Estimate

    e = est(model="llama-2-7b", task="lora", gpu="4090")
    again = Estimate.model_validate_json(e.model_dump_json())
    assert again.per_gpu.total_bytes == e.per_gpu.total_bytes
    assert {a.field for a in e.assumptions} >= {"lora_rank", "lora_targets", "batch_size", "seq_len"}


def test_plan_true_returns_suggestions_that_fit() -> None:
    e = estimate(Scenario(model="llama-2-7b", task="full_finetune", gpu="4090"))
    assert not e.fits
    assert e.suggestions and all(s.fits for s in e.suggestions)


def test_optimizer_offload_moves_states_master_and_grads_off_the_gpu() -> None:
    e = est(model="llama-2-7b", task="full_finetune", zero_stage=2, offload_optimizer="cpu", gpu="h100")
    assert comp(e, "weights") == 2 * P_7B  # DeepSpeed estimate_zero2 with cpu_offload: 2 B/param on the GPU
    for name in ("gradients", "master_weights", "optimizer_states", "optimizer_step_temporaries"):
        assert e.component(name) is None
    assert any(n.code == "optimizer_offloaded" for n in e.notes)


def test_param_offload_zero3_keeps_only_gathered_layers() -> None:
    e = est(
        model="llama-2-7b", task="full_finetune", zero_stage=3, offload_params="cpu", offload_optimizer="cpu"
    )
    assert e.component("weights") is None
    assert comp(e, "zero3_gathered_params") > 0


def test_inference_param_offload_streams_one_layer() -> None:
    e = est(model="llama-2-70b", task="inference", offload_params="cpu", gpu="4090", seq_len=1024)
    assert comp(e, "weights") < 2 * GiB  # one 0.86B-param decoder layer in bf16
    assert any(n.code == "inference_params_offload" for n in e.notes)


def test_expert_parallel_shards_routed_experts_only() -> None:
    one = est(model="mixtral-8x7b", task="inference", gpu="h200")
    ep8 = est(model="mixtral-8x7b", task="inference", gpu="h100", ep=8, num_gpus=8)
    rs = resolve(Scenario(model="mixtral-8x7b"))
    experts = sum(x.count * x.in_features * x.out_features for x in rs.model.params.linears if x.expert)
    assert comp(one, "weights") - comp(ep8, "weights") == 2 * experts * 7 // 8


def test_deepseek_v3_mla_kv_per_token() -> None:
    e = est(model="deepseek-v3", task="inference", weight_dtype="fp8", tp=8, num_gpus=8, gpu="h200")
    # MLA latent is replicated on every TP rank: 61 layers x (512 + 64) x 2 B
    assert e.serving is not None and e.serving.kv_bytes_per_token == 61 * 576 * 2


def test_serving_capacity_is_reserved_minus_weights_profile_run_and_context() -> None:
    from tools import calibration as cal
    from tools.rules.activations import inference_transient

    e = est(model="llama-2-7b", task="inference", gpu="a100-80gb", seq_len=4096, gpu_memory_utilization=0.9)
    rs = resolve(e.scenario)
    transient, _, _ = inference_transient(rs.model.arch, b=1, s=4096, act_bytes=2, flash=True, tp=1)
    reserved = int(e.gpu.memory_bytes * 0.9)
    non_kv = 2 * P_7B + transient + 32_000 * 6 + cal.CUDA_CONTEXT_BYTES
    sv = e.serving
    assert sv.reserved_bytes == reserved and sv.kv_cache_bytes == reserved - non_kv
    assert sv.max_kv_tokens == (reserved - non_kv) // (16 * 524_288) * 16  # vLLM blocks of 16 tokens
    assert sv.max_concurrent_sequences == sv.max_kv_tokens // 4096
