"""Coach topics and the scenario each one generates for a difficulty.

A generator picks a fully stated scenario (model from the catalog, task, GPUs, precision, LoRA rank,
MoE, RL algorithm, ZeRO stage, context length) and the quantity asked (the contract's names:
`per_gpu.total_bytes`, `component:<name>[+<name>...]` summed over every model on the GPU, `fits`,
`min_gpus`, `concept`, and `serving.<field>` of the Estimate). It never holds an answer: the
expected figure is `tools.estimator.estimate` of the scenario (service/coach/expected.py).
Everything the estimator would otherwise default is stated, so the question text can say it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL_STATES = "component:weights+gradients+master_weights+optimizer_states"
DIFFICULTIES = (1, 2, 3)

TOPICS: tuple[str, ...] = (
    "seed",
    "weights_precision",
    "rule_16x",
    "gradients",
    "activations",
    "kv_cache",
    "lora",
    "qlora",
    "moe",
    "ppo",
    "grpo_dpo",
    "zero",
    "parallelism",
    "serving",
    "no_effect",
    "concepts",
)


@dataclass(frozen=True)
class QuestionSpec:
    """What a question asks: the stated scenario, the quantity and how the answer is written."""

    topic: str
    difficulty: int
    ask: str  # key of [ask] in prompts/<lang>/coach/questions.toml (or the concept id)
    scenario: dict[str, Any]
    quantity: str
    answer_in: str  # bytes, small_bytes, fits, count, sequences, concept
    facts: dict[str, Any] = field(default_factory=dict)  # extra stated facts (no_effect: the baseline)


def _training(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    base = {
        "model": model,
        "task": "full_finetune",
        "gpu": gpu,
        "num_gpus": 1,
        "batch_size": 1,
        "seq_len": 2048,
        "precision_recipe": "mixed",
        "optimizer": "adamw",
        "gradient_checkpointing": False,
        "attention": "flash",
    }
    base.update(extra)
    return base


def _inference(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    base = {
        "model": model,
        "task": "inference",
        "gpu": gpu,
        "num_gpus": 1,
        "batch_size": 1,
        "seq_len": 4096,
        "weight_dtype": "bf16",
    }
    base.update(extra)
    return base


def _lora(model: str, gpu: str, task: str = "lora", **extra: Any) -> dict[str, Any]:
    base = _training(model, gpu, task=task, gradient_checkpointing=True, lora_rank=16)
    base.pop("precision_recipe")
    base["lora_targets"] = ["all-linear"]
    base.update(extra)
    return base


Generator = Callable[[int, random.Random], QuestionSpec]


def _seed(d: int, rng: random.Random) -> QuestionSpec:
    """The seed material's own figures: 7B fp16 weights, the 16x rule, 0.5 MB of KV per token for a
    32-layer 4096-hidden MHA model (Llama-2-7B), PPO's four models."""
    which = rng.choice(("weights", "rule_16x", "kv_per_token", "ppo"))
    return seed_question(which, d)


def seed_question(which: str, d: int = 1) -> QuestionSpec:
    if which == "weights":
        sc = _inference("llama-2-7b", "a100-80gb", weight_dtype="fp16")
        return QuestionSpec("seed", d, "weights", sc, "component:weights", "bytes")
    if which == "rule_16x":
        sc = _training("llama-2-7b", "h200", seq_len=512)
        return QuestionSpec("seed", d, "model_states", sc, MODEL_STATES, "bytes")
    if which == "kv_per_token":
        sc = _inference("llama-2-7b", "a100-80gb", weight_dtype="fp16", seq_len=4096)
        return QuestionSpec("seed", d, "kv_per_token", sc, "serving.kv_bytes_per_token", "small_bytes")
    if which == "ppo":
        sc = _rl("ppo", "llama-2-7b")
        return QuestionSpec("seed", d, "ppo_weights", sc, "component:weights", "bytes")
    raise ValueError(f"unknown seed question {which!r}")


def _weights_precision(d: int, rng: random.Random) -> QuestionSpec:
    if d == 1:
        model, dtype = (
            rng.choice(("llama-2-7b", "mistral-7b-v0.1", "llama-2-13b")),
            rng.choice(("fp16", "bf16")),
        )
    elif d == 2:
        model, dtype = rng.choice(("llama-3-8b", "qwen2.5-14b", "llama-2-13b")), rng.choice(("int8", "fp32"))
    else:
        sc = _inference(
            rng.choice(("llama-3-8b", "qwen2.5-7b", "qwen2.5-14b")), "rtx-4090", weight_dtype="int4"
        )
        return QuestionSpec("weights_precision", d, "weights_int4", sc, "component:weights", "bytes")
    sc = _inference(model, "a100-80gb", weight_dtype=dtype)
    return QuestionSpec("weights_precision", d, "weights", sc, "component:weights", "bytes")


def _rule_16x(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(
        ("llama-2-7b", "qwen2.5-7b", "mistral-7b-v0.1") if d == 1 else ("llama-3-8b", "llama-2-13b")
    )
    recipe = "megatron" if d == 3 else "mixed"
    sc = _training(model, "h200", seq_len=512, precision_recipe=recipe)
    return QuestionSpec("rule_16x", d, "model_states", sc, MODEL_STATES, "bytes")


def _gradients(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "qwen2.5-3b", "llama-3.2-3b"))
    if d == 1:
        sc = _training(model, "h200", seq_len=512)
    elif d == 2:
        sc = _training(model, "h200", seq_len=512, precision_recipe=rng.choice(("fp32", "megatron")))
    else:
        sc = _training(model, "a100-80gb", seq_len=1024, num_gpus=rng.choice((4, 8)), zero_stage=2)
    return QuestionSpec("gradients", d, "gradients", sc, "component:gradients", "bytes")


def _activations(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "qwen2.5-7b", "llama-3-8b"))
    if d == 1:
        sc = _lora(
            model, "a100-80gb", batch_size=rng.choice((1, 2, 4)), seq_len=2048, gradient_checkpointing=True
        )
    elif d == 2:
        sc = _lora(
            model, "a100-80gb", batch_size=rng.choice((1, 2)), seq_len=2048, gradient_checkpointing=False
        )
    else:
        sc = _lora(
            model, "a100-80gb", batch_size=rng.choice((4, 8)), seq_len=4096, gradient_checkpointing=False
        )
    return QuestionSpec("activations", d, "activations", sc, "component:activations", "bytes")


def _kv_cache(d: int, rng: random.Random) -> QuestionSpec:
    if d == 1:
        sc = _inference(
            rng.choice(("llama-2-7b", "llama-2-13b")), "a100-80gb", seq_len=rng.choice((2048, 4096))
        )
    elif d == 2:
        sc = _inference(
            rng.choice(("llama-3-8b", "qwen2.5-7b", "mistral-7b-v0.1")),
            "a100-80gb",
            seq_len=rng.choice((8192, 16384)),
            batch_size=rng.choice((1, 4)),
        )
    else:
        sc = _inference(
            rng.choice(("llama-3-70b", "qwen2.5-72b")),
            "h100-80gb",
            num_gpus=4,
            tp=4,
            seq_len=rng.choice((8192, 32768)),
            batch_size=rng.choice((8, 16)),
        )
    return QuestionSpec("kv_cache", d, "kv_cache", sc, "component:kv_cache", "bytes")


def _lora_topic(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "llama-3-8b", "qwen2.5-7b"))
    if d == 1:
        sc = _lora(model, "a100-80gb")
        return QuestionSpec("lora", d, "weights", sc, "component:weights", "bytes")
    if d == 2:
        sc = _lora(model, rng.choice(("rtx-4090", "a100-40gb", "rtx-3090")), batch_size=rng.choice((1, 4)))
        return QuestionSpec("lora", d, "fits", sc, "fits", "fits")
    sc = _lora(model, "a100-80gb", batch_size=rng.choice((2, 4)), lora_rank=rng.choice((8, 64)))
    return QuestionSpec("lora", d, "total", sc, "per_gpu.total_bytes", "bytes")


def _qlora(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "llama-3-8b", "qwen2.5-14b"))
    if d == 1:
        sc = _lora(model, "rtx-4090", task="qlora")
        return QuestionSpec("qlora", d, "weights", sc, "component:weights", "bytes")
    if d == 2:
        big = rng.choice(("qwen2.5-32b", "llama-2-70b", "qwen2.5-14b"))
        sc = _lora(big, rng.choice(("rtx-4090", "a100-40gb")), task="qlora", batch_size=rng.choice((1, 2)))
        return QuestionSpec("qlora", d, "fits", sc, "fits", "fits")
    sc = _lora(model, "rtx-4090", task="qlora", batch_size=rng.choice((2, 4)))
    return QuestionSpec("qlora", d, "total", sc, "per_gpu.total_bytes", "bytes")


def _moe(d: int, rng: random.Random) -> QuestionSpec:
    if d == 1:
        sc = _inference(rng.choice(("qwen3-30b-a3b", "mixtral-8x7b", "qwen1.5-moe-a2.7b")), "h100-80gb")
        return QuestionSpec("moe", d, "weights", sc, "component:weights", "bytes")
    if d == 2:
        sc = _inference(
            rng.choice(("qwen3-30b-a3b", "mixtral-8x7b")), rng.choice(("rtx-4090", "h100-80gb", "a100-40gb"))
        )
        return QuestionSpec("moe", d, "fits", sc, "fits", "fits")
    sc = _inference(rng.choice(("qwen3-235b-a22b", "mixtral-8x22b")), "h100-80gb")
    return QuestionSpec("moe", d, "min_gpus", sc, "min_gpus", "count")


def _rl(task: str, model: str, **extra: Any) -> dict[str, Any]:
    sc = _training(model, "a100-80gb", task=task)
    sc.update(extra)
    return sc


def _ppo(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "qwen2.5-7b", "llama-3.2-3b", "qwen2.5-1.5b"))
    if d == 1:
        return QuestionSpec("ppo", d, "ppo_weights", _rl("ppo", model), "component:weights", "bytes")
    if d == 2:
        return QuestionSpec("ppo", d, "ppo_states", _rl("ppo", model), MODEL_STATES, "bytes")
    return QuestionSpec("ppo", d, "min_gpus", _rl("ppo", model), "min_gpus", "count")


def _grpo_dpo(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "qwen2.5-7b", "llama-3.2-3b"))
    if d == 1:
        return QuestionSpec("grpo_dpo", d, "rl_weights", _rl("dpo", model), "component:weights", "bytes")
    if d == 2:
        sc = _rl("grpo", model, num_generations=rng.choice((4, 8)))
        return QuestionSpec("grpo_dpo", d, "rl_weights", sc, "component:weights", "bytes")
    sc = _rl(rng.choice(("dpo", "grpo")), model, gpu=rng.choice(("a100-80gb", "h200")))
    if sc["task"] == "grpo":
        sc["num_generations"] = 8
    return QuestionSpec("grpo_dpo", d, "fits", sc, "fits", "fits")


def _zero(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "llama-3-8b", "qwen2.5-7b"))
    n = rng.choice((4, 8))
    sc = _training(model, "a100-80gb", num_gpus=n, zero_stage=d, gradient_checkpointing=True)
    if d == 1:
        return QuestionSpec("zero", d, "optimizer_states", sc, "component:optimizer_states", "bytes")
    if d == 2:
        return QuestionSpec("zero", d, "gradients", sc, "component:gradients", "bytes")
    return QuestionSpec("zero", d, "states_sharded", sc, MODEL_STATES, "bytes")


def _parallelism(d: int, rng: random.Random) -> QuestionSpec:
    if d == 1:
        sc = _inference(rng.choice(("llama-2-70b", "qwen2.5-72b")), "a100-80gb", num_gpus=4, tp=4)
        return QuestionSpec("parallelism", d, "weights", sc, "component:weights", "bytes")
    if d == 2:
        sc = _inference(rng.choice(("llama-2-70b", "llama-3-70b")), "a100-80gb", num_gpus=4, tp=2, pp=2)
        return QuestionSpec("parallelism", d, "weights", sc, "component:weights", "bytes")
    sc = _training(
        rng.choice(("llama-2-7b", "llama-2-13b")), "a100-80gb", num_gpus=4, tp=2, pp=2, seq_len=1024
    )
    return QuestionSpec("parallelism", d, "states_sharded", sc, MODEL_STATES, "bytes")


def _serving(d: int, rng: random.Random) -> QuestionSpec:
    if d == 1:
        sc = _inference(
            rng.choice(("llama-2-70b", "llama-3-8b", "qwen2.5-32b")), rng.choice(("a100-80gb", "rtx-4090"))
        )
        return QuestionSpec("serving", d, "fits", sc, "fits", "fits")
    if d == 2:
        sc = _inference(
            rng.choice(("llama-2-70b", "qwen2.5-72b", "llama-3.1-405b")),
            rng.choice(("a100-80gb", "h100-80gb")),
        )
        return QuestionSpec("serving", d, "min_gpus", sc, "min_gpus", "count")
    sc = _inference(
        rng.choice(("llama-3-8b", "qwen2.5-7b", "llama-2-7b")),
        rng.choice(("a100-80gb", "l40s")),
        seq_len=rng.choice((2048, 4096)),
    )
    return QuestionSpec("serving", d, "sequences", sc, "serving.max_concurrent_sequences", "sequences")


# settings that never change peak memory (tools/no_effect.py explains each), as (before, after) pairs
NO_EFFECT_CHANGES: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
    ({"epochs": 1, "learning_rate": 2e-4}, {"epochs": 10, "learning_rate": 5e-5}),
    ({"lora_alpha": 16, "warmup_steps": 100}, {"lora_alpha": 64, "warmup_steps": 1000}),
    ({"epochs": 3, "lora_alpha": 32}, {"epochs": 20, "lora_alpha": 8}),
    ({"gradient_accumulation_steps": 4}, {"gradient_accumulation_steps": 16}),
)


def _no_effect(d: int, rng: random.Random) -> QuestionSpec:
    model = rng.choice(("llama-2-7b", "qwen2.5-7b", "llama-3-8b"))
    pair = NO_EFFECT_CHANGES[3] if d == 3 else rng.choice(NO_EFFECT_CHANGES[:3])
    before, after = pair
    sc = _lora(model, "a100-80gb", batch_size=rng.choice((1, 2)))
    baseline = dict(sc, **before)
    sc.update(after)
    return QuestionSpec(
        "no_effect", d, "no_effect_total", sc, "per_gpu.total_bytes", "bytes",
        facts={"before": before, "after": after, "baseline_scenario": baseline},
    )  # fmt: skip


CONCEPTS: tuple[str, ...] = (
    "rule_16x",
    "moe_active",
    "gradient_checkpointing",
    "seed_kv_gqa",
    "epochs_grad_accum",
    "zero_stages",
)


def _concepts(d: int, rng: random.Random) -> QuestionSpec:
    concept = rng.choice(CONCEPTS)
    return QuestionSpec("concepts", d, concept, {}, "concept", "concept", facts={"concept": concept})


GENERATORS: dict[str, Generator] = {
    "seed": _seed,
    "weights_precision": _weights_precision,
    "rule_16x": _rule_16x,
    "gradients": _gradients,
    "activations": _activations,
    "kv_cache": _kv_cache,
    "lora": _lora_topic,
    "qlora": _qlora,
    "moe": _moe,
    "ppo": _ppo,
    "grpo_dpo": _grpo_dpo,
    "zero": _zero,
    "parallelism": _parallelism,
    "serving": _serving,
    "no_effect": _no_effect,
    "concepts": _concepts,
}
assert tuple(GENERATORS) == TOPICS


def generate(topic: str, difficulty: int, rng: random.Random) -> QuestionSpec:
    """A question of `topic` at `difficulty` (1-3); `rng` picks among the topic's scenarios."""
    return GENERATORS[topic](difficulty, rng)
