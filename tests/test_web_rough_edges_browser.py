"""Rough edges the new-user test found on the page (issue 29, section 5), in headless Chromium: the coach's
Hint button is visible, answering again after a grade moves to the next question and grades it, the score
and topic are shown in the page's language, a restored conversation shows its breakdown collapsed."""

from __future__ import annotations

import os

import pytest

from tests.test_coach_browser import browser, expected_of, served
from tests.test_web_browser import CHROMIUM, OUTPUT

__all__ = ["browser", "served"]  # module fixtures shared with the coach's browser test

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing: apt-get install -y chromium"
    ),
]

CONTRAST = """
el => {
  const rgb = (s) => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  let bgNode = el, bg = getComputedStyle(el).backgroundColor;
  while (bg === 'rgba(0, 0, 0, 0)' && bgNode.parentElement) { bgNode = bgNode.parentElement; bg = getComputedStyle(bgNode).backgroundColor; }
  const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(bg))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}
"""


def test_hint_is_visible_and_a_second_answer_is_graded(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"][data-coach-ready="true"]')
    page.click("#tab-coach")
    page.wait_for_selector("#coach-question[data-question-id]")
    assert page.locator("#coach-hint").evaluate(CONTRAST) >= 4.5  # was white on a white page
    # the topic's title above the question, not its id
    topic = page.get_attribute("#coach-question", "data-topic")
    meta = page.locator(".coach-meta").text_content()
    assert (
        topic not in meta
        and meta.split(" · ")[0] == page.locator(f'#coach-topic option[value="{topic}"]').text_content()
    )

    asked = []
    for round_number in (1, 2):
        qid = page.get_attribute("#coach-question", "data-question-id")
        asked.append(qid)
        expected, _spec = expected_of(db, qid)
        if "bytes" in expected:
            answer = f"about {expected['bytes'] / 2**30:.2f} GiB"
        elif "fits" in expected:
            answer = "yes" if expected["fits"] else "no"
        elif "count" in expected:
            answer = str(expected["count"])
        else:
            answer = "I do not know"
        page.fill("#coach-answer", answer)
        page.press("#coach-answer", "Enter")
        page.wait_for_function(f"document.getElementById('coach-score').dataset.asked === '{round_number}'")
        result = page.locator("#coach-result").text_content()
        assert result.count("Correct") + result.count("Not quite") == 1  # one verdict, not two
        # answering again after the grade: the next question comes, and its answer is graded in turn
        page.press("#coach-answer", "Enter")
        page.wait_for_function(f"document.getElementById('coach-question').dataset.questionId !== '{qid}'")
    assert len(set(asked)) == 2
    assert page.locator("#coach-score").text_content().startswith("Score: ")
    page.click("#lang-zh")
    page.wait_for_function("document.getElementById('coach-score').textContent.startsWith('得分')")
    assert errors == []
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "web_coach_rough_edges.png"))
    context.close()


def test_concept_tables_and_wrapped_lines_render_as_prose(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, _db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"]')
    page.fill("#question", "What is ZeRO-3 and how does it differ from FSDP?")
    page.press("#question", "Enter")
    page.wait_for_selector('.turn[data-done="true"]', timeout=30_000)
    turn = page.locator(".turn").last
    table = turn.locator("table.md-table")
    assert table.count() == 1
    assert table.locator("thead th").all_text_contents() == [
        "stage",
        "what is sharded",
        "model states per GPU",
    ]
    assert table.locator("tbody tr").count() == 4
    assert "|---" not in turn.text_content()
    # "... plain data\nparallelism keeps ..." is one sentence: joined with a space, no line break
    first = turn.locator(".answer-text p").first
    assert "plain data parallelism keeps" in first.text_content()
    assert first.locator("br").count() == 0
    context.close()


def test_a_restored_conversation_shows_the_breakdown_collapsed(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, _db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"]')
    page.fill("#question", "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?")
    page.press("#question", "Enter")
    page.wait_for_selector('.turn[data-done="true"]', timeout=30_000)
    live = page.locator(".turn .answer-text").first.text_content()
    page.reload()
    page.wait_for_selector(".turn .verdict [data-figure=per_gpu_total]", timeout=30_000)
    turn = page.locator(".turn").last
    assert turn.locator("details.answer-detail").count() == 1
    assert turn.locator("details.answer-detail").get_attribute("open") is None  # collapsed
    shown = turn.locator(".answer-text").first.text_content()
    assert shown == live  # the same short part as when it was asked
    assert shown.count("Verdict:") == 1
    context.close()
