"""The interview's arc: the points asked in order, each a fully stated scenario on the interview's model
and card, and the quantity the estimator grades (the coach's quantities, service/coach/expected.py).

The seed's interviewer goes weights by precision -> training states and the 16x rule -> activations and
checkpointing -> KV per token and the GQA trap -> serving -> LoRA -> MoE resident vs active -> RL's
extra models -> ZeRO. A right first answer on a point with a deeper question (`DEEPER`) goes one level
deeper at level 2 and above ("and in int4?", "and with ZeRO-3?"); anything else moves on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from service.coach.topics import MODEL_STATES, QuestionSpec

ARC: tuple[str, ...] = (
    "weights_precision",
    "rule_16x",
    "activations",
    "gradient_checkpointing",
    "kv_cache",
    "serving",
    "lora",
    "moe",
    "ppo",
    "zero",
)
DEEPER: dict[str, str] = {"weights_precision": "quantization", "zero": "zero3"}
PARENT: dict[str, str] = {deeper: point for point, deeper in DEEPER.items()}
LEVELS = (1, 2, 3)
DEFAULT_LEVEL = 2
DEEPER_FROM_LEVEL = 2
MAX_FOLLOW_UPS = 2
FIGURE_DIFFICULTY = 1  # the coach's difficulty whose tolerances grade every figure (5%, 10%, 15%)

# dense models with grouped-query attention (the KV question's trap needs g < h)
MODELS: tuple[str, ...] = ("llama-3-8b", "qwen2.5-7b", "mistral-7b-v0.1")
MOE_MODELS: tuple[str, ...] = ("qwen3-30b-a3b", "mixtral-8x7b")
GPU = "a100-80gb"
DATA_PARALLEL_GPUS = 8

# the knowledge-base entry (prompts/<lang>/kb/<entry>.md) to study for each point
KB: dict[str, str] = {
    "weights_precision": "mixed_precision",
    "quantization": "awq_gptq",
    "rule_16x": "rule_16x",
    "activations": "seed_activation_bytes",
    "gradient_checkpointing": "gradient_checkpointing",
    "kv_cache": "seed_kv_gqa",
    "serving": "vllm_memory_utilization",
    "lora": "lora_base_memory",
    "moe": "moe_active",
    "ppo": "rl_memory",
    "zero": "zero_stages",
    "zero3": "zero2_vs_zero3",
}


def _training(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    """Everything the estimator would default is stated, so the question can say it."""
    job = {
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
    return {**job, **extra}


def _inference(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    job = {"model": model, "task": "inference", "gpu": gpu, "num_gpus": 1, "batch_size": 1}
    return {**job, "seq_len": 4096, "weight_dtype": "bf16", **extra}


def _lora(model: str, gpu: str, **extra: Any) -> dict[str, Any]:
    job = _training(model, gpu, task="lora", gradient_checkpointing=True, lora_rank=16)
    job.pop("precision_recipe")
    return {**job, "lora_targets": ["all-linear"], **extra}


@dataclass(frozen=True)
class Setting:
    """The interview's model and card (the MoE point needs a model of its own)."""

    model: str
    moe_model: str
    gpu: str = GPU


def pick_setting(interview_id: str) -> Setting:
    """The model of an interview, drawn from a generator seeded by its id (reproducible)."""
    rng = random.Random(interview_id)
    return Setting(model=rng.choice(MODELS), moe_model=rng.choice(MOE_MODELS))


def point_spec(point: str, setting: Setting, level: int) -> QuestionSpec:
    """The main question of `point`: its scenario, quantity and how the answer is written. The level sets
    how many key points an explanation needs (concepts.toml `required`); figures are graded alike."""
    m, gpu = setting.model, setting.gpu
    spec = {
        "weights_precision": (_inference(m, gpu), "component:weights", "bytes"),
        "quantization": (_inference(m, gpu, weight_dtype="int4"), "component:weights", "bytes"),
        "rule_16x": (_training(m, gpu, seq_len=512), MODEL_STATES, "bytes"),
        "activations": (_lora(m, gpu, gradient_checkpointing=False), "component:activations", "bytes"),
        "kv_cache": (_inference(m, gpu), "serving.kv_bytes_per_token", "small_bytes"),
        "serving": (_inference(m, gpu), "serving.max_concurrent_sequences", "sequences"),
        "lora": (_lora(m, gpu), "fits", "fits"),
        "moe": (_inference(setting.moe_model, gpu), "component:weights", "bytes"),
        "ppo": (_training(m, gpu, task="ppo"), "component:weights", "bytes"),
        "zero": (_zero_job(m, gpu, 2), MODEL_STATES, "bytes"),
        "zero3": (_zero_job(m, gpu, 3), MODEL_STATES, "bytes"),
    }
    if point == "gradient_checkpointing":
        facts = {"concept": "gradient_checkpointing"}
        return QuestionSpec(point, level, point, {}, "concept", "concept", facts=facts)
    scenario, quantity, answer_in = spec[point]
    # figures at the coach's tightest tolerances whatever the level (service/coach/expected.py)
    return QuestionSpec(point, FIGURE_DIFFICULTY, point, scenario, quantity, answer_in)


def _zero_job(model: str, gpu: str, stage: int) -> dict[str, Any]:
    return _training(model, gpu, num_gpus=DATA_PARALLEL_GPUS, zero_stage=stage, gradient_checkpointing=True)


def next_point(asked: list[str], last_right_first_time: bool, level: int) -> str | None:
    """The point after the points `asked` so far (the last one closed): deeper after a right first
    answer where the arc has one (level 2+), else the arc's next point; None at the end."""
    if not asked:
        return ARC[0]
    last = asked[-1]
    deeper = DEEPER.get(last)
    if deeper and last_right_first_time and level >= DEEPER_FROM_LEVEL and deeper not in asked:
        return deeper
    position = ARC.index(PARENT.get(last, last))
    return ARC[position + 1] if position + 1 < len(ARC) else None
