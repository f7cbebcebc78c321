"""The Coach tab in headless Chromium: a question, a wrong answer, the graded explanation with the
breakdown chart, a right answer, the score; in English and Chinese. The answers are written from the
stored question's estimator figure (read from the service's database by question id)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.app import create_app
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tests.test_web_browser import CHROMIUM, CHROMIUM_ARGS, OUTPUT

__all__ = ["reset_sse_exit_flag"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing: apt-get install -y chromium"
    ),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("coachweb") / "coach.sqlite3"
    with live_server(create_app(offline_settings(db, agent_processes=0))) as url:
        yield url, db


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def expected_of(db: Path, question_id: str) -> tuple[dict, dict]:
    with sqlite3.connect(db) as conn:
        expected, spec = conn.execute(
            "SELECT expected, spec FROM coach_questions WHERE id = ?", (question_id,)
        ).fetchone()
    return json.loads(expected), json.loads(spec)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_coach_tab(browser, served, language: str) -> None:  # type: ignore[no-untyped-def]
    url, db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"][data-coach-ready="true"]')
    if language == "zh":
        page.click("#lang-zh")
        page.wait_for_function("document.getElementById('tab-coach').textContent === '面试教练'")
    page.click("#tab-coach")
    page.wait_for_selector("#coach-question[data-question-id]")  # an adaptive first question
    assert page.locator(".layout").is_hidden()
    first = page.get_attribute("#coach-question", "data-question-id")
    page.select_option("#coach-topic", "weights_precision")
    page.click("#coach-next")
    # the next question, not the first one (which may be of the same topic)
    page.wait_for_function(
        "q => { const e = document.getElementById('coach-question');"
        " return e.dataset.topic === 'weights_precision' && e.dataset.questionId !== q; }",
        arg=first,
    )

    qid = page.get_attribute("#coach-question", "data-question-id")
    expected, _spec = expected_of(db, qid)
    text = page.locator("#coach-question").text_content()
    assert ("权重" if language == "zh" else "weights") in text
    b = expected["bytes"]

    # a wrong answer: graded, with the expected figure, the breakdown and its chart
    page.fill("#coach-answer", f"{3 * b / 10**9:.1f} GB")
    page.click("#coach-submit")
    page.wait_for_selector('#coach-result[data-correct="false"]')
    result = page.locator("#coach-result")
    assert f"{b / 2**30:.2f} GiB" in result.text_content()
    assert (
        "估算器是这样算的" if language == "zh" else "How the estimator gets there"
    ) in result.text_content()
    rects = result.locator("svg.coach-chart rect.component")
    assert (
        rects.count() >= 1
        and sum(int(rects.nth(i).get_attribute("data-bytes")) for i in range(rects.count())) == b
    )
    assert page.get_attribute("#coach-score", "data-asked") == "1"
    assert page.get_attribute("#coach-score", "data-correct") == "0"

    # a hint, then a right answer to the next question of the same topic
    page.click("#coach-next")
    page.wait_for_function(f"document.getElementById('coach-question').dataset.questionId !== '{qid}'")
    qid2 = page.get_attribute("#coach-question", "data-question-id")
    page.click("#coach-hint")
    page.wait_for_selector('#coach-result[data-correct="none"]')
    assert ("提示：" if language == "zh" else "Hint: ") in page.locator("#coach-result").text_content()
    expected2, _ = expected_of(db, qid2)
    right = (
        f"大概 {expected2['bytes'] / 10**9:.2f} GB"
        if language == "zh"
        else f"about {expected2['bytes'] / 2**30:.2f} GiB"
    )
    page.fill("#coach-answer", right)
    page.press("#coach-answer", "Enter")
    page.wait_for_selector('#coach-result[data-correct="true"]')
    assert page.get_attribute("#coach-score", "data-correct") == "1"
    score = page.locator("#coach-score").text_content()
    assert score == ("得分：1/2" if language == "zh" else "Score: 1/2")
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / f"web_coach_{language}.png"), full_page=True)
    assert errors == []
    context.close()
