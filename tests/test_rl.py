"""RL memory (tools/rl.py): PPO, GRPO and DPO composed from per-model footprints, hand-checked."""

from __future__ import annotations

import pytest

from tools.catalog.models import find_model
from tools.estimator import estimate
from tools.footprint import ModelFootprint
from tools.kv_cache import kv_bytes_per_token, kv_specs
from tools.resolve import resolve
from tools.rl import GRPO_DEFAULT_NUM_GENERATIONS, rl_footprint
from tools.scenario import Scenario

MODEL = "qwen2.5-1.5b"
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
    held = "actor (trainable), critic (trainable), reference (frozen), reward (frozen)"
    assert any(held in n and "colocated" in n for n in e.notes)


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


def test_grpo_has_no_critic_and_g_times_the_sequences() -> None:
    g = 4
    e = estimate(_sc(task="grpo", num_generations=g), plan=False)
    roles = {c.model_role for c in e.components if c.kind == "tensor"}
    assert roles == {"actor", "reference"}  # rule-based reward, no critic
    assert any(a.field == "reward_model" and a.value is None for a in e.assumptions)
    # the policy trains on batch x G sequences: same activations and logits as a plain full fine-tune of 2 x 4
    ft = estimate(_sc(task="full_finetune", batch_size=2 * g), plan=False)
    assert e.component("activations").bytes == ft.component("activations").bytes
    assert e.component("logits").bytes == ft.component("logits").bytes
    rs = resolve(_sc(task="grpo", num_generations=g, rollout_batch_size=3))
    kv = _parts(rl_footprint(rs), "rollout")[("kv_cache", "actor")]
    assert kv == 3 * g * 1024 * 28 * 1024  # 12 sequences x 1024 tokens x 28 KiB


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


def test_more_generations_never_need_less_memory() -> None:
    totals = [
        estimate(_sc(task="grpo", num_generations=g), plan=False).per_gpu.total_bytes for g in (1, 2, 4, 8)
    ]
    assert totals == sorted(totals)
    assert len(set(totals)) == 4
