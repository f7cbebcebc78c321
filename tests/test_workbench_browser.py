"""The answer workbench in headless Chromium (Playwright): what-if controls recompute the figure through
POST /v1/estimate without a new chat turn, bad values show the API's error beside the control, the phase
chart of a training, an inference and a GRPO answer, and a comparison drawn as bars."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.app import create_app
from tests.service_support import GIB, live_server, offline_settings, reset_sse_exit_flag
from tests.test_web_browser import CHROMIUM, OUTPUT, ask, browser
from tools.estimator import estimate
from tools.scenario import Scenario

__all__ = ["browser", "reset_sse_exit_flag"]  # fixtures (the browser: tests/test_web_browser.py)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing: apt-get install -y chromium"
    ),
]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("workbench") / "conversations.sqlite3"
    with live_server(create_app(offline_settings(db))) as url:
        yield url


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.errors = errors
    yield pg
    assert not errors, errors
    context.close()


def open_page(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base_url + "/")
    page.wait_for_selector('body[data-ready="true"]')


def shown_scenario(turn) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(turn.locator(".scenario-json").text_content())


def figure(turn) -> str:  # type: ignore[no-untyped-def]
    return turn.locator("[data-figure=per_gpu_total]").text_content()


def test_a_control_recomputes_the_figure_without_a_new_turn(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    open_page(page, base_url)
    ask(page, "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?", 1)
    turn = page.locator(".turn").last
    asked = shown_scenario(turn)
    before = estimate(Scenario.model_validate(asked)).per_gpu.total_bytes
    assert figure(turn) == f"{before / GIB:.2f} GiB"
    assert turn.locator("[data-field=batch_size]").count() == 1
    assert turn.locator("[data-field=lora_rank]").count() == 1  # a LoRA answer shows its rank
    assert turn.locator("[data-field=engine]").count() == 0  # ... and no serving engine

    chat_posts: list[str] = []
    page.on("request", lambda r: chat_posts.append(r.url) if r.url.endswith("/v1/chat") else None)
    control = turn.locator("[data-field=batch_size]")
    control.fill("4")
    control.press("Enter")
    edited = {**asked, "batch_size": 4}
    expected = httpx.post(base_url + "/v1/estimate", json=edited).json()["per_gpu"]["total_bytes"]
    assert expected != before  # the edit moves the figure
    page.wait_for_function(
        "want => document.querySelector('.turn [data-figure=per_gpu_total]').textContent === want",
        arg=f"{expected / GIB:.2f} GiB",
    )
    turn = page.locator(".turn").last
    assert page.locator("[data-role=user-message]").count() == 1 and chat_posts == []  # no new chat turn
    assert int(turn.locator(".verdict").get_attribute("data-total-bytes")) == expected
    assert shown_scenario(turn)["batch_size"] == 4
    assert f"{expected / GIB:.2f} GiB" in turn.locator("[data-whatif-summary]").text_content()
    assert page.evaluate("document.activeElement.dataset.field") == "batch_size"  # focus stays

    # a select: the task, and a bad value shows the API's own error text beside the control
    turn.locator("[data-field=gpu]").fill("rtx-9090")
    turn.locator("[data-field=gpu]").press("Enter")
    page.wait_for_selector(".turn .field-error")
    error = httpx.post(base_url + "/v1/estimate", json={**edited, "gpu": "rtx-9090"}).json()["error"]
    turn = page.locator(".turn").last
    assert turn.locator(".field-error").text_content() == error
    assert turn.locator("[data-field=gpu]").get_attribute("aria-invalid") == "true"
    assert int(turn.locator(".verdict").get_attribute("data-total-bytes")) == expected  # unchanged

    # back to the answer's scenario: the figure as answered, no edit note
    page.locator(".turn").last.locator(".wb-reset").click()
    page.wait_for_function(
        "want => document.querySelector('.turn [data-figure=per_gpu_total]').textContent === want",
        arg=f"{before / GIB:.2f} GiB",
    )
    assert page.locator(".turn [data-whatif-summary]").count() == 0
    turn = page.locator(".turn").last
    turn.locator("[data-field=batch_size]").fill("4")
    turn.locator("[data-field=batch_size]").press("Enter")
    page.wait_for_selector(".turn [data-whatif-summary]")

    # "Ask about this": the edited scenario becomes a follow-up chat turn
    turn.locator("[data-field=gpu]").fill("a100-80gb")
    turn.locator("[data-field=gpu]").press("Enter")
    page.wait_for_function("() => !document.querySelector('.turn .field-error')")
    page.locator(".turn").last.locator("[data-action=ask-about]").click()
    page.wait_for_selector('.turn:nth-of-type(2)[data-done="true"]', timeout=30_000)
    follow = shown_scenario(page.locator(".turn").last)
    assert (follow["model"], follow["task"], follow["batch_size"]) == ("llama-2-7b", "lora", 4)
    assert "a100" in follow["gpu"]
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "web_workbench.png"), full_page=True)


PHASES = [
    (
        "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?",
        ["end_of_forward", "backward", "optimizer_step"],
    ),
    ("Llama-2-7B inference on one A100 80GB, batch 4, 4096 tokens", ["prefill", "decode"]),
    ("GRPO on Qwen2.5-7B with 8 H100s", ["rollout", "score_reference", "actor_update"]),
]


@pytest.mark.parametrize(("question", "phase_names"), PHASES)
def test_the_phase_chart_draws_every_phase_and_marks_the_peak(
    page, base_url: str, question, phase_names
) -> None:  # type: ignore[no-untyped-def]
    open_page(page, base_url)
    ask(page, question, 1)
    turn = page.locator(".turn").last
    est = estimate(Scenario.model_validate(shown_scenario(turn)))
    assert [p.phase for p in est.per_gpu.phases] == phase_names
    chart = turn.locator("[data-chart=phases]")
    rows = chart.locator("[data-phase]")
    assert [rows.nth(i).get_attribute("data-phase") for i in range(rows.count())] == phase_names
    overhead = est.per_gpu.total_bytes - est.per_gpu.tensor_peak_bytes
    for i, phase in enumerate(est.per_gpu.phases):
        assert int(rows.nth(i).get_attribute("data-tensor-bytes")) == phase.tensor_bytes
        assert (
            rows.nth(i).locator(".bar-value").text_content()
            == f"{(phase.tensor_bytes + overhead) / GIB:.2f} GiB"
        )
    peak = chart.locator("[data-peak=true]")
    assert peak.count() == 1 and peak.get_attribute("data-phase") == est.per_gpu.peak_phase
    # at the peak the bar is split into the Estimate's tensor components, bytes exact
    parts = peak.locator("[data-component]:not([data-component=overhead])")
    tensors = [c for c in est.components if c.kind == "tensor" and c.bytes > 0]
    assert [int(parts.nth(i).get_attribute("data-bytes")) for i in range(parts.count())] == [
        c.bytes for c in tensors
    ]


def test_the_phase_chart_speaks_chinese(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    open_page(page, base_url)
    page.click("#lang-zh")
    ask(page, "Llama-2-7B 在一张 A100 80GB 上推理，batch 4，4096 tokens", 1)
    chart = page.locator(".turn").last.locator("[data-chart=phases]")
    assert "预填充" in chart.locator("[data-phase=prefill]").text_content()
    assert "峰值" in chart.text_content()
    assert "如果改成" in page.locator(".turn").last.locator(".workbench legend").text_content()
    # after a change the component labels stay Chinese (the panel texts of the edited job, POST /v1/display)
    batch = page.locator(".turn").last.locator("[data-field=batch_size]")
    batch.fill("8")
    batch.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.turn .legend li')].some(li => li.textContent.includes('KV 缓存'))"
        " && document.querySelector('.turn [data-whatif-summary]')"
    )


def test_a_comparison_is_drawn_as_bars_with_each_cards_usable_line(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    """The Answer's `asked` (kind compare) as the chat sends it, drawn by the page's renderer."""
    open_page(page, base_url)
    jobs = [
        ("A100 40GB", {"model": "llama-2-7b", "task": "lora", "gpu": "a100-40gb"}),
        ("RTX 4090", {"model": "llama-2-7b", "task": "lora", "gpu": "rtx-4090"}),
        ("H100", {"model": "llama-2-7b", "task": "full_finetune", "gpu": "h100-80gb"}),
    ]
    options = []
    for label, scenario in jobs:
        got = httpx.post(base_url + "/v1/estimate", json=scenario)
        assert got.status_code == 200, got.text
        options.append({"label": label, "scenario": scenario, "estimate": got.json()})
    asked = {"kind": "compare", "options": options}
    page.evaluate(
        "asked => document.getElementById('transcript').append(window.VRAMwiseCharts.compare(asked))", asked
    )
    chart = page.locator("[data-chart=compare]")
    rows = chart.locator("[data-option]")
    assert rows.count() == 3
    for i, option in enumerate(options):
        est = option["estimate"]
        row = rows.nth(i)
        assert int(row.get_attribute("data-total-bytes")) == est["per_gpu"]["total_bytes"]
        assert int(row.get_attribute("data-usable-bytes")) == est["usable_bytes"]
        assert row.get_attribute("data-fits") == str(est["fits"]).lower()
        assert row.locator(".bar-usable").count() == 1
        assert option["label"] in row.text_content()
        drawn = [
            int(x) for x in row.locator("[data-component]").evaluate_all("n => n.map(e => e.dataset.bytes)")
        ]
        assert sum(drawn) == est["per_gpu"]["total_bytes"]
    # the H100 full fine-tune does not fit in 80 GB: its row says so
    assert rows.nth(2).get_attribute("data-fits") == "false"


def test_the_page_at_390_px(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    page = context.new_page()
    open_page(page, base_url)
    widest = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.topbar, .topbar *')].map(e => e.getBoundingClientRect().right))"
    )
    assert widest <= 390, widest
    ask(page, "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?", 1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "web_390px.png"))
    assert Path(OUTPUT / "web_390px.png").stat().st_size > 5_000
    context.close()
