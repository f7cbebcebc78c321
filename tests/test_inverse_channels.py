"""An inverse question and a comparison in every channel: the CLI (a plain table under the summary; --json
carries `asked`), the SSE stream (the `asked` event before the text), the OpenAI-compatible API (the Markdown
table in the text, through the real `openai` SDK and a real uvicorn) and Slack (the options as the message's
table block). Every figure is the estimator's own for that option."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from service.agent.base import ConversationState
from service.agent.offline.agent import OfflineAgent
from service.app import create_app
from service.channels.cli_ask import run_ask
from service.slack.blocks import answer_payload
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

COMPARE = "LoRA vs QLoRA for llama-3-8b on a 4090?"
COMPARE_ZH = "ollama 跑 qwen2.5-14b，4090，q4_k_m 和 q8_0 选哪个"


def _totals(scenarios: list[dict]) -> list[str]:
    return [fmt_gib(estimate(Scenario.model_validate(s), plan=False).per_gpu.total_bytes) for s in scenarios]


LORA_TOTALS = [
    dict(model="llama-3-8b", task="lora", gpu="4090", num_gpus=1),
    dict(model="llama-3-8b", task="qlora", gpu="4090", num_gpus=1),
]


def _cli(question: str, **flags: bool) -> str:
    out, err = io.StringIO(), io.StringIO()
    options = {"json": False, "detail": False, "offline": True, "language": None, **flags}
    args = argparse.Namespace(question=question, **options)
    assert run_ask(args, out, err) == 0, err.getvalue()
    return out.getvalue()


def test_cli_shows_the_options_side_by_side() -> None:
    text = _cli(COMPARE)
    first = text.splitlines()[0]
    assert first.startswith("**QLoRA wins**")
    table = [line for line in text.splitlines() if line.startswith(("Component", "Per-GPU total", "Verdict"))]
    assert table[0].split()[-2:] == ["LoRA", "QLoRA"]
    lora, qlora = _totals(LORA_TOTALS)
    assert table[1].endswith(f"{lora}  {qlora}")
    assert table[2].split()[-4:] == ["does", "not", "fit", "fits"]


def test_cli_json_carries_asked() -> None:
    data = json.loads(_cli("4090 上跑 Qwen2.5-7B 推理，最长上下文多少", json=True))
    asked = data["asked"]
    assert asked["kind"] == "max" and asked["field"] == "seq_len"
    at, beyond = asked["at"]["scenario"], asked["beyond"]["scenario"]
    assert at["seq_len"] == asked["value"] and beyond["seq_len"] == asked["value"] + 1
    assert estimate(Scenario.model_validate(at), plan=False).fits
    assert not estimate(Scenario.model_validate(beyond), plan=False).fits
    assert data["summary"].splitlines()[0].startswith(f"**batch 1 时最长上下文：{asked['value']:,} tokens**")


def test_slack_message_tables_the_options() -> None:
    answer = asyncio.run(OfflineAgent().answer(COMPARE_ZH, ConversationState()))
    payload = answer_payload(answer)
    tables = [b for b in payload["blocks"] if b["type"] == "table"]
    assert len(tables) == 1
    rows = [[cell["text"] for cell in row] for row in tables[0]["rows"]]
    assert rows[0] == ["组成部分", "Q4_K_M", "Q8_0"]
    options = [o.scenario.model_dump(exclude_none=True) for o in answer.asked.options]
    assert rows[-2] == ["每卡总量", *_totals(options)]
    assert rows[-1] == ["结论", "放得下", "放得下"]
    assert payload["text"].startswith("*Q8_0 胜出*") or "Q8_0 胜出" in payload["text"]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("inverse") / "conversations.sqlite3"
    with live_server(create_app(offline_settings(db))) as url:
        yield url


def test_openai_api_answers_with_a_markdown_table(base_url: str) -> None:
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=60) as client:
        got = client.chat.completions.create(
            model="vramwise", messages=[{"role": "user", "content": COMPARE}]
        )
    text = got.choices[0].message.content or ""
    lora, qlora = _totals(LORA_TOTALS)
    assert text.splitlines()[2].startswith("**QLoRA wins**")
    assert "| Component | LoRA | QLoRA |" in text
    assert f"| **Per-GPU total** | **{lora}** | **{qlora}** |" in text
    assert "QLoRA saves" in text and "vs LoRA, mostly" in text


def test_sse_stream_sends_asked_before_the_text(base_url: str) -> None:
    events: list[tuple[str, str]] = []
    with httpx.stream(
        "POST", f"{base_url}/v1/chat", json={"message": "最少几张4090能全参微调qwen2.5-7b"}, timeout=60
    ) as r:
        name = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((name, line.split(":", 1)[1].strip()))
    names = [n for n, _ in events]
    assert "asked" in names and names.index("asked") < names.index("estimate")
    asked = json.loads(dict(events)["asked"])["asked"]
    assert asked["kind"] == "min" and asked["field"] == "num_gpus"
    assert estimate(Scenario.model_validate(asked["at"]["scenario"]), plan=False).fits
    assert not estimate(Scenario.model_validate(asked["beyond"]["scenario"]), plan=False).fits
