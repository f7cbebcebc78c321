"""The offline agent's answer to a message with a paste: what was read, the estimate of the job (the paste's
fields, then the sentence's), and for an error or log the diagnosis (asked.kind = diagnose).

Events: AskedEvent (asked + source), ScenarioEvent, TokenEvents, EstimateEvent, DoneEvent; bad input: one
ErrorEvent (malformed YAML/JSON with line and column, an unknown format with the accepted ones).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import ValidationError

from service.agent.asked import Asked, IgnoredKey, Source
from service.agent.base import ConversationState
from service.agent.events import (
    AgentEvent,
    Answer,
    AskedEvent,
    DoneEvent,
    ErrorEvent,
    EstimateEvent,
    Language,
    ScenarioEvent,
    TokenEvent,
)
from service.agent.paste.detect import read_paste
from service.agent.paste.diagnosis import diagnose
from service.agent.paste.reading import FORMATS, LOG_FORMATS, OVERRIDDEN, PasteError, Reading
from service.agent.paste.split import SplitMessage
from service.agent.paste.texts import error_text, reading_lines, text
from tools.errors import ScenarioError
from tools.result import Estimate
from tools.scenario import Scenario

SUBJECT_FIELDS = ("model", "params", "architecture")
PASTE_KEEPS = frozenset({"model", "params", "architecture", "task"})  # the job a paste names is the paste's
MAX_SUMMARY_LINES = 6


def combine(readings: list[Reading]) -> tuple[Reading, dict[str, Any], dict[str, int | list[int]]]:
    """The primary reading (the first config; else the first log), the fields of all (configs first) and the
    observed figures of the logs."""
    configs = [r for r in readings if r.format not in LOG_FORMATS]
    logs = [r for r in readings if r.format in LOG_FORMATS]
    primary = configs[0] if configs else readings[0]
    fields: dict[str, Any] = {}
    observed: dict[str, int | list[int]] = {}
    # a pasted DeepSpeed file says what a command's `--deepspeed ds_z3_offload.json` only hints by its name
    ordered = sorted(configs, key=lambda r: r.format != "deepspeed-json")
    for reading in [*ordered, *logs]:
        for key, value in reading.fields.items():
            if key in fields and fields[key] != value:
                _overruled(reading, key, "overridden_by_paste")
            fields.setdefault(key, value)
        observed.update(reading.observed)
        capacity = reading.observed.get("capacity_bytes")
        if "gpu" not in fields and isinstance(capacity, int) and capacity >= 1 << 30:
            # the card the error happened on, at the size it reports (a stated size the estimator takes)
            fields["gpu"] = f"{capacity >> 30}gb"
            reading.used["total capacity"] = "gpu"
            reading.assume("gpu_from_capacity", size=fields["gpu"])
    return primary, fields, observed


def _overruled(reading: Reading, field: str, why: str) -> None:
    """The keys of `reading` that gave `field`, now overruled: listed as not used, and why."""
    for key, named in list(reading.used.items()):
        if named == field:
            del reading.used[key]
            reading.ignore(key, why)


def _sentence_fields(sentence: str, language: Language) -> tuple[dict[str, Any], str | None]:
    if not sentence.strip():
        return {}, None
    from service.agent.offline.parser import parse_question

    parsed = parse_question(sentence, language)
    return (parsed.scenario if parsed.intent == "estimate" else {}), parsed.asks


def _apply_sentence(
    readings: list[Reading], fields: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The sentence's fields win over the paste's (the card, the batch, the length...), but not the job the
    paste names (its model and task: "my run died" is not an inference question); a pasted key it overrules
    is listed as not used."""
    applied: dict[str, Any] = {}
    for field, value in stated.items():
        if field in PASTE_KEEPS and field in fields:
            continue
        applied[field] = value
        if field in fields and fields[field] != value:
            for reading in readings:
                _overruled(reading, field, OVERRIDDEN)
        fields[field] = value
    return applied


def _source(readings: list[Reading], primary: Reading) -> Source:
    used: dict[str, str] = {}
    ignored: list[IgnoredKey] = []
    for reading in readings:
        used.update(reading.used)
        ignored += reading.ignored
    return Source(format=primary.format, used=used, ignored=ignored)


def paste_events(
    message: SplitMessage,
    question: str,
    state: ConversationState,
    language: Language,
    estimate_fn: Callable[..., Estimate],
    format_name: str | None = None,
) -> Iterator[AgentEvent]:
    if message.errors:
        yield _error(message.errors[0], language, format_name)
        return
    try:
        readings = [read_paste(paste, format_name) for paste in message.pastes]
    except PasteError as err:
        yield _error(err, language, format_name)
        return
    if not readings:
        yield _error(PasteError("unknown_format", "empty paste"), language, format_name)
        return
    primary, fields, observed = combine(readings)
    stated, asks = _sentence_fields(message.sentence, language)
    stated = _apply_sentence(readings, fields, stated)
    diagnosing = any(r.format in LOG_FORMATS for r in readings)
    # an error or log: diagnose; else the sentence's figure (the KV cache, ...) or does it fit
    asked = (
        Asked(kind="diagnose", observed=observed) if diagnosing else Asked(kind="figure" if asks else "fit")
    )
    source = _source(readings, primary)
    yield AskedEvent(asked=asked, source=source)
    lines: list[str] = []
    for reading in readings:
        lines += [*([""] if lines else []), *reading_lines(reading, fields, language)]
    if stated:
        lines.append(
            text(language, "text", "sentence", fields=", ".join(f"{k} = {v}" for k, v in stated.items()))
        )
    answer_fields = {
        "question": question,
        "language": language,
        "agent": "offline",
        "asked": asked,
        "source": source,
        "conversation_id": state.conversation_id,
    }
    if not any(field in fields for field in SUBJECT_FIELDS):
        diagnosis = _diagnosis_lines(readings, None, language)
        lines += [*([""] if diagnosis else []), *diagnosis, "", text(language, "text", "no_subject")]
        body = "\n".join(lines) + "\n"
        yield TokenEvent(text=body)
        summary = "\n".join(_diagnosis_lines(readings, None, language)[1 : MAX_SUMMARY_LINES + 1]) or lines[0]
        yield DoneEvent(answer=Answer(answer=body, summary=summary, **answer_fields))
        return
    yield from _estimate_events(
        readings, fields, lines, asks, language, estimate_fn, answer_fields, diagnosing
    )


def _estimate_events(
    readings: list[Reading],
    fields: dict[str, Any],
    lines: list[str],
    asks: str | None,
    language: Language,
    estimate_fn: Callable[..., Estimate],
    answer_fields: dict[str, Any],
    diagnosing: bool,
) -> Iterator[AgentEvent]:
    from service.agent.render import display_texts, render_answer_parts, render_error

    head = "\n".join(lines) + "\n\n"
    try:
        scenario = Scenario.model_validate(fields)
    except ValidationError as err:
        yield _validation_error(err, fields, language)
        return
    yield ScenarioEvent(scenario=scenario)
    yield TokenEvent(text=head)
    try:
        estimate = estimate_fn(scenario, plan=True)
    except ValidationError as err:
        yield _validation_error(err, fields, language)
        return
    except ScenarioError as err:
        if diagnosing:  # the log's own figures still answer: the diagnosis without our estimate
            diagnosis = _diagnosis_lines(readings, None, language)
            body = "\n".join([*diagnosis, "", render_error(err, language)]) + "\n"
            yield TokenEvent(text=body)
            short = "\n".join(diagnosis[1 : MAX_SUMMARY_LINES + 1])
            yield DoneEvent(answer=Answer(answer=head + body, summary=short, **answer_fields))
            return
        yield ErrorEvent(
            message=render_error(err, language),
            field=err.field,
            accepted=err.accepted,
            suggestions=err.suggestions,
            detail={"stated": fields, "language": language},
        )
        return
    display = display_texts(estimate, language)
    estimated = EstimateEvent(estimate=estimate)
    estimated._display = display
    yield estimated
    summary, detail = render_answer_parts(estimate, language, asks, display)
    diagnosis = _diagnosis_lines(readings, estimate, language)
    body = "\n".join([*summary, "", *diagnosis, "", *detail]) + "\n"
    yield TokenEvent(text=body)
    short = (diagnosis[1:] + summary)[:MAX_SUMMARY_LINES] if diagnosing else summary
    yield DoneEvent(
        answer=Answer(
            scenario=scenario,
            estimate=estimate,
            answer=head + body,
            summary="\n".join(short),
            **answer_fields,
        )
    )


def _diagnosis_lines(readings: list[Reading], estimate: Estimate | None, language: Language) -> list[str]:
    lines: list[str] = []
    levers: list[str] = []
    for reading in readings:
        for section, code, values in diagnose(reading, estimate):
            (levers if section == "lever" else lines).append(text(language, section, code, **values))
    if not lines and not levers:
        return []
    out = [text(language, "text", "diagnosis_head"), *lines]
    if levers:
        out += [text(language, "text", "levers_head"), *(f"- {lever}" for lever in levers)]
    return out


def _validation_error(err: ValidationError, fields: dict[str, Any], language: Language) -> ErrorEvent:
    from service.agent.render import render_error

    first = err.errors()[0] if err.errors() else {}
    field = ".".join(str(p) for p in first.get("loc", ())) or "scenario"
    said = f"{first.get('msg', 'invalid value')} (got {fields.get(field)!r})"
    message = render_error({"field": field, "message": said}, language)
    return ErrorEvent(message=message, field=field, detail={"stated": fields, "language": language})


def _error(err: PasteError, language: Language, format_name: str | None) -> ErrorEvent:
    return ErrorEvent(
        message=error_text(err, language, format_name),
        field="paste",
        accepted=", ".join(FORMATS),
        detail={"code": err.code, "line": err.line, "column": err.column, "language": language},
    )
