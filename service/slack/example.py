"""Write docs/slack-answer.json: the final Slack message (Block Kit) for one question, rendered by the
channel's own code (service/slack/blocks.py) from the offline agent's answer.

    .venv/bin/python -m service.slack.example          # rewrites docs/slack-answer.json

Paste its "blocks" into Slack's Block Kit Builder to see the message as Slack draws it.
tests/test_slack_blocks.py checks that the file is what the code renders today.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

QUESTION = "Can I fine-tune llama-2-7b with QLoRA on one 4090?"
FORMULAS_REF = "example-answer-id"  # the stored answer's id in a real message
OUTPUT = ROOT / "docs" / "slack-answer.json"


async def offline_answer(question: str):  # type: ignore[no-untyped-def]
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent
    from service.agent.factory import build_agent
    from service.settings import Settings

    agent = build_agent(Settings(agent="offline", openai_api_key=None, openai_base_url=None))
    async for ev in agent.stream(question, ConversationState()):
        if isinstance(ev, DoneEvent):
            return ev.answer
    raise RuntimeError(f"no answer for {question!r}")


def example_payload() -> dict:
    from service.slack.blocks import answer_payload

    answer = asyncio.run(offline_answer(QUESTION))
    return {"question": QUESTION, **answer_payload(answer, formulas_ref=FORMULAS_REF)}


def render() -> str:
    return json.dumps(example_payload(), ensure_ascii=False, indent=2) + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
