"""The summary's figures are the Estimate's (issue 24, "Must show"): over the whole golden corpus, in English
and Chinese, every GiB figure of the short summary (service/agent/summary.py) is the Estimate figure its line
names, the verdict word is the Estimate's `fits`, and no figure appears that the Estimate does not hold.

Line by line: the verdict's total is `per_gpu.total_bytes`, the card's memory `gpu.memory_bytes`, the headroom
`headroom_bytes` (or the shortfall `-headroom_bytes`); the biggest parts are the three largest components with
their bytes; the cheapest fix is the first fitting suggestion with its `total_bytes`; a focus line (the
figure asked for) is that component's bytes.
"""

from __future__ import annotations

import re

import pytest

from service.agent.summary import FOCUS_COMPONENTS, summary_lines
from tests.golden.make_corpus import read_corpus
from tools.result import Estimate
from tools.units import fmt_gib

GIB_FIGURE = re.compile(r"-?[\d,]+\.\d{2} GiB")
FITS_WORD = {"en": "Verdict: fits.", "zh": "结论：放得下。"}


def _estimates() -> list[Estimate]:
    return [Estimate.model_validate(row["estimate"]) for row in read_corpus() if "estimate" in row]


ESTIMATES = _estimates()


def _verdict_figures(est: Estimate) -> list[str]:
    """The verdict line's figures, in the template's order (prompts/<lang>/answer.toml [summary])."""
    total, card = fmt_gib(est.per_gpu.total_bytes), fmt_gib(est.gpu.memory_bytes)
    return [total, card, fmt_gib(est.headroom_bytes) if est.fits else fmt_gib(-est.headroom_bytes)]


def _biggest(est: Estimate, skip: str | None = None) -> list[str]:
    ranked = sorted((c for c in est.components if c.bytes > 0 and c.name != skip), key=lambda c: -c.bytes)
    return [fmt_gib(c.bytes) for c in ranked[:3]]


def _serving_figures(est: Estimate) -> set[str]:
    """The figures a serving engine's line may say: the card, the engine's reservation and its KV pool (and
    what is left of each), the weights, what llama.cpp leaves on the CPU."""
    serving, card = est.serving, est.gpu.memory_bytes
    assert serving is not None
    reserved, pool = serving.reserved_bytes or 0, serving.kv_cache_bytes or 0
    weights = sum(c.bytes for c in est.components if c.name == "weights")
    figures = [card, reserved, pool, reserved - pool, card - reserved, weights, serving.host_bytes or 0]
    # and what the engine's own notes state (e.g. vLLM's non-KV bytes: weights, profile run, context)
    noted = {
        v
        for note in est.notes
        for v in note.values.values()
        if isinstance(v, str) and GIB_FIGURE.fullmatch(v)
    }
    return {fmt_gib(n) for n in figures} | noted


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_summary_figure_is_the_estimates(language: str) -> None:
    assert len(ESTIMATES) > 1500
    for est in ESTIMATES:
        lines = summary_lines(est, language)
        where = f"{est.scenario.model} {est.scenario.task} on {est.gpu.id}: {lines}"
        verdict, biggest = lines[0], lines[1]
        assert (FITS_WORD[language] in verdict) == est.fits, where
        assert GIB_FIGURE.findall(verdict) == _verdict_figures(est), where
        assert GIB_FIGURE.findall(biggest) == _biggest(est), where
        fitting = [sg for sg in est.suggestions if sg.fits]
        engine = est.scenario.engine
        said = [line for line in lines[2:] if engine and line.lower().startswith(engine.lower())]
        for line in said:  # what the engine reserves, said beside the job's total (issue 24, section 2)
            assert set(GIB_FIGURE.findall(line)) <= _serving_figures(est), where
        fix = [line for line in lines[2:] if GIB_FIGURE.search(line) and line not in said]
        if not est.fits and fitting:
            assert GIB_FIGURE.findall(fix[-1]) == [fmt_gib(fitting[0].total_bytes)], where
        else:
            assert not fix, where


def test_a_focus_line_is_its_components_bytes() -> None:
    checked = 0
    for est in ESTIMATES[:400]:
        for focus in FOCUS_COMPONENTS:
            parts = [c.bytes for c in est.components if c.name == focus]
            if not parts:
                continue
            lines = summary_lines(est, "en", focus)
            assert GIB_FIGURE.findall(lines[1]) == [fmt_gib(sum(parts))]
            assert GIB_FIGURE.findall(lines[2]) == _biggest(est, skip=focus)
            checked += 1
    assert checked > 500
