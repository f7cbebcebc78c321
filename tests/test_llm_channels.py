"""Every channel says what happened: the CLI, SSE (`/v1/chat`) and `/v1/chat/completions` (streaming
and not) against the misbehaving OpenAI-compatible server on 127.0.0.1 (tests/fakes/openai_server.py).

For each behaviour the user sees the tool's answer for the asked job (a full fine-tune of
llama-2-7b on one A100 80GB: 117.17 GiB, not the 16.26 GiB of inference), and every fallback,
overruled field or cut-off reply is said: on stderr (CLI), as `notice` events and `done.notices`
(SSE), at the end of the message text and in the `vramwise` extension object (completions).
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.channels.cli_ask import run_ask
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.service_support import offline_settings, parse_sse

QUESTION = "How much memory to fully fine-tune llama-2-7b on one A100 80GB?"
FULL = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 1}
CUT = json.dumps(FULL)[:30]
TOTAL = "117.17 GiB"
HERMES = json.dumps({"name": "estimate_memory", "arguments": FULL})


def quote(body: dict[str, Any]) -> Reply:
    out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
    return Reply(content=f"Total per GPU: {out['per_gpu']['total']['gib']}.\n")


def cut_quote(body: dict[str, Any]) -> Reply:
    return Reply(
        content="<think>maybe 3 GB</think>" + quote(body).content + "Beyond that", finish_reason="length"
    )


# (script, agent, the words each notice must contain)
BEHAVIOURS: dict[str, tuple[list[Any], str, list[str]]] = {
    "cut-off-twice": (
        [
            Reply(tool_calls=[("estimate_memory", CUT)], finish_reason="length"),
            Reply(tool_calls=[("estimate_memory", CUT)], end_inside_arguments=True),
        ],
        "llm->offline",
        ["tool call was cut off before its arguments ended"],
    ),
    "another-job": (
        [Reply(tool_calls=[("estimate_memory", dict(FULL, task="inference"))]), quote],
        "llm",
        ["read task as inference, but the question says full_finetune"],
    ),
    "5xx-twice": ([Reply(status=500), Reply(status=503)], "llm->offline", ["HTTP 503"]),
    "hermes-text-call": ([Reply(content=f"<tool_call>{HERMES}</tool_call>"), quote], "llm", []),
    "ollama-object-arguments": (
        [Reply(tool_calls=[("estimate_memory", FULL)], object_arguments=True), quote],
        "llm",
        [],
    ),
    "index-only-first": (
        [Reply(tool_calls=[("estimate_memory", FULL)], bare_continuation_chunks=True), quote],
        "llm",
        [],
    ),
    "429-retry-after": (
        [Reply(status=429, retry_after="1"), Reply(tool_calls=[("estimate_memory", FULL)]), quote],
        "llm",
        [],
    ),
    "empty-choices": ([Reply(empty_choices=True)], "llm->offline", ["the model returned an empty answer"]),
    "invented-figure-without-the-tool": (
        [Reply(content="It needs 5 GB.\n")],
        "llm->offline",
        ["did not produce (5 GB)"],
    ),
    "think-and-length": (
        [Reply(tool_calls=[("estimate_memory", FULL)]), cut_quote],
        "llm",
        ["answer was cut off at its length limit"],
    ),
}


def check_notices(notices: list[str], expected: list[str]) -> None:
    assert len(notices) == len(expected), notices
    for notice, words in zip(notices, expected, strict=True):
        assert words in notice
        assert "Error" not in notice and "Exception" not in notice  # words, never class names


@pytest.mark.parametrize("behaviour", list(BEHAVIOURS), ids=list(BEHAVIOURS))
def test_cli_says_what_happened(behaviour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    script, agent, expected = BEHAVIOURS[behaviour]
    with FakeOpenAI(list(script)) as fake:
        monkeypatch.setenv("VRAMWISE_OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("VRAMWISE_OPENAI_API_KEY", "test")
        monkeypatch.setenv("VRAMWISE_AGENT", "auto")
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(question=QUESTION, json=True, detail=False, offline=False, language=None)
        assert run_ask(args, out, err) == 0
    answer = json.loads(out.getvalue())
    assert answer["agent"] == agent and TOTAL in answer["summary"]
    assert answer["estimate"]["scenario"]["task"] == "full_finetune"
    check_notices(answer["notices"], expected)
    said = [line.removeprefix("note: ") for line in err.getvalue().splitlines()]
    assert said == answer["notices"]
    assert "<think>" not in answer["answer"] and "<tool_call>" not in answer["answer"]


@pytest.mark.parametrize("behaviour", list(BEHAVIOURS), ids=list(BEHAVIOURS))
def test_http_channels_say_what_happened(behaviour: str, tmp_path: Path) -> None:
    script, agent, expected = BEHAVIOURS[behaviour]
    with FakeOpenAI() as fake:
        settings = offline_settings(
            tmp_path / "db.sqlite3", agent="auto", openai_base_url=fake.base_url, openai_api_key="test"
        )
        with TestClient(create_app(settings)) as client:
            fake.script = list(script)
            with client.stream("POST", "/v1/chat", json={"message": QUESTION}) as resp:
                events = parse_sse(resp.iter_lines())
            sse_notices = [e.data["message"] for e in events if e.event == "notice"]
            done = next(e.data for e in events if e.event == "done")
            assert done["agent"] == agent and TOTAL in done["summary"] and done["notices"] == sse_notices
            check_notices(sse_notices, expected)

            body = {"model": "vramwise", "messages": [{"role": "user", "content": QUESTION}]}
            fake.script = list(script)
            completion = client.post("/v1/chat/completions", json=body).json()
            text = completion["choices"][0]["message"]["content"]
            extension = completion["vramwise"]
            assert extension["agent"] == agent and TOTAL in text
            check_notices(extension["notices"], expected)
            assert text.endswith("".join(f"\n> {n}" for n in extension["notices"]))

            fake.script = list(script)
            with client.stream("POST", "/v1/chat/completions", json=body | {"stream": True}) as resp:
                chunks = [e.data for e in parse_sse(resp.iter_lines()) if isinstance(e.data, dict)]
            streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            last = chunks[-1]
            assert last["choices"][0]["finish_reason"] == "stop" and last["vramwise"]["agent"] == agent
            assert TOTAL in streamed and "<think>" not in streamed and "<tool_call>" not in streamed
            check_notices(last["vramwise"]["notices"], expected)
            assert all("vramwise" not in c for c in chunks[:-1])
            assert streamed.endswith("".join(f"\n> {n}" for n in last["vramwise"]["notices"]))
