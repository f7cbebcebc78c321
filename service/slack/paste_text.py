"""A Slack message's text as the agent reads it, pastes kept: a code block (```...```) keeps its lines, and a
text snippet shared with the message (its `preview`) joins as a code block.

Slack writes `&`, `<` and `>` as `&amp;`, `&lt;`, `&gt;` in message text (api.slack.com/reference/surfaces/
formatting, "Escaping text"); a paste gets them back. A message without a paste is one line, as before.
"""

from __future__ import annotations

import html
from typing import Any

SNIPPET_TYPES = frozenset(
    {"text", "yaml", "json", "python", "shell", "javascript", "markdown", "plain", "toml"}
)


def _snippets(event: dict[str, Any]) -> list[str]:
    out = []
    for shared in event.get("files") or []:
        preview = shared.get("preview") or shared.get("plain_text")
        if preview and (shared.get("mode") == "snippet" or shared.get("filetype") in SNIPPET_TYPES):
            out.append(str(preview))
    return out


def message_text(event: dict[str, Any], bot_user_id: str | None) -> str:
    text = str(event.get("text") or "")
    if bot_user_id:
        text = text.replace(f"<@{bot_user_id}>", " ")
    snippets = _snippets(event)
    if "```" not in text and not snippets:
        return " ".join(text.split())
    text = html.unescape(text).strip()
    for snippet in snippets:
        text += f"\n```\n{snippet.strip()}\n```"
    return text.strip()
