"""The chat page and the coach tab checked by axe-core (the npm package, installed by `make web-test-deps`
into .node/) in headless Chromium: no serious or critical violation, with an answer's workbench, phase chart
and comparison chart on the page; every what-if control reachable by keyboard and labelled."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.test_coach_browser import browser, served
from tests.test_web_browser import CHROMIUM

__all__ = ["browser", "served"]  # module fixtures shared with the coach's browser test

AXE = Path(__file__).resolve().parent.parent / ".node" / "node_modules" / "axe-core" / "axe.min.js"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing: apt-get install -y chromium"
    ),
    pytest.mark.skipif(
        not AXE.exists(),
        reason=f"{AXE} is missing: `make web-test-deps` (npm install --prefix .node axe-core)",
    ),
]

RUN_AXE = """
async () => {
  const result = await axe.run(document, { resultTypes: ['violations'] });
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
}
"""


def serious(page) -> list[dict]:  # type: ignore[no-untyped-def]
    page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN_AXE)


def test_no_serious_axe_violations_with_an_answer_and_in_the_coach(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, _db = served
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector('body[data-ready="true"][data-coach-ready="true"]')
    assert serious(page) == []  # the empty page
    page.fill("#question", "GRPO on Qwen2.5-7B with 8 H100s")
    page.press("#question", "Enter")
    page.wait_for_selector('.turn[data-done="true"] [data-chart=phases]', timeout=30_000)
    options = []
    for label, gpu in (("A100 40GB", "a100-40gb"), ("RTX 4090", "rtx-4090")):
        scenario = {"model": "llama-2-7b", "task": "lora", "gpu": gpu}
        options.append(
            {
                "label": label,
                "scenario": scenario,
                "estimate": httpx.post(url + "/v1/estimate", json=scenario).json(),
            }
        )
    page.evaluate(
        "asked => document.querySelector('.turn .card').append(window.VRAMwiseCharts.compare(asked))",
        {"kind": "compare", "options": options},
    )
    assert serious(page) == []  # an answer with its controls, phase chart and comparison

    # every control has a label and is reached by Tab
    controls = page.locator(".turn [data-field]")
    assert controls.count() >= 8
    labelled = controls.evaluate_all(
        "ns => ns.every(n => n.labels && n.labels.length === 1 && n.labels[0].textContent.trim())"
    )
    assert labelled
    controls.first.focus()
    reached = set()
    for _ in range(controls.count()):
        reached.add(page.evaluate("document.activeElement.dataset.field"))
        page.keyboard.press("Tab")
    assert reached == set(controls.evaluate_all("ns => ns.map(n => n.dataset.field)"))

    page.click("#lang-zh")  # the Chinese page, with its answer re-rendered
    page.wait_for_function(
        "document.querySelector('.turn .workbench legend').textContent.includes('如果改成')"
    )
    assert serious(page) == []
    page.click("#tab-coach")
    page.wait_for_selector("#coach-question[data-question-id]")
    assert serious(page) == []
    page.click("#coach-mode-interview")
    assert serious(page) == []
    context.close()
