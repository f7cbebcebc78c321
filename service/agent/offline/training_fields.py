"""Training settings that do not change peak memory (epochs, learning rate, accumulation, warm-up), and
whether a question without a task word is about training."""

from __future__ import annotations

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, NUM, Fields
from service.agent.offline.mentions import SEP, L, R
from service.agent.offline.numbers import float_value

# --- things that do not change peak memory ------------------------------------------------------------


_EPOCHS = rx.compile(
    rf"{L}{NUM}{SEP}epochs?{R}|{L}(?:num{SEP}train{SEP}epochs|num{SEP}epochs|epochs?){IS}{NUM}(?![0-9a-z])"
    rf"|(?:训练|跑)?\s*{NUM}\s*(?:个)?\s*(?:epoch|轮)|(?:训练轮数|轮数|epoch数)\s*(?:为|=|是)?\s*{NUM}"
)
_LEARNING_RATE = rx.compile(
    rf"{L}(?:learning{SEP}rate|lr){IS}(\d+(?:\.\d+)?(?:e-?\d+)?){R}|学习率\s*(?:为|=|是|:)?\s*(\d+(?:\.\d+)?(?:e-?\d+)?)"
)
_GRAD_ACCUM = rx.compile(
    rf"{L}(?:gradient{SEP}accumulation(?:{SEP}steps)?|grad{SEP}accum(?:ulation)?(?:{SEP}steps)?|ga{SEP}steps|ga){IS}(\d+){R}"
    rf"|{L}accumulat(?:e|ing){SEP}(?:over{SEP})?(\d+){SEP}(?:steps|micro{SEP}batches)|梯度累[积加](?:步数)?\s*(?:为|=|是|:|改成|改为|设为)?\s*(\d+)"
)
_WARMUP = rx.compile(rf"{L}warmup(?:{SEP}steps)?{IS}(\d+){R}")


def no_effect_fields(low: str) -> Fields:
    out: Fields = {}
    e = _EPOCHS.search(low)
    if e:
        out["epochs"] = float(next(g for g in e.groups() if g))
    lr = _LEARNING_RATE.search(low)
    if lr:
        value = float_value(lr.group(1) or lr.group(2))
        if value is not None:
            out["learning_rate"] = value
    ga = _GRAD_ACCUM.search(low)
    if ga:
        out["gradient_accumulation_steps"] = int(next(g for g in ga.groups() if g))
    w = _WARMUP.search(low)
    if w:
        out["warmup_steps"] = int(w.group(1))
    return out


# Training words without a task word: an optimizer, ZeRO, checkpointing, a data-parallel size, a learning rate.
TRAINING_HINTS = frozenset(
    {
        "optimizer",
        "zero_stage",
        "gradient_checkpointing",
        "recompute",
        "precision_recipe",
        "gradient_accumulation_steps",
        "learning_rate",
        "epochs",
        "global_batch_size",
        "offload_optimizer",
        "warmup_steps",
    }
)
_DP_STATED = rx.compile(rf"{L}(?:dp|data{SEP}parallel(?:ism)?(?:{SEP}size)?){IS}\d+|数据并行")


def implies_training(low: str, fields: Fields) -> bool:
    return bool(set(fields) & TRAINING_HINTS) or bool(_DP_STATED.search(low))
