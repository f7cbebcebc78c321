"""RL memory (tools/rl.py): PPO, GRPO and DPO composed from per-model footprints, hand-checked."""

from __future__ import annotations

import pytest

from service.agent.assumption_text import assumption_text
from service.agent.render import note_text, render_answer
from tests.answer_support import answer_text
from tools.catalog.models import find_model
from tools.estimator import estimate
from tools.footprint import ModelFootprint
from tools.resolve import resolve
from tools.rl import (
    GRPO_DEFAULT_NUM_GENERATIONS,
    TRL_LOGPS_BACKWARD_BYTES,
    TRL_LOGPS_NOGRAD_BYTES,
    rl_footprint,
)
from tools.rules.kv_cache import kv_bytes_per_token, kv_specs
from tools.scenario import Scenario
from tools.units import GiB, fmt_gib

MODEL = "qwen2.5-1.5b"
STATES = {"weights", "gradients", "master_weights", "optimizer_states"}
P = find_model(MODEL).params  # tied embeddings: one V x h matrix


def _sc(**kw) -> Scenario:
    base = dict(model=MODEL, gpu="h100", batch_size=2, seq_len=1024)
    base.update(kw)
    return Scenario(**base)


def _parts(fp: ModelFootprint, phase: str) -> dict[tuple[str, str | None], int]:
    return {(c.name, c.model_role): c.bytes for c in fp.components_at(phase)}


def test_ppo_holds_four_models_two_of_them_trained() -> None:
    e = estimate(_sc(task="ppo"), plan=False)
    tensors = [c for c in e.components if c.kind == "tensor"]
    assert all(c.model_role in {"actor", "critic", "reference", "reward"} for c in tensors)
    by = {(c.name, c.model_role): c.bytes for c in tensors}
    # actor and critic: 16 B/param mixed-precision Adam (2 + 2 + 4 + 8), each its own copy
    for role in ("actor", "critic"):
        assert by[("weights", role)] == 2 * P
        assert by[("gradients", role)] == 2 * P
        assert by[("master_weights", role)] == 4 * P
        assert by[("optimizer_states", role)] == 8 * P
    # reference and reward: frozen 16-bit inference weights only
    assert by[("weights", "reference")] == 2 * P
    assert by[("weights", "reward")] == 2 * P
    assert ("gradients", "reference") not in by and ("optimizer_states", "reward") not in by
    # every model's weights are resident: 4 x 2 B/param + two trained states of 14 B/param
    states = sum(
        v for (n, _), v in by.items() if n in {"weights", "gradients", "master_weights", "optimizer_states"}
    )
    assert states == (4 * 2 + 2 * 14) * P
    fields = {a.field: a.value for a in e.assumptions}
    assert fields["critic_model"] == MODEL and fields["reward_model"] == MODEL
    assert fields["max_new_tokens"] == 512 and fields["rollout_batch_size"] == 2
    assert e.scenario.max_new_tokens == 512
    assert [p.phase for p in e.per_gpu.phases] == [
        "rollout",
        "score_reference",
        "score_reward",
        "score_critic",
        "actor_update",
        "critic_update",
    ]
    assert sum(c.bytes for c in tensors) == e.per_gpu.tensor_peak_bytes
    assert sum(c.bytes for c in e.components) == e.per_gpu.total_bytes
    # which GPU holds what: said in the notes
    (colocated,) = [n for n in e.notes if n.code == "rl_colocated"]
    assert colocated.values["models"] == [
        {"role": "actor", "trainable": True},
        {"role": "critic", "trainable": True},
        {"role": "reference", "trainable": False},
        {"role": "reward", "trainable": False},
    ]
    held = "actor (trainable), critic (trainable), reference (frozen), reward (frozen)"
    assert held in note_text(colocated, "en") and "colocated" in note_text(colocated, "en")


def test_ppo_rollout_kv_cache_is_rollout_batch_times_prompt_plus_response() -> None:
    rs = resolve(_sc(task="ppo", rollout_batch_size=4, max_new_tokens=256))
    fp = rl_footprint(rs)
    arch = find_model(MODEL).architecture
    per_token = kv_bytes_per_token(kv_specs(arch, dtype_bytes=2))
    assert per_token == 2 * 28 * 2 * 128 * 2  # 28 layers x 2 KV heads x head_dim 128, bf16: 28 KiB
    rollout = _parts(fp, "rollout")
    assert rollout[("kv_cache", "actor")] == 4 * 1024 * per_token
    # the rollout phase holds the trained models' persistent states and the frozen weights
    assert rollout[("optimizer_states", "critic")] == 8 * P
    assert rollout[("weights", "reward")] == 2 * P


def test_named_critic_and_reward_models_are_used() -> None:
    small = "qwen2.5-0.5b"
    e = estimate(_sc(task="ppo", critic_model=small, reward_model=small), plan=False)
    p_small = find_model(small).params
    by = {(c.name, c.model_role): c.bytes for c in e.components}
    assert by[("weights", "critic")] == 2 * p_small
    assert by[("optimizer_states", "critic")] == 8 * p_small
    assert by[("weights", "reward")] == 2 * p_small
    assert "critic_model" not in {a.field for a in e.assumptions}


def test_grpo_micro_batch_counts_completions_and_logps_cover_completions_only() -> None:
    """TRL GRPOTrainer (trl/trainer/grpo_trainer.py): per_device_train_batch_size counts COMPLETIONS
    (RepeatRandomSampler spreads the G generations of a prompt over the global batch), and
    _get_per_token_logps asks the model for `logits_to_keep` = completion positions only, in 16-bit,
    through selective_log_softmax. Before: batch x G sequences with fp32 SFT logits over all positions."""
    g = 4
    kw = dict(task="grpo", num_generations=g, max_new_tokens=256, gradient_checkpointing=True)
    e = estimate(_sc(**kw), plan=False)
    roles = {c.model_role for c in e.components if c.kind == "tensor"}
    assert roles == {"actor", "reference"}  # rule-based reward, no critic
    assert any(a.field == "reward_model" and a.value is None for a in e.assumptions)
    # the policy trains on its micro-batch of 2 completions, the same activations as an SFT micro-batch of 2
    ft = estimate(_sc(task="full_finetune", batch_size=2, gradient_checkpointing=True), plan=False)
    assert e.component("activations").bytes == ft.component("activations").bytes
    # log-probs at the backward peak: 2 sequences x 256 completion positions x 151,936 x 8 B (traced)
    assert e.component("logits").bytes == 2 * 256 * 151_936 * TRL_LOGPS_BACKWARD_BYTES == 622_329_856
    # the reference scores the same positions under no_grad: 4 B per element
    fp = rl_footprint(resolve(_sc(**kw)))
    ref = _parts(fp, "score_reference")[("logits", "reference")]
    assert ref == 2 * 256 * 151_936 * TRL_LOGPS_NOGRAD_BYTES
    # the rollout: each GPU generates its own micro-batch (2 sequences), unless rollout prompts are stated
    assert _parts(fp, "rollout")[("kv_cache", "actor")] == 2 * 1024 * 28 * 1024
    rs = resolve(_sc(task="grpo", num_generations=g, rollout_batch_size=3))
    kv = _parts(rl_footprint(rs), "rollout")[("kv_cache", "actor")]
    assert kv == 3 * g * 1024 * 28 * 1024  # 3 prompts x 4 generations x 1024 tokens x 28 KiB


def test_grpo_defaults_follow_trl_and_open_r1() -> None:
    """Unstated lengths take TRL GRPOConfig's max_prompt_length=512 + max_completion_length=256 (not the SFT
    cutoff of 2048); gradient checkpointing is on as in the open-r1 recipes
    (huggingface/open-r1 recipes/Qwen2.5-Math-7B/grpo/config_simple_rl.yaml: gradient_checkpointing: true)."""
    e = estimate(Scenario(model=MODEL, task="grpo", gpu="h100"), plan=False)
    got = {a.field: (a.value, assumption_text(a, "en")) for a in e.assumptions}
    assert got["seq_len"][0] == 768 and "max_prompt_length=512" in got["seq_len"][1]
    assert got["max_new_tokens"][0] == 256 and "max_completion_length=256" in got["max_new_tokens"][1]
    assert got["recompute"][0] == "full" and "open-r1" in got["recompute"][1]
    assert e.scenario.seq_len == 768 and e.scenario.recompute == "full"
    assert sum(a.field == "seq_len" for a in e.assumptions) == 1  # the SFT default replaced, not repeated
    # stated settings are kept
    stated = resolve(_sc(task="grpo", gradient_checkpointing=False))
    rl_footprint(stated)
    assert stated.recompute == "none" and stated.scenario.max_new_tokens == 512


def test_grpo_7b_full_finetune_on_8_h800_with_zero3_is_tens_of_gib() -> None:
    """GRPO Qwen2.5-7B, 8 generations on 8 H800 with ZeRO-3 (prompt 512 + completion 1024): tens of GiB per
    GPU, not the hundreds that fp32 logits of 8 x 2048 tokens x 152k vocab would take (TRL keeps per-token
    log-probs). Public recipes run this on 8 x 80 GB (open-r1 README: Qwen2.5-Math-7B GRPO on 8 x H100 80GB)."""
    s = Scenario(
        model="qwen2.5-7b",
        task="grpo",
        gpu="h800",
        num_gpus=8,
        zero_stage=3,
        num_generations=8,
        seq_len=1536,
        max_new_tokens=1024,
    )
    e = estimate(s, plan=False)
    p = 7_615_616_512
    by = {(c.name, c.model_role): c.bytes for c in e.components}
    assert by[("weights", "actor")] == 2 * p // 8  # ZeRO-3 shard
    assert by[("optimizer_states", "actor")] == 8 * p // 8
    assert by[("generation_gathered_weights", "actor")] == 2 * p  # ds3_gather_for_generation=True
    assert e.per_gpu.peak_phase == "rollout"
    # 32.57 GiB (the components are pinned above; the total moves with tools/calibration.py)
    assert e.fits and 25 * 2**30 < e.per_gpu.total_bytes < 40 * 2**30
    # as asked (no ZeRO stated: 8 DDP replicas of the 16 B/param states): does not fit, ZeRO-3 offered
    asked = estimate(Scenario(model="qwen2.5-7b", task="grpo", gpu="h800", num_gpus=8, num_generations=8))
    assert not asked.fits and asked.per_gpu.total_bytes < 140 * 2**30  # 132.96 GiB
    # the cheapest way out keeps the 8 GPUs: ZeRO-2 (47.38 GiB); ZeRO-3 is then a costlier superset
    first = asked.suggestions[0]
    assert first.scenario_changes == {"zero_stage": 2} and first.num_gpus == 8
    assert 40 * 2**30 < first.total_bytes < 55 * 2**30  # 47.38 GiB
    assert not any(sg.scenario_changes.get("zero_stage") == 3 for sg in asked.suggestions)


def test_grpo_open_r1_7b_recipe_fits_on_80gb() -> None:
    """open-r1 (huggingface/open-r1 README and recipes/Qwen2.5-Math-7B/grpo/config_simple_rl.yaml): Qwen2.5-7B
    GRPO, accelerate zero2.yaml with --num_processes=7 (the 8th H100 80GB runs vLLM),
    per_device_train_batch_size 16, num_generations 7, max_prompt_length 650, max_completion_length 1024,
    gradient_checkpointing, bf16. It runs, so the estimate must fit the card; it is tight (66-71 of 71.68
    GiB usable), matching reports of memory pressure with this recipe (trl#2927, trl#2972: 7B GRPO OOMs
    on 96 GB H20s at larger settings)."""
    s = Scenario(
        model="qwen2.5-7b",
        task="grpo",
        gpu="h100",
        num_gpus=7,
        zero_stage=2,
        num_generations=7,
        batch_size=16,
        seq_len=1674,
        max_new_tokens=1024,
        gradient_checkpointing=True,
    )
    e = estimate(s, plan=False)
    assert e.fits
    # 16 completions x 1024 positions x 152,064 x 8 B of log-probs at the backward peak (traced)
    assert e.component("logits").bytes == 16 * 1024 * 152_064 * 8 == 19_931_332_608
    assert e.per_gpu.total_bytes > 50 * 2**30  # 71.02 GiB: tight


def test_grpo_1_5b_on_one_4090() -> None:
    """GRPO Qwen2.5-1.5B on one 4090: full fine-tuning does not fit one 24 GB card (16 B/param of
    mixed-precision Adam states = 23 GiB) but fits on two, and LoRA with small batches fits one card
    easily, which the planner says."""
    full = estimate(Scenario(model="qwen2.5-1.5b", task="grpo", gpu="4090"))
    assert not full.fits
    p = 1_543_714_304
    states = sum(c.bytes for c in full.components if c.model_role == "actor" and c.name in STATES)
    assert states == 16 * p  # 2 + 2 + 4 + 8 B/param: 23.0 GiB alone, more than the card's 21.6 usable
    assert full.per_gpu.total_bytes < 32 * 2**30  # 28.14 GiB
    assert full.min_gpus == 2
    assert any(sg.scenario_changes.get("lora_rank") and sg.num_gpus == 1 for sg in full.suggestions)
    lora = estimate(Scenario(model="qwen2.5-1.5b", task="grpo", gpu="4090", lora_rank=16, batch_size=4))
    assert lora.fits and lora.per_gpu.total_bytes < 8 * 2**30  # 5.12 GiB
    assert lora.component("logits").bytes == 4 * 256 * 151_936 * 8


def test_grpo_vllm_colocate_reserves_its_share_of_the_card() -> None:
    """TRL use_vllm=True, vllm_mode="colocate": every training process hosts a vLLM engine that keeps
    vllm_gpu_memory_utilization x card memory (weights copy + KV blocks); HF generate's KV cache and the
    gathered weights are then not on the training side."""
    e = estimate(_sc(task="grpo", gpu_memory_utilization=0.3), plan=False)
    res = e.component("vllm_reservation")
    assert res is not None and res.bytes == int(e.gpu.memory_bytes * 0.3)
    fp = rl_footprint(resolve(_sc(task="grpo", gpu_memory_utilization=0.3)))
    assert ("kv_cache", "actor") not in _parts(fp, "rollout")
    assert all(_parts(fp, ph)[("vllm_reservation", "actor")] == res.bytes for ph in fp.phases)


def test_grpo_default_generations_and_reward_model_when_named() -> None:
    e = estimate(_sc(task="grpo", reward_model="qwen2.5-0.5b"), plan=False)
    assert {a.field: a.value for a in e.assumptions}["num_generations"] == GRPO_DEFAULT_NUM_GENERATIONS == 8
    assert "score_reward" in [p.phase for p in e.per_gpu.phases]
    assert e.component("weights") is not None
    assert any(c.model_role == "reward" for c in e.components)


def test_dpo_doubles_the_batch_and_keeps_a_frozen_reference() -> None:
    e = estimate(_sc(task="dpo"), plan=False)
    ft = estimate(_sc(task="full_finetune", batch_size=4), plan=False)  # chosen + rejected = 2 x 2
    assert e.component("activations").bytes == ft.component("activations").bytes
    by = {(c.name, c.model_role): c.bytes for c in e.components}
    assert by[("weights", "reference")] == 2 * P
    assert by[("weights", "policy")] == 2 * P
    assert e.scenario.max_new_tokens is None  # DPO generates nothing


@pytest.mark.parametrize("task", ["dpo", "grpo"])
def test_lora_reference_is_the_same_base_with_adapters_disabled(task: str) -> None:
    full = estimate(_sc(task=task), plan=False)
    lora = estimate(_sc(task=task, lora_rank=16), plan=False)
    assert not any(c.model_role == "reference" and c.name == "weights" for c in lora.components)
    rs = resolve(_sc(task=task, lora_rank=16))
    fp = rl_footprint(rs)
    ref = [c for c in fp.components_at("score_reference") if c.model_role == "reference"]
    assert ref and all(c.name != "weights" for c in ref)  # only its forward transient / log-probs
    assert lora.per_gpu.total_bytes < full.per_gpu.total_bytes


def test_reference_offload_moves_frozen_weights_off_the_gpu_outside_their_forward() -> None:
    on = estimate(_sc(task="ppo"), plan=False)
    off = estimate(_sc(task="ppo", reference_offload=True), plan=False)
    assert off.per_gpu.total_bytes < on.per_gpu.total_bytes
    assert not any(c.model_role in {"reference", "reward"} for c in off.components)  # peak is an update phase
    fp = rl_footprint(resolve(_sc(task="ppo", reference_offload=True)))
    assert _parts(fp, "score_reference")[("weights", "reference")] == 2 * P
    assert ("weights", "reference") not in _parts(fp, "actor_update")


def test_zero3_rollout_gathers_the_full_actor_weights() -> None:
    rs = resolve(_sc(task="grpo", num_gpus=8, zero_stage=3))
    rollout = _parts(rl_footprint(rs), "rollout")
    assert rollout[("generation_gathered_weights", "actor")] == 2 * P  # whole model for generate()
    assert rollout[("weights", "actor")] == 2 * P // 8  # the ZeRO-3 shard
    assert rollout[("weights", "reference")] == 2 * P // 8  # frozen models sharded too


def test_generations_are_spread_not_multiplied() -> None:
    """With the micro-batch fixed, G only changes how many GPUs share a prompt's group: per-GPU memory is
    the same (TRL). With rollout prompts stated, more generations mean more rollout sequences."""
    spread = {
        estimate(_sc(task="grpo", num_generations=g), plan=False).per_gpu.total_bytes for g in (1, 2, 8)
    }
    assert len(spread) == 1
    totals = [
        rl_footprint(resolve(_sc(task="grpo", num_generations=g, rollout_batch_size=4))).bytes_at("rollout")
        for g in (1, 2, 4, 8)
    ]
    assert totals == sorted(totals) and len(set(totals)) == 4


def test_dpo_and_ppo_log_probs_as_trl_computes_them() -> None:
    """DPO (trl dpo_trainer concatenated_forward + selective_log_softmax): 16-bit log-probs of every
    position of the 2 x batch chosen+rejected sequences. PPO (trl ppo_trainer): the actor's log-probs of the
    response positions only; the critic is a value head (AutoModelForSequenceClassification): no vocab logits."""
    v = 151_936
    dpo = estimate(_sc(task="dpo"), plan=False)
    assert (
        dpo.component("logits").bytes == 2 * 2 * 1024 * v * TRL_LOGPS_BACKWARD_BYTES
    )  # 8 B, not 14 B of fp32 logits
    ppo = rl_footprint(resolve(_sc(task="ppo")))
    assert _parts(ppo, "actor_update")[("logits", "actor")] == 2 * 512 * v * TRL_LOGPS_BACKWARD_BYTES
    assert ("logits", "critic") not in _parts(ppo, "critic_update")
    assert _parts(ppo, "score_reference")[("logits", "reference")] == 2 * 512 * v * TRL_LOGPS_NOGRAD_BYTES


def test_rl_peak_phase_is_said_in_words() -> None:
    e = estimate(Scenario(model="qwen2.5-0.5b", task="grpo", gpu="h800", num_generations=8), plan=False)
    phase_words = {
        "actor_update": ("during the actor's training step", "策略模型训练更新时"),
        "rollout": ("during the rollout", "采样（rollout"),
        "score_reference": ("while the reference model scores", "参考模型给采样结果打分时"),
    }[e.per_gpu.peak_phase]
    assert phase_words[0] in render_answer(e, "en") and phase_words[1] in render_answer(e, "zh")
    assert f"peak {e.per_gpu.peak_phase}" not in render_answer(e, "en")


def test_grpo_7b_on_8_h800_is_not_264_gib() -> None:
    """'GRPO Qwen2.5-7B 8 generations on 8 H800' said 264.35 GiB per GPU: fp32 logits of 8 x 2048 tokens x
    152k vocab (32.48 GiB) and 8 sequences of activations. TRL trains on per_device_train_batch_size
    completions (the 8 generations are spread over the 8 GPUs) and scores only the completion positions
    (logits_to_keep). As asked (8 plain DDP replicas, no ZeRO) the 16 B/param states alone are 113 GB,
    so it still does not fit; ZeRO-2 over the 8 GPUs does."""
    text = answer_text("GRPO Qwen2.5-7B 8 generations on 8 H800")
    e = estimate(Scenario(model="qwen2.5-7b", task="grpo", gpu="h800", num_gpus=8, num_generations=8))
    logits = e.component("logits")
    # 1 completion x 256 positions (TRL max_completion_length) x 152,064 x 8 B = 0.29 GiB, not fp32 logits of every sequence
    assert logits is not None and logits.bytes == 256 * 152_064 * 8 == 311_427_072  # traced 8 B per element
    assert e.per_gpu.total_bytes < 140 * GiB and not e.fits
    assert "264.35 GiB" not in text and f"**{fmt_gib(e.per_gpu.total_bytes)}** per GPU" in text
    assert "ZeRO-2 over 8 data-parallel GPUs" in text
