"""What was asked, in words (prompts/<lang>/asked.toml): the summary's first line (the edge of an inverse
question, the winner of a comparison) and a comparison's side-by-side table and differences."""

from __future__ import annotations

from typing import Any

from service.agent import render
from service.agent.asked import Asked, EstimatedScenario
from service.agent.prompt_files import load_toml
from service.agent.suggestion_text import change_words
from tools.units import fmt_gib


def _t(lang: str, section: str, key: str) -> str:
    table = load_toml(render._lang(lang), "asked.toml").get(section, {})
    return str(table.get(key) or load_toml("en", "asked.toml").get(section, {}).get(key, ""))


def _fill(lang: str, section: str, key: str, **values: Any) -> str:
    text = _t(lang, section, key)
    for name, value in values.items():
        text = text.replace("${" + name + "}", str(value))
    return text


def _value(field: str | None, value: Any) -> str:
    if field == "params" and isinstance(value, int | float):
        return f"{value / 1e9:.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _field_value(field: str | None, job: EstimatedScenario | None) -> Any:
    if job is None:
        return None
    s = job.scenario
    name = {"concurrent_sequences": "batch_size"}.get(field or "", field or "")
    got = getattr(s, name, None)
    if got is None and name == "batch_size":
        return 1
    return got


def _total(job: EstimatedScenario | None) -> str:
    return fmt_gib(job.estimate.per_gpu.total_bytes) if job is not None else "?"


def edge_line(asked: Asked, lang: str) -> str:
    """The first line of an inverse question's answer: the edge, its total, and the step beyond."""
    field = asked.field or ""
    at, beyond = asked.at, asked.beyond
    if asked.value is None or at is None:
        est = beyond.estimate if beyond is not None else None
        return _fill(
            lang,
            "lead",
            "none",
            what=_t(lang, "none_what", field),
            next=_value(field, _field_value(field, beyond)),
            next_total=_total(beyond),
            usable=fmt_gib(est.usable_bytes) if est else "?",
            gpu=est.gpu.name if est else "?",
        )
    if field == "num_gpus" and asked.value == 1:
        return _fill(
            lang, "lead", "num_gpus_one", gpu=at.estimate.gpu.name, how=_how(asked, lang), total=_total(at)
        )
    if beyond is None:
        return _fill(
            lang,
            "lead",
            "capped",
            what=_t(lang, "what", field),
            value=_value(field, asked.value) + _t(lang, "unit", field),
            cap=_cap(asked, lang),
            total=_total(at),
        )
    s = at.scenario
    est = at.estimate
    values = {
        "value": _value(field, asked.value),
        "next": _value(field, _field_value(field, beyond)),
        "total": _total(at),
        "next_total": _total(beyond),
        "seq_len": f"{est.scenario.seq_len or 0:,}",
        "batch": est.scenario.batch_size or 1,
        "task": render.task_label(est.scenario.task, lang),
        "gpus": f"{s.num_gpus or 1} x {est.gpu.name}",
        "gpu": est.gpu.name,
        "how": _how(asked, lang),
    }
    if field == "weight_dtype":
        bits = {f.name: f.bits_per_weight for f in asked.formats}
        values["bits"] = bits.get(str(asked.value), "?")
        values["next_bits"] = bits.get(str(values["next"]), "?")
    return _fill(lang, "lead", field, **values)


def _cap(asked: Asked, lang: str) -> str:
    est = asked.at.estimate if asked.at else None
    engine = (est.scenario.engine if est else None) or "transformers"
    window = est.serving.max_model_len if est and est.serving and est.serving.max_model_len else None
    if window is None and asked.at is not None:
        from tools.inverse import model_window

        window = model_window(asked.at.scenario)
    return _fill(lang, "cap", asked.capped_by or "search_limit", engine=engine, window=f"{window or 0:,}")


def _how(asked: Asked, lang: str) -> str:
    if asked.field != "num_gpus" or asked.fix is None or asked.as_configured is None:
        return ""
    return _fill(
        lang, "lead", "with_fix", fix=change_words(asked.fix, lang), as_configured=asked.as_configured
    )


def edge_detail(asked: Asked, lang: str) -> str:
    """The search in one sentence of the full answer: the edge, its total and the step beyond (or the cap)."""
    field = asked.field or ""
    at, beyond = asked.at, asked.beyond
    shown = at or beyond
    unit = _t(lang, "unit", field)
    values = {
        "what": _t(lang, "what", field),
        "value": _value(field, asked.value) + unit,
        "total": _total(at),
        "next": _value(field, _field_value(field, beyond)) + unit,
        "next_total": _total(beyond),
        "usable": fmt_gib(shown.estimate.usable_bytes) if shown else "?",
    }
    if asked.value is None or at is None:
        return _fill(lang, "detail", "none", **values)
    if beyond is None:
        return _fill(lang, "detail", "capped", cap=_cap(asked, lang), **values)
    return _fill(lang, "detail", "edge", **values)


def catalog_line(asked: Asked, lang: str) -> str | None:
    """For the largest model: the catalog models of the family just under and over the edge."""
    by = {o.label: o for o in asked.catalog}
    under, over = by.get("under"), by.get("over")
    if under is None and over is None:
        return None
    key = "both" if under and over else ("under" if under else "over")
    return _fill(
        lang,
        "catalog",
        key,
        under=under.estimate.scenario.model if under else "",
        over=over.estimate.scenario.model if over else "",
        under_total=fmt_gib(under.estimate.per_gpu.total_bytes) if under else "",
        over_total=fmt_gib(over.estimate.per_gpu.total_bytes) if over else "",
    )


def formats_line(asked: Asked, lang: str) -> str | None:
    if not asked.formats:
        return None
    fits, no = render._tpl(lang, "text", "fits_word"), render._tpl(lang, "text", "no_fit_word")
    items = [
        _fill(lang, "formats", "item", name=f.name, bits=f.bits_per_weight, verdict=fits if f.fits else no)
        for f in asked.formats
    ]
    return _fill(lang, "formats", "line", formats=", ".join(items))


def asked_lines(asked: Asked, lang: str) -> tuple[str, list[str]]:
    """(the summary's first line, the lines that open the full answer) for what was asked."""
    if asked.kind == "compare":
        from service.agent.compare_text import compare_lead, compare_table, difference_lines

        return compare_lead(asked, lang), [
            *compare_table(asked, lang),
            "",
            *difference_lines(asked, lang),
            "",
        ]
    extra = [edge_detail(asked, lang), catalog_line(asked, lang), formats_line(asked, lang)]
    return edge_line(asked, lang), [*(line for line in extra if line), ""]
