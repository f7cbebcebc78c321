"""A comparison on the chat page in headless Chromium: the `[data-chart=compare]` block holds one
`[data-option]` per option, each with the estimator's per-GPU total and verdict, the winner marked."""

from __future__ import annotations

from tests.service_support import reset_sse_exit_flag
from tests.test_web_browser import ask, base_url, browser, page, pytestmark, web_db
from tools.estimator import estimate
from tools.scenario import Scenario

__all__ = ["base_url", "browser", "page", "pytestmark", "reset_sse_exit_flag", "web_db"]  # fixtures


def test_a_comparison_draws_one_bar_per_option(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base_url + "/")
    page.wait_for_selector('body[data-ready="true"]')
    ask(page, "LoRA vs QLoRA for llama-3-8b on a 4090?", 1)
    chart = page.locator(".turn").last.locator("[data-chart=compare]")
    options = chart.locator("[data-option]")
    assert [options.nth(i).get_attribute("data-option") for i in range(options.count())] == ["LoRA", "QLoRA"]
    for i, task in enumerate(("lora", "qlora")):
        expected = estimate(Scenario(model="llama-3-8b", task=task, gpu="4090", num_gpus=1), plan=False)
        assert int(options.nth(i).get_attribute("data-total-bytes")) == expected.per_gpu.total_bytes
        assert options.nth(i).get_attribute("data-fits") == str(expected.fits).lower()
    assert "winner" in (options.nth(1).get_attribute("class") or "")  # QLoRA: the only one that fits
    assert page.errors == []
