"""Block Kit messages from an Answer: pure functions, no Slack calls.

Every text and figure comes from the answer renderer (service/agent/render.py: the same templates,
labels and `tools.units` formatting as the web page and the CLI), so a Slack answer shows the same
per-GPU total, GiB with two decimals, as every other channel. This module only arranges them:

1. the summary (model, task, GPUs; the verdict with the per-GPU total; fewest GPUs) in a markdown block;
2. a table of the components (label, GiB, bytes) with the per-GPU total as its last row;
3. the cheapest fixes (the planner's first suggestions, each with its own total);
4. serving capacity (inference);
5. notices (e.g. the LLM fallback) and the assumptions in context blocks;
6. a "Show formulas" button: its action posts the full cited derivation (`formulas_messages`).

`fit` keeps every message inside Slack's limits (service/slack/limits.py).
"""

from __future__ import annotations

import re
from string import Template
from typing import Any

from service.agent.events import Answer, Display
from service.agent.prompt_files import load_toml
from service.agent.render import display_panels, fmt_bytes, gpus_text, render_answer, render_answer_lines
from service.slack import limits
from tools.result import Estimate
from tools.units import fmt_gib

SHOW_FORMULAS = "show_formulas"  # action_id of the button
MAX_FIXES = 3
MAX_ASSUMPTIONS = limits.MAX_CONTEXT_ELEMENTS - 1  # the first element is the lead ("Assumed:")
FORMULAS_CHARS = 11_000  # markdown per formulas message (limit 12,000 with the title)
ELLIPSIS = "…"

Block = dict[str, Any]


def _lang(language: str | None) -> str:
    return language if language in ("en", "zh") else "en"


def slack_text(language: str, key: str, **values: Any) -> str:
    """A text of prompts/<lang>/slack.toml [text], filled."""
    lang = _lang(language)
    table = load_toml(lang, "slack.toml").get("text", {})
    raw = table.get(key) or load_toml("en", "slack.toml").get("text", {}).get(key, "")
    return Template(str(raw)).safe_substitute({k: str(v) for k, v in values.items()})


def slack_section(language: str, section: str) -> dict[str, Any]:
    return dict(load_toml(_lang(language), "slack.toml").get(section, {}))


def mrkdwn(markdown: str) -> str:
    """CommonMark emphasis as Slack mrkdwn: **bold** -> *bold* (code spans and the rest left as they are)."""
    return re.sub(r"\*\*(.+?)\*\*", r"*\1*", markdown)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def markdown_block(text: str) -> Block:
    return {"type": "markdown", "text": text}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, limits.MAX_SECTION_TEXT)}}


def context(texts: list[str]) -> Block:
    elements = [{"type": "mrkdwn", "text": _clip(t, limits.MAX_CONTEXT_TEXT)} for t in texts if t]
    if len(elements) > limits.MAX_CONTEXT_ELEMENTS:  # the rest joined into the last element
        rest = " · ".join(e["text"] for e in elements[limits.MAX_CONTEXT_ELEMENTS - 1 :])
        elements = [
            *elements[: limits.MAX_CONTEXT_ELEMENTS - 1],
            {"type": "mrkdwn", "text": _clip(rest, limits.MAX_CONTEXT_TEXT)},
        ]
    return {"type": "context", "elements": elements}


# ---- the parts of an estimate answer --------------------------------------------------------------


def estimate_summary(estimate: Estimate, language: str) -> str:
    """The head of the templated answer: header, verdict with the per-GPU total, fewest GPUs, GPU note,
    parameters (render_answer_lines up to the components, which the table shows)."""
    lines = render_answer_lines(estimate, language)
    head: list[str] = []
    blank_lines = 0
    for line in lines:
        if not line.strip():
            blank_lines += 1
            if blank_lines == 2:  # the second blank line opens the components list
                break
            continue
        head.append(line)
    return "\n\n".join(head)


def summary_text(answer: Answer) -> str:
    """The short part of an answer: `Answer.summary` when the agent gives one, else the estimate's head,
    else the answer's first paragraph."""
    given = getattr(answer, "summary", None)
    if given:
        return str(given).strip()
    if answer.estimate is not None:
        return estimate_summary(answer.estimate, answer.language)
    return answer.answer.strip().split("\n\n")[0]


def _cell(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": text or " "}


def component_table(estimate: Estimate, display: Display, language: str) -> Block:
    rows = [
        [
            _cell(slack_text(language, "table_component")),
            _cell(slack_text(language, "table_gib")),
            _cell(slack_text(language, "table_bytes")),
        ]
    ]
    labelled = list(zip(estimate.components, display.components, strict=True))
    room = limits.MAX_TABLE_ROWS - 2  # the header row and the total row
    for component, shown in labelled[:room]:
        rows.append([_cell(shown.label), _cell(fmt_gib(component.bytes)), _cell(fmt_bytes(component.bytes))])
    if len(labelled) > room:  # never in practice (an estimate has ~15 components); kept inside the limit
        rows[-1] = [_cell(ELLIPSIS), _cell(""), _cell("")]
    total = estimate.per_gpu.total_bytes
    rows.append([_cell(slack_text(language, "table_total")), _cell(fmt_gib(total)), _cell(fmt_bytes(total))])
    return {
        "type": "table",
        "column_settings": [{"align": "left"}, {"align": "right"}, {"align": "right"}],
        "rows": rows,
    }


def fixes_text(estimate: Estimate, display: Display, language: str) -> str:
    answer_words = load_toml(_lang(language), "answer.toml").get("text", {})
    lines = [slack_text(language, "fixes_title_fits" if estimate.fits else "fixes_title")]
    for suggestion, shown in list(zip(estimate.suggestions, display.suggestions, strict=True))[:MAX_FIXES]:
        lines.append(
            slack_text(
                language,
                "fix",
                change=shown.change,
                total=fmt_gib(suggestion.total_bytes),
                gpus=gpus_text(suggestion.num_gpus, language),
                verdict=answer_words.get("fits_word" if suggestion.fits else "no_fit_word", ""),
                tradeoffs=shown.tradeoffs,
            )
        )
    return "\n".join(lines)


def assumption_texts(display: Display, language: str) -> list[str]:
    texts = [
        slack_text(language, "assumption", label=a.label, value=a.value, reason=a.reason)
        for a in display.assumptions
    ]
    return [mrkdwn(t) for t in [*texts, *display.notes]]


def formulas_button(ref: str, language: str, more: list[Block] | None = None) -> Block:
    """The "Show formulas" button, then `more` buttons (the what-if ones) in the same actions block."""
    return {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "action_id": SHOW_FORMULAS,
                "text": {
                    "type": "plain_text",
                    "text": _clip(slack_text(language, "show_formulas"), limits.MAX_BUTTON_TEXT),
                },
                "value": ref[: limits.MAX_BUTTON_VALUE],
            },
            *(more or []),
        ],
    }


# ---- whole messages -------------------------------------------------------------------------------


def answer_blocks(
    answer: Answer, *, notices: list[str] | None = None, formulas_ref: str | None = None
) -> list[Block]:
    """The final message of an answer, inside Slack's limits."""
    language = _lang(answer.language)
    blocks: list[Block] = []
    notice_texts = [slack_text(language, "notice", message=n) for n in notices or []]
    estimate = answer.estimate
    if estimate is None:
        blocks += [
            markdown_block(part) for part in _split(answer.answer.strip() or " ", limits.MAX_MARKDOWN_CHARS)
        ]
        if notice_texts:
            blocks.append(context(notice_texts))
        return fit(blocks, language)
    display = display_panels(estimate, language)
    blocks.append(markdown_block(summary_text(answer)))
    if notice_texts:
        blocks.append(context(notice_texts))
    if answer.asked is not None and answer.asked.kind == "compare":  # the options side by side instead
        from service.slack.compare_block import compare_table_block

        blocks.append(compare_table_block(answer.asked, language))
    else:
        blocks.append(component_table(estimate, display, language))
    if estimate.suggestions:
        blocks.append(section(fixes_text(estimate, display, language)))
    if display.serving:
        lines = [display.serving[0], *(f"• {line}" for line in display.serving[1:])]
        blocks.append(section(mrkdwn("\n".join(lines))))
    assumptions = assumption_texts(display, language)
    if assumptions:
        blocks.append(context([slack_text(language, "assumptions_lead"), *assumptions]))
    if formulas_ref:
        from service.slack.whatif import what_if_buttons

        blocks.append(
            formulas_button(formulas_ref, language, what_if_buttons(estimate, formulas_ref, language))
        )
    return fit(blocks, language)


def answer_payload(answer: Answer, **kwargs: Any) -> dict[str, Any]:
    """{"text", "blocks"}: `text` is the notification (and fallback) text: the summary."""
    text = _clip(mrkdwn(summary_text(answer)), limits.MAX_SECTION_TEXT)
    return {"text": text, "blocks": answer_blocks(answer, **kwargs)}


def text_payload(markdown: str) -> dict[str, Any]:
    """A plain text answer (help, errors, notices) as a message."""
    return {
        "text": _clip(mrkdwn(markdown), limits.MAX_SECTION_TEXT),
        "blocks": fit([markdown_block(markdown)], "en"),
    }


def formulas_messages(estimate: Estimate, language: str) -> list[dict[str, Any]]:
    """The full cited derivation (the templated answer: every component's formula, substitution and
    source), as one or more messages, each inside the limits."""
    language = _lang(language)
    what = estimate.scenario.model or estimate.gpu.name
    parts = _split(render_answer(estimate, language), FORMULAS_CHARS)
    messages = []
    for i, part in enumerate(parts):
        title = slack_text(language, "formulas_title", what=what)
        if i:
            title += " " + slack_text(language, "formulas_more")
        messages.append(
            {
                "text": _clip(mrkdwn(title), limits.MAX_SECTION_TEXT),
                "blocks": [section(title), markdown_block(part)],
            }
        )
    return messages


def _split(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at line ends where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > limit:  # one very long line: cut it
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        if len(current) + len(line) > limit:
            pieces.append(current)
            current = ""
        current += line
    if current.strip() or not pieces:
        pieces.append(current)
    return [p.rstrip("\n") or " " for p in pieces]


def fit(blocks: list[Block], language: str) -> list[Block]:
    """Blocks inside Slack's message limits: at most 50 blocks, 12,000 markdown characters, one table."""
    out: list[Block] = []
    markdown_left = limits.MAX_MARKDOWN_CHARS
    tables = 0
    truncated = False
    for b in blocks:
        if b.get("type") == "table":
            if tables >= limits.MAX_TABLES:
                truncated = True
                continue
            tables += 1
        if b.get("type") == "markdown":
            text = str(b["text"])
            if len(text) > markdown_left:
                truncated = True
                text = _clip(text, markdown_left) if markdown_left > 200 else ""
            if not text.strip():
                continue
            markdown_left -= len(text)
            b = {**b, "text": text}
        out.append(b)
    if len(out) > limits.MAX_BLOCKS:
        truncated = True
        out = out[: limits.MAX_BLOCKS - 1]
    if truncated:
        out.append(context([slack_text(language, "truncated")]))
    return out
