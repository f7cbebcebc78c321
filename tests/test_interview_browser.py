"""The Coach tab's Interview mode in headless Chromium, English and Chinese: start an interview, a wrong
first answer and the interviewer's follow-up on the page, right answers to the end, the scorecard table
(the tool's figure, formula and grade per topic, two topics to study) and its Markdown export. The answers
are written from the stored question's estimator figure (read from the service's database)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.app import create_app
from tests.interview_support import right_answer, wrong_answer
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
    db = tmp_path_factory.mktemp("interviewweb") / "interview.sqlite3"
    with live_server(create_app(offline_settings(db, agent_processes=0))) as url:
        yield url, db


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def open_turn(db: Path, interview_id: str) -> tuple[dict, dict, int]:
    with sqlite3.connect(db) as conn:
        expected, spec, position = conn.execute(
            "SELECT expected, spec, position FROM coach_interview_turns"
            " WHERE interview_id = ? AND correct IS NULL",
            (interview_id,),
        ).fetchone()
    return json.loads(expected), json.loads(spec), position


@pytest.mark.parametrize("language", ["en", "zh"])
def test_interview_mode(browser, served, language: str) -> None:  # type: ignore[no-untyped-def]
    url, db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"][data-coach-ready="true"][data-interview-ready="true"]')
    if language == "zh":
        page.click("#lang-zh")
        page.wait_for_function("document.getElementById('coach-mode-interview').textContent === '模拟面试'")
    page.click("#tab-coach")
    page.click("#coach-mode-interview")
    assert page.locator("#quiz-panel").is_hidden() and page.locator("#interview-panel").is_visible()
    page.select_option("#interview-level", "1")
    page.click("#interview-start")
    page.wait_for_selector('#interview-question[data-step="1"]')
    interview_id = page.get_attribute("#interview-panel", "data-interview-id")
    assert ("先热个身" if language == "zh" else "Let's warm up") in page.locator(
        "#interview-question"
    ).text_content()

    # a wrong answer: the follow-up on the same topic, marked as one
    expected, spec, _ = open_turn(db, interview_id)
    page.fill("#interview-answer", wrong_answer(expected, spec, language))
    page.click("#interview-submit")
    page.wait_for_selector('#interview-question[data-step="2"][data-follow-up="true"]')
    assert page.locator('.interview-turn[data-correct="false"]').count() == 1
    assert ("追问" if language == "zh" else "Follow-up") in page.locator("#interview-question").text_content()

    # right answers to the end (Enter submits)
    while page.locator("#interview-scorecard").is_hidden():
        expected, spec, position = open_turn(db, interview_id)
        page.fill("#interview-answer", right_answer(expected, spec, language))
        page.press("#interview-answer", "Enter")
        page.wait_for_function("n => document.querySelectorAll('.interview-turn').length > n", arg=position)
        assert position < 20
    card = page.locator("#interview-scorecard")
    rows = card.locator("tbody tr")
    assert rows.count() == 10 and page.get_attribute("#interview-scorecard", "data-points") == "10"
    assert rows.nth(0).get_attribute("data-grade") == "partial"
    assert all(rows.nth(i).get_attribute("data-grade") == "right" for i in range(1, 10))
    assert page.get_attribute("#interview-scorecard", "data-level") == "senior"  # 9.5 of 10
    assert ("追问后答对" if language == "zh" else "right after follow-ups") in card.text_content()
    assert "2 x L x g x d x B" in card.text_content()  # the KV formula of the tool's figure
    assert card.locator("li[data-kb]").count() == 2
    href = page.get_attribute("#interview-export", "href")
    md = httpx.get(url + href)
    assert md.status_code == 200 and md.text.startswith("# ")
    assert ("## 评分卡" if language == "zh" else "## Scorecard") in md.text
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / f"web_interview_{language}.png"), full_page=True)
    turns = page.locator(".interview-turn").count()

    # viewable later: a reload shows the stored interview, its transcript and its scorecard
    page.reload()
    page.wait_for_selector('body[data-ready="true"][data-coach-ready="true"][data-interview-ready="true"]')
    page.click("#tab-coach")
    page.click("#coach-mode-interview")
    assert page.get_attribute("#interview-panel", "data-interview-id") == interview_id
    assert (
        page.locator(".interview-turn").count() == turns and page.locator("#interview-question").is_hidden()
    )
    assert page.locator("#interview-scorecard tbody tr").count() == 10
    assert page.get_attribute("#interview-scorecard", "data-level") == "senior"
    assert errors == []
    context.close()
