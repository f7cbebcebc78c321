"""LLM request sizes and round trips per question, against the fake OpenAI-compatible server on 127.0.0.1.

Runs the real LLMAgent (the service's build_agent, real HTTP, tests/fakes/openai_server.py) over a few
questions, English and Chinese, one of them a follow-up, with a scripted model that calls the tool once
and quotes its total. Prints, per question, the characters of the first request (and of its tools and
system prompt), the characters of all its requests, and the round trips. Printed figures, not asserts;
tests/test_llm_cost.py holds the first request to 12,000 characters.

Run: `python benchmarks/llm_request_size.py`
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "How much memory to fully fine-tune llama-2-7b on one A100 80GB?",
        {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb"},
    ),
    ("What about with LoRA?", {"follow_up": True, "task": "lora"}),
    (
        "Qwen2.5-7B 用 QLoRA 在一张 4090 上微调，显存够吗？",
        {"model": "qwen2.5-7b", "task": "qlora", "gpu": "4090"},
    ),
    (
        "Serve llama-3-70b in bf16 on 4 H100 with 8k context",
        {"model": "llama-3-70b", "gpu": "h100", "num_gpus": 4, "seq_len": 8192},
    ),
]


def _quote(body: dict[str, Any]) -> Any:
    from tests.fakes.openai_server import Reply

    out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
    total = out.get("per_gpu", {}).get("total", {}).get("gib") or out["current"]["total"]["gib"]
    return Reply(content=f"Total per GPU: {total}.\n")


async def main() -> None:
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent
    from service.agent.factory import build_agent
    from service.settings import Settings
    from tests.fakes.openai_server import FakeOpenAI, Reply

    state = ConversationState(conversation_id="bench")
    print(f"{'question':60} {'first':>7} {'tools':>7} {'system':>7} {'all':>7} {'trips':>5}")
    with FakeOpenAI() as server:
        settings = Settings(
            openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=30
        )
        agent = build_agent(settings)
        for question, args in QUESTIONS:
            server.script = [Reply(tool_calls=[("estimate_memory", args)]), _quote]
            server.requests.clear()
            done = [e async for e in agent.stream(question, state)][-1]
            assert isinstance(done, DoneEvent), done
            state.record_turn(question, done.answer)
            first = server.requests[0]
            size = len(json.dumps(first, ensure_ascii=False))
            tools = len(json.dumps(first.get("tools", []), ensure_ascii=False))
            system = len(first["messages"][0]["content"])
            every = sum(len(json.dumps(r, ensure_ascii=False)) for r in server.requests)
            print(f"{question[:60]:60} {size:7d} {tools:7d} {system:7d} {every:7d} {len(server.requests):5d}")


if __name__ == "__main__":
    asyncio.run(main())
