"""The final Slack message of three real answers (fits, does not fit, serving) and a Chinese one, block by
block against Slack's limits, with the figures the estimator gives; long answers cut to fit; the
rendered example in docs/ is what the code renders today."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from service.agent.events import Answer
from service.slack import limits
from service.slack.blocks import answer_payload, fit, formulas_messages, markdown_block, text_payload
from service.slack.example import OUTPUT, offline_answer, render
from tests.slack_support import fits_word, shows
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "fits": (
        "Can I fine-tune llama-2-7b with QLoRA on one 4090?",
        dict(model="llama-2-7b", task="qlora", gpu="4090"),
        True,
    ),
    "does_not_fit": (
        "full fine-tune llama-2-7b on one 4090",
        dict(model="llama-2-7b", task="full_finetune", gpu="4090"),
        False,
    ),
    "serving": ("serve llama-2-7b on an L4", dict(model="llama-2-7b", task="inference", gpu="L4"), True),
    "chinese": (
        "在一张 4090 上全参微调 llama-2-7b 需要多少显存？",
        dict(model="llama-2-7b", task="full_finetune", gpu="4090"),
        False,
    ),
}


@pytest.fixture(scope="module")
def answers() -> dict[str, Answer]:
    async def all_answers() -> dict[str, Answer]:
        return {name: await offline_answer(q) for name, (q, _, _) in CASES.items()}

    return asyncio.run(all_answers())


def check_every_block(payload: dict[str, Any]) -> None:
    assert limits.violations(payload) == []
    blocks = payload["blocks"]
    assert 1 <= len(blocks) <= limits.MAX_BLOCKS
    assert sum(len(b["text"]) for b in blocks if b["type"] == "markdown") <= limits.MAX_MARKDOWN_CHARS
    for b in blocks:
        assert b["type"] in {"markdown", "section", "context", "table", "actions"}
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= limits.MAX_SECTION_TEXT
        if b["type"] == "context":
            assert 1 <= len(b["elements"]) <= limits.MAX_CONTEXT_ELEMENTS
            assert all(len(e["text"]) <= limits.MAX_CONTEXT_TEXT for e in b["elements"])
        if b["type"] == "table":
            assert len(b["rows"]) <= limits.MAX_TABLE_ROWS
            assert {len(r) for r in b["rows"]} == {3}
        if b["type"] == "actions":
            formulas, *what_ifs = b["elements"]  # "Show formulas", then the what-if buttons (whatif.py)
            assert formulas["action_id"] == "show_formulas"
            assert all(w["action_id"].startswith("what_if_") for w in what_ifs) and len(what_ifs) <= 3
            for button in b["elements"]:
                assert len(button["text"]["text"]) <= limits.MAX_BUTTON_TEXT
                assert len(button["value"]) <= limits.MAX_BUTTON_VALUE
    assert len(payload["text"]) <= limits.MAX_SECTION_TEXT


@pytest.mark.parametrize("name", list(CASES))
def test_final_message_fits_slack_and_carries_the_tools_figures(
    answers: dict[str, Answer], name: str
) -> None:
    _, scenario, fits = CASES[name]
    answer = answers[name]
    payload = answer_payload(answer, formulas_ref="0123456789abcdef0123456789abcdef")
    check_every_block(payload)
    est = estimate(Scenario(**scenario, num_gpus=1))
    assert est.fits is fits and answer.estimate is not None and answer.estimate.fits is fits
    total = fmt_gib(est.per_gpu.total_bytes)
    blocks = payload["blocks"]
    # verdict and per-GPU total first
    assert blocks[0]["type"] == "markdown" and shows(blocks[0]["text"], total)
    assert fits_word(blocks[0]["text"], fits, answer.language)
    # the component table: one row per component with the estimator's bytes, the total last
    (table,) = [b for b in blocks if b["type"] == "table"]
    rows = [[c["text"] for c in r] for r in table["rows"]]
    assert len(rows) == len(est.components) + 2
    assert [r[2] for r in rows[1:-1]] == [f"{c.bytes:,}" for c in est.components]
    assert [r[1] for r in rows[1:-1]] == [fmt_gib(c.bytes) for c in est.components]
    assert rows[-1][1:] == [total, f"{est.per_gpu.total_bytes:,}"]
    # the cheapest fixes (planner order), each with its own total
    if est.suggestions:
        fixes = next(
            b
            for b in blocks
            if b["type"] == "section" and fmt_gib(est.suggestions[0].total_bytes) in b["text"]["text"]
        )
        assert fixes["text"]["text"].count("•") == min(3, len(est.suggestions))
    # assumptions in a context block, the button last
    context = [b for b in blocks if b["type"] == "context"]
    assert context and len(context[-1]["elements"]) >= 2
    assert blocks[-1]["type"] == "actions" and blocks[-1]["elements"][0]["action_id"] == "show_formulas"
    if name == "serving":
        assert est.serving is not None
        serving = next(b for b in blocks if b["type"] == "section" and "KV" in b["text"]["text"])
        assert f"{est.serving.max_kv_tokens:,}" in serving["text"]["text"]
    # the formulas: every component's formula and source, each message inside the limits
    messages = formulas_messages(answer.estimate, answer.language)
    for message in messages:
        assert limits.violations(message) == []
    derivation = "\n".join(
        b.get("text", "") for m in messages for b in m["blocks"] if b["type"] == "markdown"
    )
    for c in est.components:
        assert c.source in derivation


def test_long_answers_are_cut_to_slacks_limits() -> None:
    long_text = "\n".join(f"- line {i}: " + "x" * 90 for i in range(400))  # ~40,000 characters
    payload = text_payload(long_text)
    check_every_block(payload)
    assert "shortened" in json.dumps(payload)
    many = fit([markdown_block(f"part {i}") for i in range(80)], "en")
    assert len(many) == limits.MAX_BLOCKS and limits.violations({"text": "t", "blocks": many}) == []
    answer = Answer(question="q", language="en", answer=long_text)
    check_every_block(answer_payload(answer))


def test_violations_catch_what_slack_refuses() -> None:
    bad = {
        "text": "x",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
        + [{"type": "markdown", "text": "y" * 6001}] * 2
        + [{"type": "table", "rows": [[{"type": "raw_text", "text": "a"}]] * 101}],
    }
    found = limits.violations(bad)
    assert any("markdown blocks hold 12002" in v for v in found)
    assert any("text > 3000" in v for v in found)
    assert any("101 rows" in v for v in found)


def test_docs_example_is_what_the_code_renders() -> None:
    assert OUTPUT == ROOT / "docs" / "slack-answer.json"
    assert OUTPUT.read_text(encoding="utf-8") == render(), "run: .venv/bin/python -m service.slack.example"
    check_every_block(json.loads(OUTPUT.read_text(encoding="utf-8")))
