"""Grade a parsed answer against the estimator and explain it component by component.

The verdict: the expected figure, the person's figure (the reading of an ambiguous "G" nearest the
expected value), the signed error, then a diagnosis when the figure matches a known mistake (a
subset of the components: "you missed the fp32 master copy: +26.95 GB"; the MHA KV formula on a GQA
model; the active parameters of an MoE; an unsharded ZeRO figure) and the estimator's breakdown with
each component's formula and numbers. Texts: prompts/<lang>/coach/feedback.toml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from service.agent.formula_text import legend_lines
from service.agent.render import component_label
from service.coach.answers import ParsedAnswer
from service.coach.expected import arch_of, component_names, components_for, tolerance
from service.coach.text import GB, GIB, fill, fmt_bytes, fmt_pct, strings
from service.coach.topics import QuestionSpec
from tools.result import Component, Estimate

SUBSET_MATCH = 0.05  # a figure within 5% of a sum of some components "counted" exactly those
MAX_SUBSET_COMPONENTS = 12  # 4,096 sums at most
TRAP_MATCH = 0.05


@dataclass
class Grade:
    correct: bool | None  # None: nothing gradable was read (the question stays open)
    expected: dict[str, Any] | None
    given: dict[str, Any] | None
    error_pct: float | None
    explanation: str
    components: list[dict[str, Any]] = field(default_factory=list)  # the chart: name, label, bytes, kind


def _f(language: str, section: str, key: str, **values: Any) -> str:
    return fill(language, "feedback", section, key, **values)


def _signed_pct(x: float) -> str:
    return f"{'+' if x >= 0 else ''}{x * 100:.1f}%"


def chart_components(est: Estimate, quantity: str, language: str) -> list[dict[str, Any]]:
    comps = components_for(est, quantity) if quantity.startswith("component:") else est.components
    return [
        {"name": c.name, "label": component_label(c, language), "bytes": c.bytes, "kind": c.kind}
        for c in comps
        if c.bytes > 0
    ]


def _component_line(c: Component, language: str) -> str:
    role = ""  # component_label already names the model role
    return _f(
        language,
        "breakdown",
        "component",
        label=component_label(c, language),
        role=role,
        value=fmt_bytes(c.bytes),
        formula=c.formula,
        substituted=c.substituted,
    )


def _breakdown(est: Estimate, quantity: str, language: str) -> list[str]:
    comps = [c for c in components_for(est, quantity) if c.bytes > 0]
    lines = ["", _f(language, "breakdown", "head"), *(_component_line(c, language) for c in comps)]
    if len(comps) > 1:
        lines.append(_f(language, "breakdown", "sum", value=fmt_bytes(sum(c.bytes for c in comps))))
    legend = legend_lines(comps, language)  # what the formulas' symbols mean, in the answer's language
    return lines + (["", *legend] if legend else [])


def _names(comps: list[Component], language: str) -> str:
    sep = "、" if language == "zh" else ", "
    return sep.join(component_label(c, language) for c in comps)


def _subset_diagnosis(comps: list[Component], given: int, language: str) -> str | None:
    """The components the person seems to have counted, when their figure is one subset's sum."""
    comps = [c for c in comps if c.bytes > 0][:MAX_SUBSET_COMPONENTS]
    total = sum(c.bytes for c in comps)
    # the most components that explain the figure (people usually miss one thing), then the closest
    best: tuple[int, float, tuple[int, ...]] | None = None
    for k in range(len(comps) - 1, 0, -1):
        for idx in combinations(range(len(comps)), k):
            s = sum(comps[i].bytes for i in idx)
            err = abs(s - given) / max(given, 1)
            if err <= SUBSET_MATCH and (best is None or (k, -err) > (best[0], -best[1])):
                best = (k, err, idx)
        if best is not None:
            break
    if best is None:
        return None
    counted = [comps[i] for i in best[2]]
    missed = [c for i, c in enumerate(comps) if i not in best[2]]
    delta = total - sum(c.bytes for c in counted)
    if delta <= 0:
        return None
    return _f(
        language,
        "diagnosis",
        "missed",
        counted=_names(counted, language),
        missed=_names(missed, language),
        delta=fmt_bytes(delta),
    )


def _near(a: float, b: float, tol: float = TRAP_MATCH) -> bool:
    return b > 0 and abs(a - b) / b <= tol


def _trap_diagnosis(
    spec: QuestionSpec, est: Estimate, expected: int, given: int, language: str
) -> str | None:
    arch = arch_of(est)
    heads = arch.num_attention_heads
    kv_heads = arch.num_key_value_heads or heads
    names = component_names(spec.quantity)
    kv_asked = names == ["kv_cache"] or spec.quantity == "serving.kv_bytes_per_token"
    if kv_asked and kv_heads < heads:
        factor = heads // kv_heads
        if _near(given, expected * heads / kv_heads):
            return _f(
                language,
                "diagnosis",
                "kv_mha",
                kv_heads=kv_heads,
                head_dim=arch.head_dim or arch.hidden_size // heads,
                factor=factor,
            )
    if names == ["weights"] and arch.num_experts and est.params_total:
        active = expected * est.params_active_per_token / est.params_total
        if _near(given, active, 0.15):
            return _f(
                language,
                "diagnosis",
                "moe_active",
                active=f"{est.params_active_per_token / 1e9:.1f}B",
                params=f"{est.params_total / 1e9:.1f}B",
            )
    n = est.scenario.num_gpus or 1
    if (est.scenario.zero_stage or 0) > 0 and n > 1 and _near(given, expected * n, 0.1):
        return _f(language, "diagnosis", "zero_unsharded", zero=est.scenario.zero_stage, num_gpus=n)
    if est.scenario.task == "ppo" and names and _near(given, expected / 2, 0.1):
        return _f(language, "diagnosis", "ppo_two_models")
    return None


def _unit_mixup(parsed: ParsedAnswer, expected: int, tol: float) -> bool:
    """An explicit GiB that is right in GB (or GB/bytes the other way): worth saying, still wrong."""
    if parsed.number is None or parsed.unit not in ("gib",):
        return False
    return abs(parsed.number * GB - expected) / expected <= tol


def grade_bytes(
    spec: QuestionSpec, est: Estimate, expected: int, parsed: ParsedAnswer, language: str
) -> Grade:
    tol = tolerance(spec.quantity, spec.difficulty)
    readings = list(parsed.readings)
    if parsed.same and spec.facts.get("baseline_bytes") is not None:
        readings = [(int(spec.facts["baseline_bytes"]), "same")]
    if not readings:
        return unreadable(spec, language)
    value, unit = min(readings, key=lambda r: abs(r[0] - expected))
    err = (value - expected) / expected
    correct = abs(err) <= tol + 1e-12
    reading = (
        "" if unit == "same" or len(parsed.readings) < 2 else _f(language, "verdict", "reading", unit=unit)
    )
    given_text = (
        _f(language, "verdict", "same") + f" ({fmt_bytes(value)})" if unit == "same" else fmt_bytes(value)
    )
    lines = [
        _f(language, "verdict", "correct" if correct else "wrong"),
        _f(
            language,
            "verdict",
            "figures",
            expected=fmt_bytes(expected),
            given=given_text,
            reading=reading,
            error=_signed_pct(err),
            tolerance=fmt_pct(tol),
        ),
    ]
    if not correct:
        diagnosis = _trap_diagnosis(spec, est, expected, value, language)
        if diagnosis is None and spec.quantity.startswith(("component:", "per_gpu.")):
            for reading, _ in sorted(readings, key=lambda r: abs(r[0] - expected)):
                diagnosis = _subset_diagnosis(components_for(est, spec.quantity), reading, language)
                if diagnosis:
                    break
        if diagnosis is None and _unit_mixup(parsed, expected, tol):
            diagnosis = _f(language, "diagnosis", "unit_mixup")
        if diagnosis:
            lines.append(diagnosis)
    lines += _explain_bytes(spec, est, language)
    given: dict[str, Any] = {"bytes": value, "unit": unit}
    return Grade(correct, {"bytes": expected}, given, round(err * 100, 2), "\n".join(lines))


def _explain_bytes(spec: QuestionSpec, est: Estimate, language: str) -> list[str]:
    if spec.quantity == "serving.kv_bytes_per_token":
        arch = arch_of(est)
        assert est.serving is not None
        return [
            "",
            _f(
                language,
                "breakdown",
                "kv_per_token",
                layers=arch.num_hidden_layers,
                kv_heads=arch.num_key_value_heads or arch.num_attention_heads,
                head_dim=arch.head_dim or arch.hidden_size // arch.num_attention_heads,
                value=fmt_bytes(est.serving.kv_bytes_per_token),
            ),
        ]
    lines: list[str] = []
    if spec.topic == "no_effect":
        from service.agent.render import no_effect_text

        changed = ", ".join(spec.facts["after"])
        why = " ".join(no_effect_text(n, language) for n in est.no_effect if n.field in spec.facts["after"])
        lines += ["", _f(language, "breakdown", "no_effect", changed=changed, why=why)]
    if spec.topic == "activations":
        on = bool(est.scenario.gradient_checkpointing)
        state = fill(language, "questions", "ckpt", str(on).lower())
        effect = _f(language, "diagnosis", "ckpt_on" if on else "ckpt_off")
        lines += ["", _f(language, "diagnosis", "ckpt", state=state, effect=effect)]
    if spec.topic == "lora" and component_names(spec.quantity) == ["weights"]:
        lines += ["", _f(language, "diagnosis", "lora_base_missing")]
    return lines + _breakdown(est, spec.quantity, language)


def _fits_lines(est: Estimate, language: str) -> list[str]:
    budget = est.per_gpu.total_bytes + est.headroom_bytes
    verdict = _f(language, "verdict", "yes" if est.fits else "no")
    return [
        _f(
            language,
            "breakdown",
            "fits",
            total=fmt_bytes(est.per_gpu.total_bytes),
            budget=fmt_bytes(budget),
            gpu=est.gpu.name,
            margin=fmt_pct(est.safety_margin),
            capacity=f"{est.gpu.memory_bytes / GIB:.2f} GiB",
            verdict=verdict,
        )
    ]


def grade_fits(spec: QuestionSpec, est: Estimate, parsed: ParsedAnswer, language: str) -> Grade:
    said = parsed.fits
    if said is None and parsed.count is not None:  # "needs two cards" = it does not fit on one
        said = parsed.count <= (est.scenario.num_gpus or 1)
    if said is None:
        return unreadable(spec, language)
    correct = said == est.fits
    lines = [
        _f(language, "verdict", "correct" if correct else "wrong"),
        _f(
            language,
            "verdict",
            "figures_fits",
            expected=_f(language, "verdict", "yes" if est.fits else "no"),
            given=_f(language, "verdict", "yes" if said else "no"),
        ),
        "",
        *_fits_lines(est, language),
        *_breakdown(est, "per_gpu.total_bytes", language),
    ]
    return Grade(correct, {"fits": est.fits}, {"fits": said}, None, "\n".join(lines))


def _layout(changes: dict[str, Any] | None) -> str:
    return ", ".join(f"{k} = {v}" for k, v in (changes or {}).items())


def grade_count(
    spec: QuestionSpec, est: Estimate, expected: int | None, parsed: ParsedAnswer, language: str
) -> Grade:
    count = parsed.count
    if count is None and parsed.number is not None and float(parsed.number).is_integer():
        count = int(parsed.number)
    if count is None:
        return unreadable(spec, language)
    tol = tolerance(spec.quantity, spec.difficulty)
    if expected is None:
        correct, err = False, None
    else:
        err = (count - expected) / expected
        correct = count == expected if tol == 0 else abs(err) <= tol + 1e-12
    key = "sequences" if spec.answer_in == "sequences" else "gpus"
    tol_text = _f(language, "verdict", "count_tolerance", tolerance=fmt_pct(tol)) if tol else ""
    lines = [
        _f(language, "verdict", "correct" if correct else "wrong"),
        _f(
            language,
            "verdict",
            "figures_count",
            expected=_f(language, "verdict", key, count=expected if expected is not None else "-"),
            given=_f(language, "verdict", key, count=count),
            tolerance=tol_text,
        ),
        "",
    ]
    if spec.quantity == "min_gpus":
        lines += _min_gpus_lines(est, language)
    elif est.serving is not None:
        s = est.serving
        lines.append(
            _f(
                language,
                "breakdown",
                "serving",
                utilization=fmt_pct(s.gpu_memory_utilization),
                capacity=f"{est.gpu.memory_bytes / GIB:.2f} GiB",
                reserved=fmt_bytes(s.reserved_bytes),
                kv_room=fmt_bytes(s.kv_cache_bytes),
                tokens=f"{s.max_kv_tokens:,}",
                per_token=fmt_bytes(s.kv_bytes_per_token),
                sequences=s.max_concurrent_sequences,
                seq=est.scenario.seq_len,
            )
        )
        lines += _breakdown(est, "per_gpu.total_bytes", language)
    given = {"count": count}
    return Grade(
        correct,
        {"count": expected},
        given,
        None if err is None else round(err * 100, 2),
        "\n".join(lines),
    )


def _min_gpus_lines(est: Estimate, language: str) -> list[str]:
    from tools.estimator import estimate
    from tools.planner import changed_job

    if est.min_gpus is None:
        return [_f(language, "breakdown", "min_gpus_none", gpu=est.gpu.name), *_fits_lines(est, language)]
    changes = est.min_gpus_changes or {}
    # the layout as the planner estimated it (est.scenario is the resolved job: its defaults would read as stated)
    at_min = estimate(changed_job(est, changes), plan=False) if changes else est
    layout = _f(language, "breakdown", "layout", changes=_layout(changes)) if changes else ""
    return [
        _f(
            language,
            "breakdown",
            "min_gpus",
            gpu=est.gpu.name,
            count=est.min_gpus,
            layout=layout,
            total=fmt_bytes(at_min.per_gpu.total_bytes),
        ),
        *_fits_lines(at_min, language),
        *_breakdown(at_min, "per_gpu.total_bytes", language),
    ]


# --- concept questions: key points from prompts/<lang>/coach/concepts.toml ----------------------------


def concept_points(concept: str, language: str) -> dict[str, tuple[str, list[re.Pattern[str]]]]:
    """point id -> (label in `language`, patterns of both languages)."""
    points: dict[str, tuple[str, list[re.Pattern[str]]]] = {}
    for lang in ("en", "zh"):
        for pid, p in strings(lang, "concepts")[concept]["points"].items():
            pats = [re.compile(x, re.IGNORECASE) for x in p["patterns"]]
            label = points[pid][0] if pid in points else p["label"]
            if lang == language:
                label = p["label"]
            points[pid] = (label, (points[pid][1] if pid in points else []) + pats)
    return points


def grade_concept(spec: QuestionSpec, parsed: ParsedAnswer, language: str) -> Grade:
    concept = spec.facts["concept"]
    table = strings(language, "concepts")[concept]
    required = int(table["required"][min(spec.difficulty, 3) - 1])
    points = concept_points(concept, language)
    text = parsed.text
    if not text.strip():
        return unreadable(spec, language)
    hit = [pid for pid, (_, pats) in points.items() if any(p.search(text) for p in pats)]
    missed = [pid for pid in points if pid not in hit]
    correct = len(hit) >= required
    sep = "; " if language == "en" else "；"
    lines = [_f(language, "verdict", "correct" if correct else "wrong")]
    if hit:
        lines.append(_f(language, "concept", "hit", points=sep.join(points[p][0] for p in hit)))
    if missed:
        lines.append(_f(language, "concept", "missed", points=sep.join(points[p][0] for p in missed)))
    lines.append(_f(language, "concept", "need", required=required, total=len(points)))
    lines += _kb_figure(table["kb"], language)
    return Grade(
        correct,
        {"key_points": list(points)},
        {"key_points": hit},
        None,
        "\n".join(lines),
    )


def _kb_figure(topic: str, language: str) -> list[str]:
    """The knowledge-base entry's example, estimated: the figure the entry cites."""
    from service.agent.offline.kb import kb_entry
    from service.agent.render import task_label
    from tools.estimator import estimate
    from tools.scenario import Scenario

    entry = kb_entry(topic, language)
    if entry is None or not entry.example:
        return []
    est = estimate(Scenario.model_validate(entry.example), plan=False)
    return [
        "",
        _f(
            language,
            "concept",
            "kb",
            title=entry.title,
            model=est.scenario.model,
            figure=fmt_bytes(est.per_gpu.total_bytes),
            task=task_label(est.scenario.task, language),
            gpu=est.gpu.name,
        ),
    ]


def unreadable(spec: QuestionSpec, language: str) -> Grade:
    accepted = fill(language, "questions", "answer_in", spec.answer_in)
    return Grade(None, None, None, None, _f(language, "verdict", "unreadable", accepted=accepted))


def _impossible_figure(spec: QuestionSpec, parsed: ParsedAnswer, language: str) -> Grade:
    """A negative figure ("-5 GB") or one beyond any memory ("1e308 GB"): a hint, not a grade."""
    if parsed.negative:
        return Grade(None, None, None, None, _f(language, "verdict", "negative"))
    accepted = fill(language, "questions", "answer_in", spec.answer_in)
    return Grade(None, None, None, None, _f(language, "verdict", "too_large", accepted=accepted))


def grade(
    spec: QuestionSpec, est: Estimate | None, expected: dict[str, Any], parsed: ParsedAnswer, language: str
) -> Grade:
    """Grade `parsed` for the question `spec` whose estimator figure is `expected`."""
    if spec.quantity == "concept":
        return grade_concept(spec, parsed, language)
    if parsed.negative or parsed.too_large:  # not graded: the answer can be given again
        return _impossible_figure(spec, parsed, language)
    assert est is not None
    if "bytes" in expected:
        g = grade_bytes(spec, est, int(expected["bytes"]), parsed, language)
    elif "fits" in expected:
        g = grade_fits(spec, est, parsed, language)
    else:
        g = grade_count(spec, est, expected.get("count"), parsed, language)
    if g.correct is not None:
        g.components = chart_components(est, spec.quantity, language)
    return g
