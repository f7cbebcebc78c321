"""Slack's limits on a message (docs.slack.dev/reference/block-kit/blocks, .../methods/chat.postMessage),
and a check of a payload against them (`violations`), used before anything is posted and by the tests."""

from __future__ import annotations

from typing import Any

MAX_BLOCKS = 50  # blocks in one message
MAX_MARKDOWN_CHARS = 12_000  # all `markdown` blocks of one payload together
MAX_SECTION_TEXT = 3_000  # a section's text object
MAX_FIELDS = 10  # a section's fields
MAX_FIELD_TEXT = 2_000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 3_000
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2_000
MAX_ACTION_ID = 255
MAX_TABLE_ROWS = 100
MAX_TABLE_CELLS = 20
MAX_TABLES = 1  # a message takes one table block
MAX_MESSAGE_TEXT = 40_000  # the top-level `text` (the notification / fallback text)
MAX_STREAM_MARKDOWN = 12_000  # markdown_text of one chat.appendStream / startStream


def _text_of(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def violations(payload: dict[str, Any]) -> list[str]:
    """Every way `payload` ({"text", "blocks"}) breaks Slack's limits; empty when it fits."""
    out: list[str] = []
    blocks = payload.get("blocks") or []
    if len(blocks) > MAX_BLOCKS:
        out.append(f"{len(blocks)} blocks > {MAX_BLOCKS}")
    if len(str(payload.get("text") or "")) > MAX_MESSAGE_TEXT:
        out.append(f"text is {len(payload['text'])} chars > {MAX_MESSAGE_TEXT}")
    markdown = sum(len(str(b.get("text", ""))) for b in blocks if b.get("type") == "markdown")
    if markdown > MAX_MARKDOWN_CHARS:
        out.append(f"markdown blocks hold {markdown} chars > {MAX_MARKDOWN_CHARS}")
    tables = [b for b in blocks if b.get("type") == "table"]
    if len(tables) > MAX_TABLES:
        out.append(f"{len(tables)} table blocks > {MAX_TABLES}")
    for i, b in enumerate(blocks):
        kind = b.get("type")
        where = f"block {i} ({kind})"
        if len(str(b.get("block_id", ""))) > 255:
            out.append(f"{where}: block_id > 255 chars")
        if kind == "section":
            if "text" not in b and "fields" not in b:
                out.append(f"{where}: neither text nor fields")
            if len(_text_of(b.get("text"))) > MAX_SECTION_TEXT:
                out.append(f"{where}: text > {MAX_SECTION_TEXT} chars")
            fields = b.get("fields") or []
            if len(fields) > MAX_FIELDS:
                out.append(f"{where}: {len(fields)} fields > {MAX_FIELDS}")
            out += [
                f"{where}: a field > {MAX_FIELD_TEXT} chars"
                for f in fields
                if len(_text_of(f)) > MAX_FIELD_TEXT
            ]
        elif kind == "header":
            if len(_text_of(b.get("text"))) > MAX_HEADER_TEXT:
                out.append(f"{where}: text > {MAX_HEADER_TEXT} chars")
        elif kind == "context":
            elements = b.get("elements") or []
            if not elements or len(elements) > MAX_CONTEXT_ELEMENTS:
                out.append(f"{where}: {len(elements)} elements (1 to {MAX_CONTEXT_ELEMENTS})")
            out += [
                f"{where}: an element > {MAX_CONTEXT_TEXT} chars"
                for e in elements
                if len(_text_of(e)) > MAX_CONTEXT_TEXT
            ]
        elif kind == "actions":
            elements = b.get("elements") or []
            if not elements or len(elements) > MAX_ACTIONS_ELEMENTS:
                out.append(f"{where}: {len(elements)} elements (1 to {MAX_ACTIONS_ELEMENTS})")
            for e in elements:
                if len(_text_of(e.get("text"))) > MAX_BUTTON_TEXT:
                    out.append(f"{where}: button text > {MAX_BUTTON_TEXT} chars")
                if len(str(e.get("value", ""))) > MAX_BUTTON_VALUE:
                    out.append(f"{where}: button value > {MAX_BUTTON_VALUE} chars")
                if not e.get("action_id") or len(str(e["action_id"])) > MAX_ACTION_ID:
                    out.append(f"{where}: action_id missing or > {MAX_ACTION_ID} chars")
        elif kind == "table":
            rows = b.get("rows") or []
            if not rows or len(rows) > MAX_TABLE_ROWS:
                out.append(f"{where}: {len(rows)} rows (1 to {MAX_TABLE_ROWS})")
            widths = {len(r) for r in rows}
            if len(widths) > 1:
                out.append(f"{where}: rows of different widths {sorted(widths)}")
            if any(w > MAX_TABLE_CELLS for w in widths):
                out.append(f"{where}: a row > {MAX_TABLE_CELLS} cells")
        elif kind == "markdown":
            if not str(b.get("text", "")).strip():
                out.append(f"{where}: empty")
        elif kind == "divider":
            pass
        else:
            out.append(f"{where}: a block type this channel does not use")
    return out
