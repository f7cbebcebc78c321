"""Question text and figures, written from prompts/<lang>/coach/*.toml in the person's language.

The text states the scenario (model and its shape, GPUs, task, precision, batch, sequence, LoRA,
ZeRO, TP/PP), what the estimator assumes beyond it, and the quantity asked. It never contains the
expected figure (the no-effect topic states the *baseline* before the change, by design).
"""

from __future__ import annotations

from string import Template
from typing import Any

from service.agent.prompt_files import load_toml
from service.coach.expected import arch_of
from service.coach.topics import CONCEPTS, QuestionSpec
from tools.result import Estimate

GIB = 2**30
MIB = 2**20
GB = 10**9
MB = 10**6

# fields the setup lines already say; other assumptions of the estimate are listed after them
_SAID = {
    "model", "params", "task", "gpu", "num_gpus", "batch_size", "seq_len", "weight_dtype",
    "precision_recipe", "optimizer", "gradient_checkpointing", "recompute", "attention", "lora_rank",
    "lora_targets", "zero_stage", "tp", "pp", "num_generations", "critic_model", "reward_model",
}  # fmt: skip


def strings(language: str, name: str) -> dict[str, Any]:
    return load_toml(language, f"coach/{name}.toml")


def fill(language: str, name: str, section: str, key: str, **values: Any) -> str:
    table = strings(language, name).get(section, {})
    template = table.get(key)
    if template is None:
        template = strings("en", name)[section][key]
    return Template(template).safe_substitute({k: str(v) for k, v in values.items()})


def topic_title(topic: str, language: str) -> str:
    return strings(language, "topics")["title"][topic]


def fmt_bytes(n: int) -> str:
    """GiB (what nvidia-smi and PyTorch show) with decimal GB beside it; MiB/MB below 1 GiB."""
    if abs(n) >= GIB:
        return f"{n / GIB:.2f} GiB ({n / GB:.2f} GB)"
    return f"{n / MIB:.2f} MiB ({n / MB:.2f} MB)"


def fmt_params(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 10**9 else f"{n / 1e6:.0f}M"


def fmt_pct(x: float) -> str:
    return f"{x * 100:.1f}%".replace(".0%", "%")


def _label(language: str, section: str, key: str) -> str:
    table = load_toml(language, "labels.toml").get(section, {})
    return str(table.get(key) or load_toml("en", "labels.toml").get(section, {}).get(key) or key)


def _targets(targets: list[str], language: str) -> str:
    return ", ".join(_label(language, "value", t) for t in targets)


def _values(spec: QuestionSpec, est: Estimate, language: str) -> dict[str, Any]:
    sc = est.scenario
    arch = arch_of(est)
    heads = arch.num_attention_heads
    values: dict[str, Any] = {
        "topic": topic_title(spec.topic, language),
        "difficulty": spec.difficulty,
        "model": _model_name(sc.model),
        "params": fmt_params(est.params_total),
        "layers": arch.num_hidden_layers,
        "hidden": arch.hidden_size,
        "heads": heads,
        "kv_heads": arch.num_key_value_heads or heads,
        "head_dim": arch.head_dim or arch.hidden_size // heads,
        "vocab": arch.vocab_size,
        "experts": arch.num_experts,
        "topk": arch.num_experts_per_tok,
        "active": fmt_params(est.params_active_per_token),
        "num_gpus": sc.num_gpus,
        "gpu": est.gpu.name,
        "gpu_mem": f"{est.gpu.memory_bytes / GIB:.2f} GiB",
        "task": _label(language, "task", sc.task or ""),
        "dtype": sc.weight_dtype,
        "batch": sc.batch_size,
        "seq": sc.seq_len,
        "recipe": fill(language, "questions", "recipe", sc.precision_recipe or "mixed"),
        "optimizer": fill(language, "questions", "optimizer", sc.optimizer or "adamw"),
        "ckpt": fill(language, "questions", "ckpt", str(bool(sc.gradient_checkpointing)).lower()),
        "rank": sc.lora_rank,
        "targets": _targets(sc.lora_targets or [], language),
        "base_dtype": "NF4 (4-bit)" if sc.task == "qlora" else (sc.weight_dtype or "bf16"),
        "zero": sc.zero_stage,
        "tp": sc.tp or 1,
        "pp": sc.pp or 1,
        "margin": fmt_pct(est.safety_margin),
        "generations": sc.num_generations,
        "utilization": fmt_pct(est.serving.gpu_memory_utilization) if est.serving else "",
    }
    return values


def _model_name(model_id: str | None) -> str:
    from tools.catalog.models import find_model

    try:
        return find_model(model_id or "").name
    except Exception:  # an explicit architecture without a catalog entry
        return model_id or ""


def _stated(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in values.items())


def question_text(spec: QuestionSpec, est: Estimate | None, language: str) -> str:
    """The full question: title line, the scenario, what the estimator assumes, the ask."""
    if spec.quantity == "concept":
        return concept_question_text(spec, language)
    assert est is not None
    v = _values(spec, est, language)
    sc = est.scenario
    lines = [
        fill(language, "questions", "setup", "intro", **v),
        fill(language, "questions", "setup", "model", **v),
    ]
    if v["experts"]:
        lines.append(fill(language, "questions", "setup", "moe", **v))
    gpus_line = "gpu_type" if spec.quantity == "min_gpus" else "gpus"  # the count is what is asked
    lines.append(fill(language, "questions", "setup", gpus_line, **v))
    if sc.task == "inference":
        lines.append(fill(language, "questions", "setup", "inference", **v))
    elif sc.task in ("ppo", "grpo", "dpo"):
        roles = fill(language, "questions", "roles", sc.task, **v)
        lines.append(fill(language, "questions", "setup", "rl", roles=roles, **{k: x for k, x in v.items()}))
        lines.append(fill(language, "questions", "setup", "training", **v))
    else:
        lines.append(fill(language, "questions", "setup", "training", **v))
    if sc.task in ("lora", "qlora"):
        lines.append(fill(language, "questions", "setup", "lora", **v))
    if (sc.zero_stage or 0) > 0:
        lines.append(fill(language, "questions", "setup", "zero", **v))
    if (sc.tp or 1) > 1 or (sc.pp or 1) > 1:
        lines.append(fill(language, "questions", "setup", "parallel", **v))
    assumed = {a.field: a.value for a in est.assumptions if a.field not in _SAID}
    if assumed:
        lines.append(fill(language, "questions", "setup", "stated", stated=_stated(assumed)))
    if spec.topic == "no_effect":
        lines.append(
            fill(
                language,
                "questions",
                "setup",
                "baseline",
                before=_stated(spec.facts["before"]),
                after=_stated(spec.facts["after"]),
                baseline=fmt_bytes(spec.facts["baseline_bytes"]),
            )
        )
    lines = [line[:1].upper() + line[1:] for line in lines]  # "full fine-tuning: ..." starts a sentence
    ask = fill(language, "questions", "ask", spec.ask, **v)
    lines.append("")
    lines.append(
        ask + ("" if language == "zh" else " ") + fill(language, "questions", "answer_in", spec.answer_in)
    )
    return "\n".join(lines)


def concept_question_text(spec: QuestionSpec, language: str) -> str:
    concept = spec.facts["concept"]
    assert concept in CONCEPTS
    v = {"topic": topic_title(spec.topic, language), "difficulty": spec.difficulty}
    body = strings(language, "concepts")[concept]["question"]
    return "\n".join(
        [
            fill(language, "questions", "concept", "intro", **v),
            "",
            body + ("" if language == "zh" else " ") + fill(language, "questions", "answer_in", "concept"),
        ]
    )


def hint_text(topic: str, language: str) -> str:
    return fill(language, "feedback", "hint", "prefix") + fill(language, "questions", "hint", topic)
