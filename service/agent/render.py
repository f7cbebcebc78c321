"""Templated answers from an Estimate, in English or Chinese (templates in prompts/<lang>/).

Pure presentation: every figure comes from the Estimate and is formatted with `tools.units`
(GiB with 2 decimals; decimal GB with 1 decimal only beside a decimal rule of thumb). No memory
arithmetic happens here. The LLM agent reuses `render_answer` for its fallback answer.

Chinese answers are fully Chinese: component labels, verdicts, assumption reasons
(service/agent/assumption_text.py, prompts/<lang>/assumptions.toml), planner
changes (composed from `Suggestion.scenario_changes` via prompts/zh/labels.toml, never by
translating the planner's English text) and no-effect explanations (prompts/zh/no_effect.json).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from service.agent.assumption_text import assumption_text
from service.agent.component_text import component_label_text, component_note_text, gpu_role_text
from service.agent.events import Display
from service.agent.formula_text import legend_lines
from service.agent.note_text import no_effect_templates as no_effect_templates  # re-exported
from service.agent.note_text import no_effect_text, note_text
from service.agent.prompt_files import load_toml
from service.agent.suggestion_text import change_words  # the planner's own codes, said in a language
from service.agent.templating import Pieces, Template, split, substitute
from tools.accuracy import AccuracyBound
from tools.errors import ScenarioError
from tools.result import Component, Estimate, Suggestion
from tools.units import fmt_count, fmt_gb, fmt_gib

_MISSING = "n/a"
_NO_LABELS: Mapping[str, Any] = MappingProxyType({})


def _tpl(language: str, section: str, key: str) -> str:
    """A template; an empty string in a language's file means "leave this line out" there."""
    table = load_toml(_lang(language), "answer.toml").get(section, {})
    if key in table:
        return str(table[key])
    return str(load_toml("en", "answer.toml").get(section, {}).get(key, ""))


@lru_cache(maxsize=1024)
def _tpl_pieces(language: str, section: str, key: str) -> Pieces:
    """`_tpl`'s text as `_fill` fills it (templating.split), read once per template."""
    return split(_tpl(language, section, key))


def _fill(language: str, section: str, key: str, **values: Any) -> str:
    return substitute(_tpl_pieces(language, section, key), values)


@lru_cache(maxsize=64)
def _labels(language: str, section: str) -> Mapping[str, Any]:
    """A table of labels.toml (the parsed file's own: read-only)."""
    table: Mapping[str, Any] = load_toml(_lang(language), "labels.toml").get(section, _NO_LABELS)
    return table


def _lang(language: str | None) -> str:
    return language if language in ("en", "zh") else "en"


def fmt_bytes(n: int) -> str:
    """'13,476,831,232'."""
    return f"{n:,}"


def _bool_word(value: bool, language: str) -> str:
    return _tpl(language, "text", "true_word" if value else "false_word")


def fmt_value(value: Any, language: str) -> str:
    """A scenario value as shown in an answer (labels for enum values, Chinese yes/no words)."""
    if isinstance(value, bool):
        return _bool_word(value, language)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v, language) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt_value(v, language)}" for k, v in value.items())
    if isinstance(value, int) and value >= 100_000:
        return f"{value:,}"
    labels = _labels(language, "value")
    return str(labels.get(str(value), value))


def task_label(task: str | None, language: str) -> str:
    return str(_labels(language, "task").get(task or "", task or ""))


def component_label(component: Component, language: str) -> str:
    """What the component holds in `language`: its label code's template (prompts/<lang>/components.toml),
    else the component name's label (labels.toml [component]); RL components add their model's role."""
    coded = component_label_text(component, _lang(language))
    stored = component.label if _lang(language) == "en" else None  # an Estimate stored before label codes
    base = (
        coded
        or stored
        or _labels(language, "component").get(component.name)
        or component.name.replace("_", " ")
    )
    if component.model_role:
        role = _labels(language, "role").get(component.model_role, component.model_role)
        base = f"{base} [{role}]" if language == "en" else f"{base}（{role}）"
    return str(base)


def _phase(phase: str, language: str) -> str:
    return str(load_toml(_lang(language), "answer.toml").get("phase", {}).get(phase, phase))


def _margin(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def change_text(suggestion: Suggestion, language: str, base: Any = None) -> str:
    """A planner change in the answer's language, composed from its scenario_changes via
    prompts/<lang>/labels.toml [change] (never by translating the planner's English text); the
    layout fields (GPU count, TP/PP, ZeRO) read as one phrase (`layout_text`)."""
    if not suggestion.scenario_changes:
        return change_words(suggestion, language)
    lang = _lang(language)
    table = _labels(lang, "change")
    if not table:
        return change_words(suggestion, language)
    fields = _labels(lang, "field")
    changes = {k: v for k, v in suggestion.scenario_changes.items() if v is not None}
    skip: set[str] = set(LAYOUT_FIELDS)
    if "task" in changes:  # the method implies its own quantisation and adapter defaults
        skip |= IMPLIED_BY_TASK
    if "weight_dtype" in changes:
        skip |= {"quant_method", "quant_group_size", "double_quant"}
    if changes.get("gradient_checkpointing") is True:
        skip.add("recompute")
    values = {k: fmt_value(v, lang) for k, v in changes.items()}
    ordered = sorted(changes.items(), key=lambda kv: kv[0] != "task")
    parts: list[str] = []
    for field, value in ordered:
        if field in skip:
            continue
        key_value = f"{field}.{str(value).lower() if isinstance(value, bool) else value}"
        template = table.get(key_value) or table.get(field) or table.get("_default", "${field} = ${value}")
        parts.append(
            Template(str(template)).safe_substitute(
                values, field=fields.get(field, field), value=fmt_value(value, lang)
            )
        )
    n = changes.get("num_gpus")
    asked = getattr(base, "num_gpus", None) or 1
    if n is not None and n != asked:
        key = "num_gpus.1" if n == 1 else "num_gpus"
        if n < asked:  # the planner offers fewer GPUs only when the job fits as asked: say it so
            key = "num_gpus.fewer.1" if n == 1 else "num_gpus.fewer"
        parts.append(Template(str(table.get(key, ""))).safe_substitute(value=n, asked=asked))
    if LAYOUT_FIELDS & set(changes):
        where = layout_text(changes, base, lang, only_changes=True)
        if where:
            parts.append(where)
    joiner = _tpl(lang, "text", "change_joiner") or " + "
    return joiner.join(parts) or change_words(suggestion, language)


# Fields a planner change of method (task) sets along with it; the method's own label says them.
IMPLIED_BY_TASK = frozenset(
    {"weight_dtype", "quant_method", "double_quant", "lora_rank", "lora_targets", "trainable_layers"}
)
LAYOUT_FIELDS = frozenset({"num_gpus", "tp", "pp", "cp", "ep", "zero_stage", "sequence_parallel"})


def layout_text(changes: dict[str, Any], base: Any, language: str, *, only_changes: bool = False) -> str:
    """How a job spreads over its GPUs, in words: 'with ZeRO-3 over 2 GPUs (weights, gradients and
    optimizer states split 2 ways)', 'with tensor parallel TP=2 (one copy split over 2 GPUs)'.
    `base`: the scenario the changes apply to; `only_changes`: name only the parts the changes set."""
    lang = _lang(language)
    table = _labels(lang, "layout")

    def val(name: str, default: Any) -> Any:
        if changes.get(name) is not None:
            return changes[name]
        got = getattr(base, name, None) if base is not None else None
        return default if got is None else got

    n, tp, pp, cp = (int(val(k, 1)) for k in ("num_gpus", "tp", "pp", "cp"))
    zero, sp = int(val("zero_stage", 0)), bool(val("sequence_parallel", False))
    dp = max(1, n // (tp * pp * cp))
    moved = "num_gpus" in changes

    def shown(*names: str) -> bool:
        return not only_changes or moved or any(k in changes for k in names)

    if n == 1:
        return "" if only_changes else str(table.get("single", ""))
    parts: list[str] = []
    if tp > 1 and shown("tp", "sequence_parallel"):
        parts.append(Template(str(table.get("tp_sp" if sp else "tp", ""))).safe_substitute(tp=tp))
    if pp > 1 and shown("pp"):
        parts.append(Template(str(table.get("pp", ""))).safe_substitute(pp=pp))
    if dp > 1 and shown("zero_stage"):
        parts.append(Template(str(table.get(f"zero{zero}" if zero else "dp", ""))).safe_substitute(dp=dp))
    parts = [p for p in parts if p]
    if not parts:
        return ""
    if only_changes:  # a suggestion's change: the parts alone ("ZeRO-3 over 8 data-parallel GPUs (...)")
        return str(table.get("joiner", ", ")).join(parts)
    return Template(str(table.get("wrap", "${parts}"))).safe_substitute(
        n=n, parts=str(table.get("joiner", ", ")).join(parts)
    )


def suggestion_tradeoffs(suggestion: Suggestion, base: Any, language: str) -> str:
    """What the change costs, in words: '; steps ~33% slower (recompute)', '; small quality loss
    (4-bit weights)'. Factors and ranks are the planner's (tools.planner cost model)."""
    if base is None:
        return ""
    from tools.planner import fidelity_rank, step_time_causes

    lang = _lang(language)
    table = _labels(lang, "tradeoff")
    changes = suggestion.scenario_changes
    out: list[str] = []
    causes = step_time_causes(base, changes)
    factor = math.prod(multiplier for _, multiplier in causes)
    if factor > 1.005:
        why = [str(table[c]) for c, multiplier in causes if multiplier > 1.0 and c in table]
        key, pct = ("slower_x", f"{factor:.1f}") if factor >= 2 else ("slower", f"{(factor - 1) * 100:.0f}")
        text = Template(str(table.get(key, ""))).safe_substitute(pct=pct)
        if why:
            text += Template(str(table.get("because", ""))).safe_substitute(
                why=str(table.get("joiner", ", ")).join(why)
            )
        out.append(text)
    rank = fidelity_rank(base, changes)
    kind = "inference" if getattr(base, "task", None) == "inference" else "training"
    fidelity = table.get(f"fidelity_{rank}_{kind}") or table.get(f"fidelity_{rank}")
    if rank and fidelity:
        out.append(str(fidelity))
    if not out:
        return ""
    return str(table.get("lead", "; ")) + str(table.get("joiner", ", ")).join(out)


def gpus_text(n: int, language: str) -> str:
    return _fill(_lang(language), "text", "gpus_one" if n == 1 else "gpus_many", n=n)


def _no_effect_lines(estimate: Estimate, language: str) -> list[str]:
    return [
        _fill(language, "text", "no_effect", explanation=no_effect_text(n, language))
        for n in estimate.no_effect
    ]


def render_answer_lines(
    estimate: Estimate, language: str, focus: str | None = None, display: PanelTexts | None = None
) -> list[str]:
    """The answer as lines (the offline agent streams them one by one): the short summary
    (service/agent/summary.py, the accuracy bound said there once), then the full cited breakdown."""
    summary, detail = render_answer_parts(estimate, language, focus, display)
    return [*summary, "", *detail]


def render_answer_parts(
    estimate: Estimate, language: str, focus: str | None = None, display: PanelTexts | None = None
) -> tuple[list[str], list[str]]:
    """(the short summary's lines, the full cited breakdown's lines) of `render_answer_lines`, both from the
    same panel texts (`display`, the estimate's `display_texts` in `language`, made here when not given)."""
    from service.agent.summary import summary_lines

    panels = panels_for(estimate, language, display)
    return summary_lines(estimate, language, focus, panels), render_detail_lines(estimate, language, panels)


def panels_for(estimate: Estimate, language: str, display: PanelTexts | None) -> PanelTexts:
    """`display` when it is the estimate's panel texts in `language`, else `display_texts(estimate, language)`."""
    lang = _lang(language)
    return display if display is not None and display["language"] == lang else display_texts(estimate, lang)


def render_detail_lines(estimate: Estimate, language: str, display: PanelTexts | None = None) -> list[str]:
    """The full cited breakdown: every component's formula, substitution and source. Labels, verdict,
    changes, assumption texts and notes are the panel texts' (`display`, made when not given)."""
    lang = _lang(language)
    panels = panels_for(estimate, lang, display)
    s = estimate.scenario
    gpu_memory = fmt_gib(estimate.gpu.memory_bytes)
    num_gpus = s.num_gpus or 1
    lines: list[str] = [
        _fill(
            lang,
            "text",
            "header",
            model=s.model or fmt_count(estimate.params_total),
            params=fmt_count(estimate.params_total),
            task=task_label(s.task, lang),
            num_gpus=num_gpus,
            gpu=estimate.gpu.name,
            gpu_memory=gpu_memory,
        ),
        "",
    ]
    lines.append(panels["verdict"])
    role = gpu_role_text(estimate.per_gpu, lang) if num_gpus > 1 else None
    if role:
        lines.append(_fill(lang, "text", "gpu_role", role=role))
    from service.agent.summary import min_gpus_line  # one sentence for the summary and the breakdown

    fewest = min_gpus_line(estimate, lang)
    if fewest:
        lines.append(fewest)
    if estimate.gpu.alias_note and not any(a.field == "gpu" for a in estimate.assumptions):
        lines.append(
            _fill(
                lang,
                "text",
                "gpu_note",
                note=estimate.gpu.alias_note,
                alias=s.gpu or estimate.gpu.id,
                gpu_id=estimate.gpu.name,
                gpu_memory=gpu_memory,
            )
        )
    lines.append(
        _fill(
            lang,
            "text",
            "params_line" if estimate.params_trainable else "params_line_inference",
            total=fmt_count(estimate.params_total),
            trainable=fmt_count(estimate.params_trainable),
            active=fmt_count(estimate.params_active_per_token),
        )
    )
    lines += ["", _tpl(lang, "text", "components_title")]
    labelled = list(zip(estimate.components, (p["label"] for p in panels["components"]), strict=True))
    for c, label in labelled:
        if c.kind == "tensor":
            lines += _component_lines(c, label, lang)
    overheads = [(c, label) for c, label in labelled if c.kind != "tensor"]
    if overheads:
        lines.append(_tpl(lang, "text", "overhead_title"))
        for c, label in overheads:
            lines += _component_lines(c, label, lang)
    lines.append(
        _fill(
            lang,
            "text",
            "sum_line",
            tensor_peak=fmt_gib(estimate.per_gpu.tensor_peak_bytes),
            overhead=fmt_gib(estimate.per_gpu.total_bytes - estimate.per_gpu.tensor_peak_bytes),
            total=fmt_gib(estimate.per_gpu.total_bytes),
        )
    )
    legend = legend_lines(estimate.components, lang)  # what the formulas' symbols mean
    if legend:
        lines += ["", *legend]
    if estimate.suggestions:
        lines += [
            "",
            _tpl(lang, "text", "suggestions_title" if not estimate.fits else "suggestions_title_fits"),
        ]
        for n, (sug, said) in enumerate(zip(estimate.suggestions, panels["suggestions"], strict=True), 1):
            lines.append(
                _fill(
                    lang,
                    "text",
                    "suggestion",
                    n=n,
                    change=said["change"],
                    total=fmt_gib(sug.total_bytes),
                    num_gpus=sug.num_gpus,
                    gpus=gpus_text(sug.num_gpus, lang),
                    verdict=_tpl(lang, "text", "fits_word" if sug.fits else "no_fit_word"),
                    tradeoffs=said["tradeoffs"],
                )
            )
    no_effect = _no_effect_lines(estimate, lang)
    if no_effect:
        lines += ["", _tpl(lang, "text", "no_effect_title"), *no_effect]
    serving = _serving_lines(estimate, lang)
    if serving:
        lines += ["", *serving]
    if estimate.assumptions:
        lines += ["", _tpl(lang, "text", "assumptions_title")]
        fields = _labels(lang, "field")
        for a, said in zip(estimate.assumptions, panels["assumptions"], strict=True):
            lines.append(
                _fill(
                    lang,
                    "text",
                    "assumption",
                    field=fields.get(a.field, a.field),
                    value=said["value"],
                    reason=said["reason"],
                )
            )
    notes = panels["notes"]
    if notes and _tpl(lang, "text", "notes_title"):
        lines += ["", _tpl(lang, "text", "notes_title")]
        lines += [_fill(lang, "text", "note", note=n) for n in notes]
    return [line for line in lines if line is not None]


def _accuracy_text(estimate: Estimate, language: str) -> str | None:
    """The estimate's measured error bound in the answer's language (same benchmark figures)."""
    return accuracy_text(estimate.accuracy, language) if estimate.accuracy is not None else None


def accuracy_text(bound: AccuracyBound, language: str) -> str:
    """One sentence with the accuracy benchmark's figures (answer.toml accuracy_bound, accuracy_published)."""
    lang = _lang(language)
    text = _fill(
        lang,
        "text",
        "accuracy_bound",
        typical=bound.typical_pct,
        median=f"{bound.median_abs_error_pct:.1f}",
        worst=f"{bound.worst_abs_error_pct:.1f}",
        cases=bound.cases,
    )
    if bound.published_median_abs_error_pct is not None:
        text += _fill(
            lang,
            "text",
            "accuracy_published",
            cases=bound.published_cases,
            median=f"{bound.published_median_abs_error_pct:.1f}",
        )
    return text


def _fmt_small(n_bytes: int) -> str:
    """Per-token sizes: '128.00 KiB' / '0.50 MiB' style (binary units)."""
    if n_bytes >= 1024**2:
        return f"{n_bytes / 1024**2:.2f} MiB"
    return f"{n_bytes / 1024:.2f} KiB"


def _component_lines(c: Component, label: str, language: str) -> list[str]:
    out = [
        _fill(
            language,
            "text",
            "component",
            label=label,
            gib=fmt_gib(c.bytes),
            bytes=fmt_bytes(c.bytes),
        )
    ]
    if c.formula or c.substituted:
        out.append(
            _fill(
                language,
                "text",
                "component_formula",
                formula=c.formula,
                substituted=c.substituted,
            )
        )
    if c.source:
        out.append(_fill(language, "text", "component_source", source=c.source))
    remark = component_note_text(c, language)
    if remark and _tpl(language, "text", "component_note"):
        out.append(_fill(language, "text", "component_note", note=remark))
    return out


def render_answer(estimate: Estimate, language: str) -> str:
    """The full templated answer for one estimate."""
    return "\n".join(render_answer_lines(estimate, language)).rstrip() + "\n"


# --- errors ------------------------------------------------------------------------------------------


def render_error(error: ScenarioError | dict[str, Any], language: str) -> str:
    """A clear, one-paragraph message: what was wrong, near names, what is accepted. Never a traceback."""
    lang = _lang(language)
    data = error.to_dict() if isinstance(error, ScenarioError) else dict(error)
    field = str(data.get("field") or "")
    if field == "model" and not data.get("message"):
        return _tpl(lang, "error", "missing_model")
    fields = _labels(lang, "field")
    message = str(data.get("message") or data.get("error") or "")
    accepted = data.get("accepted")
    code = data.get("code")
    with_field = bool(field)
    if code and lang != "en":  # the estimator's English message, said in the user's language
        table = load_toml(lang, "answer.toml").get("error_code", {})
        values = {k: str(v) for k, v in dict(data.get("values") or {}).items()}
        if code in table:
            message = Template(str(table[code])).safe_substitute(values)
            accepted = Template(str(table.get(f"{code}_accepted", ""))).safe_substitute(values) or None
            with_field = with_field and not str(code).startswith(("unknown_", "tp_", "pp_"))
    if with_field:
        message = _fill(lang, "error", "field_message", field=fields.get(field, field), message=message)
    parts = [_fill(lang, "error", "title", message=message)]
    suggestions = data.get("suggestions") or []
    if suggestions:
        parts.append(_fill(lang, "error", "suggestions", suggestions=", ".join(map(str, suggestions))))
    if accepted:
        parts.append(_fill(lang, "error", "accepted", accepted=accepted))
    return " ".join(parts)


def render_missing_model(language: str) -> str:
    return _tpl(_lang(language), "error", "missing_model")


# --- concepts, help, lists ----------------------------------------------------------------------------


def concept_values(estimate: Estimate | None, prefix: str = "") -> dict[str, str]:
    """Placeholders a knowledge-base text may cite from an example estimate."""
    if estimate is None:
        return {}
    values: dict[str, str] = {
        f"{prefix}model": estimate.scenario.model or fmt_count(estimate.params_total),
        f"{prefix}params": fmt_count(estimate.params_total),
        f"{prefix}params_active": fmt_count(estimate.params_active_per_token),
        f"{prefix}gpu": estimate.gpu.name,
        f"{prefix}total": fmt_gib(estimate.per_gpu.total_bytes),
        f"{prefix}tensor_peak": fmt_gib(estimate.per_gpu.tensor_peak_bytes),
    }
    for c in estimate.components:
        values.setdefault(f"{prefix}c_{c.name}", fmt_gib(c.bytes))
        values.setdefault(f"{prefix}c_{c.name}_gb", fmt_gb(c.bytes))
    states = [c for c in estimate.components if c.name in MODEL_STATE_COMPONENTS]
    if states:
        total_states = sum(c.bytes for c in states)
        values[f"{prefix}model_states"] = fmt_gib(total_states)
        values[f"{prefix}model_states_gb"] = fmt_gb(total_states)
        if estimate.params_trainable:
            values[f"{prefix}bytes_per_param"] = f"{total_states / estimate.params_trainable:.1f}"
    if estimate.serving is not None:
        sv = estimate.serving
        values[f"{prefix}kv_per_token"] = _fmt_small(sv.kv_bytes_per_token)
        values[f"{prefix}reserved"] = fmt_gib(sv.reserved_bytes)
        values[f"{prefix}kv_pool"] = fmt_gib(sv.kv_cache_bytes)
        values[f"{prefix}max_kv_tokens"] = f"{sv.max_kv_tokens:,}"
        values[f"{prefix}max_seqs"] = f"{sv.max_concurrent_sequences:,}"
        values[f"{prefix}utilization"] = f"{sv.gpu_memory_utilization:.2f}"
    values[f"{prefix}gpu_memory"] = fmt_gib(estimate.gpu.memory_bytes)
    values[f"{prefix}fits"] = _tpl("en", "text", "fits_word" if estimate.fits else "no_fit_word")
    return values


# Model states: what the 16x rule counts (ZeRO paper sec. 3.1). Names as the estimator emits them.
MODEL_STATE_COMPONENTS = frozenset({"weights", "gradients", "optimizer_states", "master_weights"})


def _figure_block(estimate: Estimate, language: str, title_key: str, example: str) -> list[str]:
    lines = [_fill(language, "concept", title_key, example=example)]
    for c in estimate.components:
        lines.append(
            _fill(language, "concept", "figure", label=component_label(c, language), gib=fmt_gib(c.bytes))
        )
    lines.append(
        _fill(
            language,
            "concept",
            "total",
            total=fmt_gib(estimate.per_gpu.total_bytes),
            verdict=_tpl(language, "text", "fits_word" if estimate.fits else "no_fit_word"),
            num_gpus=estimate.scenario.num_gpus or 1,
            gpu=estimate.gpu.name,
        )
    )
    return lines


def describe_scenario(stated: dict[str, Any], language: str) -> str:
    """'model = llama-2-7b, task = LoRA fine-tuning, ...' in the answer's language."""
    fields = _labels(language, "field")
    parts = []
    for key, value in stated.items():
        shown = task_label(value, language) if key == "task" else fmt_value(value, language)
        parts.append(f"{fields.get(key, key)} = {shown}")
    return ", ".join(parts) if language == "en" else "，".join(parts)


def render_scenario_line(stated: dict[str, Any], language: str, followup: bool = False) -> str:
    """The first line of an estimate answer: what was understood (streamed before the estimator runs)."""
    lang = _lang(language)
    return _fill(
        lang,
        "text",
        "scenario_followup" if followup else "scenario_stated",
        stated=describe_scenario(stated, lang),
    )


def render_concept_lines(
    body: str,
    language: str,
    example: Estimate | None = None,
    compare: Estimate | None = None,
    example_stated: dict[str, Any] | None = None,
    compare_stated: dict[str, Any] | None = None,
) -> list[str]:
    """A knowledge-base text with the example's tool figures filled in, then the figures themselves."""
    lang = _lang(language)
    values = {**concept_values(example), **concept_values(compare, "cmp_")}
    text = Template(body).safe_substitute(values)
    text = _strip_unfilled(text)
    lines = text.rstrip().splitlines()
    if example is not None:
        lines += [
            "",
            *_figure_block(example, lang, "figures_title", describe_scenario(example_stated or {}, lang)),
        ]
    if compare is not None:
        lines += _figure_block(compare, lang, "compare_title", describe_scenario(compare_stated or {}, lang))
    return lines


def _strip_unfilled(text: str) -> str:
    return re.sub(r"\$\{[a-z_]+\}", _MISSING, text)


def render_concept(
    body: str, language: str, example: Estimate | None = None, compare: Estimate | None = None
) -> str:
    return "\n".join(render_concept_lines(body, language, example, compare)).rstrip() + "\n"


def render_help(kind: str, language: str) -> str:
    """'greeting' or 'unknown'."""
    return _tpl(_lang(language), "help", kind).rstrip() + "\n"


def render_gpu_list(gpus: list[Any], language: str) -> str:
    lang = _lang(language)
    lines = [_fill(lang, "help", "gpus_title", count=len(gpus))]
    for g in gpus:
        memory = getattr(g, "memory_bytes", None)
        lines.append(
            _fill(
                lang,
                "help",
                "gpu_item",
                id=g.id,
                name=getattr(g, "name", g.id),
                memory=fmt_gib(memory) if memory else "?",
            )
        )
    return "\n".join(lines) + "\n"


def render_model_list(models: list[Any], language: str) -> str:
    lang = _lang(language)
    lines = [_fill(lang, "help", "models_title", count=len(models))]
    for m in models:
        params = getattr(m, "params", None)
        lines.append(_fill(lang, "help", "model_item", id=m.id, params=fmt_count(params) if params else "?"))
    return "\n".join(lines) + "\n"


# --- panel texts for the web page (additive; the answer text above stays as it is) ---------------------


def display_panels(estimate: Estimate, language: str) -> Display:
    """The Estimate's panel texts in `language`, from the same templates and labels as the answer
    text: component labels, suggestion changes, assumption lines, verdict, notes, serving capacity.
    The web page shows these under the answer; the Estimate itself is not changed."""
    return Display.model_validate(display_texts(estimate, language))  # one call into pydantic-core


# `display_panels` as its JSON data (`model_dump(mode="json")`): the answer's texts and the `display` event
# are made from it, so an answer that is only rendered and sent never builds the model
PanelTexts = dict[str, Any]


def display_texts(estimate: Estimate, language: str) -> PanelTexts:
    """The data `display_panels` validates, which is its `model_dump(mode="json")`: every field of `Display`
    (and of its items) in the model's order, plain strings and lists (tests/test_sse_wire.py)."""
    lang = _lang(language)
    s = estimate.scenario
    fields = _labels(lang, "field")
    return {
        "language": lang,
        "verdict": _display_verdict(estimate, lang),
        "components": [
            {
                "name": c.name,
                "model_role": c.model_role,
                "label": component_label(c, lang),
                "formula": c.substituted or c.formula or "",
            }
            for c in estimate.components
        ],
        "suggestions": [
            {"change": change_text(sug, lang, s), "tradeoffs": suggestion_tradeoffs(sug, s, lang)}
            for sug in estimate.suggestions
        ],
        "assumptions": [
            {
                "field": a.field,
                "label": str(fields.get(a.field) or a.field),
                "value": fmt_value(a.value, lang),
                "reason": assumption_text(a, _lang(lang)),
            }
            for a in estimate.assumptions
        ],
        "notes": [note_text(n, lang) for n in estimate.notes],
        "serving": _display_serving(estimate, lang),
    }


def _display_verdict(estimate: Estimate, lang: str) -> str:
    """The answer's verdict sentence (templates [text] verdict_fits / verdict_no_fit)."""
    return _fill(
        lang,
        "text",
        "verdict_fits" if estimate.fits else "verdict_no_fit",
        total=fmt_gib(estimate.per_gpu.total_bytes),
        tensor_peak=fmt_gib(estimate.per_gpu.tensor_peak_bytes),
        phase=_phase(estimate.per_gpu.peak_phase, lang),
        gpu=estimate.gpu.name,
        gpu_memory=fmt_gib(estimate.gpu.memory_bytes),
        headroom=fmt_gib(estimate.headroom_bytes),
        short=fmt_gib(-estimate.headroom_bytes),
        margin=_margin(estimate.safety_margin),
    )


def _display_serving(estimate: Estimate, lang: str) -> list[str]:
    """The answer's serving-capacity lines without their list markers."""
    return [re.sub(r"^\s*-\s+", "", line) for line in _serving_lines(estimate, lang) if line]


def _serving_lines(estimate: Estimate, lang: str) -> list[str]:
    """vLLM-style serving capacity as the answer shows it (templates [text] serving_*)."""
    sv = estimate.serving
    if sv is None:
        return []
    seq_len = estimate.scenario.seq_len
    lines = [
        _fill(lang, "text", "serving_title", utilization=f"{sv.gpu_memory_utilization:.2f}"),
        _fill(
            lang,
            "text",
            "serving_reserved",
            reserved=fmt_gib(sv.reserved_bytes),
            kv=fmt_gib(sv.kv_cache_bytes),
        ),
        _fill(
            lang,
            "text",
            "serving_tokens",
            kv_per_token=_fmt_small(sv.kv_bytes_per_token),
            max_tokens=f"{sv.max_kv_tokens:,}",
        ),
        _fill(
            lang,
            "text",
            "serving_sequences",
            seq_len=f"{seq_len:,}" if seq_len else "?",
            max_seqs=f"{sv.max_concurrent_sequences:,}",
            max_context=f"{sv.max_context_at_batch_1:,}",
        ),
    ]
    if sv.max_model_len and sv.max_context_at_batch_1 >= sv.max_model_len:  # capped at the window
        lines.append(_fill(lang, "text", "serving_model_len", max_model_len=f"{sv.max_model_len:,}"))
        if sv.rope_scaling and sv.rope_scaled_context and sv.kv_context_at_batch_1:
            method, _, factor = sv.rope_scaling.partition(" x")
            lines.append(
                _fill(
                    lang,
                    "text",
                    "serving_rope_scaling",
                    method=method,
                    factor=factor,
                    tokens=f"{sv.rope_scaled_context:,}",
                    kv_context=f"{sv.kv_context_at_batch_1:,}",
                )
            )
    return lines
