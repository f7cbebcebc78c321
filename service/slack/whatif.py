"""What-if buttons under a Slack answer ("QLoRA instead", "on 2 GPUs", "with checkpointing"): a click asks
the change as a follow-up in the answer's conversation, through the same agent and TurnRunner as any
question, and the new answer is posted in the thread. The button's value is the stored answer's id (the
one "Show formulas" uses), so the click finds the conversation; the texts are prompts/<lang>/slack.toml."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from service.slack import limits
from service.slack.blocks import Block, slack_text, text_payload
from service.slack.streaming import action_place

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    from service.slack.channel import SlackChannel
    from tools.result import Estimate

log = logging.getLogger(__name__)

WHAT_IF = re.compile(r"^what_if_(qlora|gpus|checkpointing)$")  # the buttons' action_ids
TRAINING = {"full_finetune", "pretrain", "freeze", "lora", "qlora", "ppo", "grpo", "dpo"}


def changes_for(estimate: Estimate) -> list[tuple[str, dict[str, Any]]]:
    """The one-change follow-ups that make sense for this job, with their text values."""
    sc = estimate.scenario
    out: list[tuple[str, dict[str, Any]]] = []
    if sc.task in ("lora", "full_finetune", "freeze"):
        out.append(("qlora", {}))
    out.append(("gpus", {"n": (sc.num_gpus or 1) * 2}))
    if sc.task in TRAINING and not sc.gradient_checkpointing and sc.recompute in (None, "none"):
        out.append(("checkpointing", {}))
    return out


def what_if_buttons(estimate: Estimate, ref: str, language: str) -> list[Block]:
    """Button elements for an actions block: label in the answer's language, value the stored answer's id
    and the change's values (`ref|n`)."""
    buttons = []
    for change, values in changes_for(estimate):
        label = slack_text(language, f"what_if_{change}", **values)[: limits.MAX_BUTTON_TEXT]
        value = f"{ref}|{values.get('n', '')}"[: limits.MAX_BUTTON_VALUE]
        buttons.append(
            {
                "type": "button",
                "action_id": f"what_if_{change}",
                "text": {"type": "plain_text", "text": label},
                "value": value,
            }
        )
    return buttons


def register(app: AsyncApp, channel: SlackChannel) -> None:
    async def on_click(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        await channel._tracked(_answer(channel, body, action, client), f"what-if {action.get('action_id')}")

    app.action(WHAT_IF)(on_click)


async def _answer(channel: SlackChannel, body: dict[str, Any], action: dict[str, Any], client: Any) -> None:
    where, thread_ts = action_place(body)
    ref, _, n = str(action.get("value") or "").partition("|")
    match = WHAT_IF.match(str(action.get("action_id") or ""))
    stored = await channel.store.answer(ref)
    if stored is None or match is None:
        await client.chat_postMessage(
            channel=where, thread_ts=thread_ts, **text_payload(slack_text("en", "formulas_gone"))
        )
        return
    question = slack_text(stored.language, f"what_if_{match.group(1)}_ask", n=n or 2)
    outcome = await channel._ask(question, stored.conversation_id)
    payload = await channel._final_payload(outcome, stored.conversation_id)
    await client.chat_postMessage(channel=where, thread_ts=thread_ts, **payload)
