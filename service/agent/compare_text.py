"""A comparison in words (prompts/<lang>/asked.toml [compare]): the winner first, a side-by-side table
(components x options, Markdown: the CLI, the OpenAI-compatible API and the web page show it as is), and
what each option changes against the first, by its largest component."""

from __future__ import annotations

from service.agent import render
from service.agent.asked import Asked, AskedOption
from service.agent.asked_text import _fill, _t
from tools.compare import Option, difference, rank_key
from tools.units import fmt_gib


def _option(o: AskedOption) -> Option:
    return Option(o.label, {}, o.scenario, o.estimate)


def option_label(o: AskedOption, lang: str) -> str:
    """The option's label in `lang` (prompts/<lang>/asked.toml [option]; model, card and format names as asked)."""
    return _t(lang, "option", o.label) or o.label


def _verdict(o: AskedOption, lang: str) -> str:
    return render._tpl(lang, "text", "fits_word" if o.estimate.fits else "no_fit_word")


def why_code(asked: Asked) -> str:
    """Which term of the winner order decided (tools/compare.py rank_key): the first where the winner beats
    the runner-up."""
    best = asked.winner or 0
    if not asked.options[best].estimate.fits:
        return "closest"
    reference = asked.options[0].estimate.scenario
    keys = [rank_key(_option(o), reference, asked.field) for o in asked.options]
    others = [k for i, k in enumerate(keys) if i != best]
    if not others:
        return "memory"
    runner = min(others)
    for mine, theirs in zip(keys[best], runner, strict=False):
        if mine != theirs:
            return str(mine[0])
    return "memory"


def compare_lead(asked: Asked, lang: str) -> str:
    """The first line: the winner, why, its total, and every other option's total and verdict."""
    best = asked.winner or 0
    win = asked.options[best]
    others = [
        _fill(
            lang,
            "compare",
            "other",
            label=option_label(o, lang),
            total=fmt_gib(o.estimate.per_gpu.total_bytes),
            verdict=_verdict(o, lang),
        )
        for i, o in enumerate(asked.options)
        if i != best
    ]
    return _fill(
        lang,
        "compare",
        "lead",
        winner=option_label(win, lang),
        why=_t(lang, "why", why_code(asked)),
        total=fmt_gib(win.estimate.per_gpu.total_bytes),
        gpu=win.estimate.gpu.name,
        others=_t(lang, "option", "joiner").join(others),
    )


def _labels(asked: Asked, lang: str) -> dict[str, str]:
    """Component name -> its label in `lang`, in the order they first appear over the options."""
    out: dict[str, str] = {}
    for o in asked.options:
        for c in o.estimate.components:
            if c.name not in out:  # the component's plain name: the options hold it in different formats
                out[c.name] = str(
                    render._labels(lang, "component").get(c.name) or render.component_label(c, lang)
                )
    return out


def compare_rows(asked: Asked, lang: str) -> list[list[str]]:
    """The side-by-side table as rows of cells: the header (component, each option's label), one row per
    component any option holds, the per-GPU total and the verdict (every channel draws these rows)."""
    labels = _labels(asked, lang)
    sums = []
    for o in asked.options:
        got: dict[str, int] = {}
        for c in o.estimate.components:
            got[c.name] = got.get(c.name, 0) + c.bytes
        sums.append(got)
    rows = [[_t(lang, "compare", "table_component"), *(option_label(o, lang) for o in asked.options)]]
    for name, label in labels.items():
        if any(s.get(name, 0) for s in sums):
            rows.append([label, *(fmt_gib(s.get(name, 0)) for s in sums)])
    total = _t(lang, "compare", "table_total").replace("**", "")
    rows.append([total, *(fmt_gib(o.estimate.per_gpu.total_bytes) for o in asked.options)])
    rows.append([_t(lang, "compare", "table_verdict"), *(_verdict(o, lang) for o in asked.options)])
    return rows


def compare_table(asked: Asked, lang: str) -> list[str]:
    """The Markdown table (the answer's text: the OpenAI-compatible API and the web page show it)."""
    rows = compare_rows(asked, lang)
    lines = [
        _t(lang, "compare", "heading"),
        "",
        "| " + " | ".join(rows[0]) + " |",
        "|" + "---|" * len(rows[0]),
    ]
    for i, row in enumerate(rows[1:], start=1):
        cells = [f"**{c}**" for c in row] if i == len(rows) - 2 else row  # the per-GPU total in bold
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def plain_table(asked: Asked, lang: str) -> list[str]:
    """The same rows as aligned plain text (the CLI), the first column left, the others right."""
    rows = compare_rows(asked, lang)

    def width(text: str) -> int:  # a CJK character takes two columns in a terminal
        return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)

    widths = [max(width(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [row[0] + " " * (widths[0] - width(row[0]))]
        cells += [" " * (widths[i] - width(c)) + c for i, c in enumerate(row[1:], start=1)]
        out.append("  ".join(cells).rstrip())
    return out


def difference_lines(asked: Asked, lang: str) -> list[str]:
    """What each option after the first changes against it: '{QLoRA} saves 17.30 GiB vs LoRA, mostly weights'."""
    labels = _labels(asked, lang)
    first = asked.options[0]
    out = []
    for o in asked.options[1:]:
        delta, part = difference(_option(first), _option(o))
        key = "same" if delta == 0 else ("saves" if delta < 0 else "costs")
        component = labels.get(part or "", part or "")
        out.append(
            _fill(
                lang,
                "compare",
                key,
                label=option_label(o, lang),
                base=option_label(first, lang),
                gib=fmt_gib(abs(delta)),
                component=component,
            )
        )
    return out
