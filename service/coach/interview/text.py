"""The interview's words, from prompts/<lang>/coach/interview.toml: the interviewer's questions (the
scenario's figures filled in, never the expected answer), and the figures of the tool with their formulas.
"""

from __future__ import annotations

from typing import Any

from service.agent.prompt_files import load_toml
from service.agent.render import component_label
from service.coach.expected import arch_of, components_for
from service.coach.text import GIB, MIB, fill, fmt_bytes, fmt_params, fmt_pct
from service.coach.topics import QuestionSpec
from tools.catalog.models import find_model
from tools.result import Estimate

KIB = 2**10


def say(language: str, section: str, key: str, /, **values: Any) -> str:
    """A template of interview.toml in `language` (English when the key is missing), filled."""
    return fill(language, "interview", section, key, **values)


def point_title(point: str, language: str) -> str:
    return say(language, "title", point)


def component_names_label(names: list[str], language: str) -> str:
    """'the gradients, the fp32 master weights' in `language` (labels.toml [component])."""
    labels = load_toml(language, "labels.toml").get("component", {})
    said = [str(labels.get(n) or n.replace("_", " ")) for n in names]
    if language == "zh":
        return "、".join(said)
    return ", ".join(s[:1].lower() + s[1:] if not s[:2].isupper() else s for s in said)


def scenario_values(est: Estimate, language: str) -> dict[str, Any]:
    """What the questions may say about the stated scenario and its model."""
    sc = est.scenario
    arch = arch_of(est)
    heads = arch.num_attention_heads
    values: dict[str, Any] = {
        "model": find_model(sc.model or "").name,
        "params": fmt_params(est.params_total),
        "layers": arch.num_hidden_layers,
        "heads": heads,
        "kv_heads": arch.num_key_value_heads or heads,
        "head_dim": arch.head_dim or arch.hidden_size // heads,
        "experts": arch.num_experts,
        "topk": arch.num_experts_per_tok,
        "active": fmt_params(est.params_active_per_token),
        "gpu": est.gpu.name,
        "gpu_mem": f"{est.gpu.memory_bytes / GIB:.2f} GiB",
        "num_gpus": sc.num_gpus,
        "batch": sc.batch_size,
        "seq": sc.seq_len,
        "rank": sc.lora_rank,
        "zero": sc.zero_stage,
        "utilization": fmt_pct(est.serving.gpu_memory_utilization) if est.serving else "",
    }
    values["setup"] = say(language, "setup", "model", **values)
    return values


def question_text(spec: QuestionSpec, est: Estimate | None, language: str, ask: str | None = None) -> str:
    """The interviewer's question (`ask`: a key of [ask], default the point's own) and how to answer."""
    values = scenario_values(est, language) if est is not None else {}
    text = say(language, "ask", ask or spec.ask, **values)
    sep = "" if language == "zh" else " "
    return text + sep + say(language, "answer_in", spec.answer_in)


def fmt_figure(n: int) -> str:
    """A memory figure in GiB or MiB (decimal beside, service/coach/text.py); KiB below 1 MiB (KV per token)."""
    if abs(n) >= MIB:
        return fmt_bytes(n)
    return f"{n / KIB:.2f} KiB ({n / 1000:.2f} KB)"


def figure_text(expected: dict[str, Any], language: str) -> str:
    """The tool's figure as a person reads it: GiB (decimal GB beside), yes/no, a count."""
    if "bytes" in expected:
        return fmt_figure(int(expected["bytes"]))
    if "fits" in expected:
        return say(language, "feedback", "yes" if expected["fits"] else "no")
    if "count" in expected:
        return str(expected["count"])
    return ""


def formula_text(est: Estimate, quantity: str, language: str) -> str:
    """How the tool gets the figure: each component's formula with its numbers substituted."""
    if quantity == "serving.kv_bytes_per_token":
        values = scenario_values(est, language)
        return say(language, "formula", "kv_per_token", **values)
    if quantity.startswith("serving.") and est.serving is not None:
        s = est.serving
        return say(
            language,
            "formula",
            "sequences",
            utilization=fmt_pct(s.gpu_memory_utilization),
            capacity=f"{est.gpu.memory_bytes / GIB:.2f} GiB",
            reserved=fmt_bytes(s.reserved_bytes),
            kv_room=fmt_bytes(s.kv_cache_bytes),
            per_token=fmt_figure(s.kv_bytes_per_token),
            seq=est.scenario.seq_len,
        )
    if quantity == "fits":
        budget = est.per_gpu.total_bytes + est.headroom_bytes
        return say(
            language,
            "formula",
            "fits",
            total=fmt_bytes(est.per_gpu.total_bytes),
            budget=fmt_bytes(budget),
            gpu=est.gpu.name,
        )
    parts = [c for c in components_for(est, quantity) if c.bytes > 0]
    return " + ".join(f"{component_label(c, language)} ({c.formula}; {c.substituted})" for c in parts)
