"""A comparison's side-by-side table as a Slack table block (components x options; the message's one table:
it takes the component table's place)."""

from __future__ import annotations

from typing import Any

from service.agent.asked import Asked
from service.slack import limits


def compare_table_block(asked: Asked, language: str) -> dict[str, Any]:
    """The rows of service/agent/compare_text.py `compare_rows`, inside Slack's row limit."""
    from service.agent.compare_text import compare_rows

    rows = compare_rows(asked, language)
    if len(rows) > limits.MAX_TABLE_ROWS:  # keep the header, the last components, the total and the verdict
        rows = [rows[0], *rows[len(rows) - limits.MAX_TABLE_ROWS + 1 :]]
    return {
        "type": "table",
        "column_settings": [{"align": "left"}, *({"align": "right"} for _ in rows[0][1:])],
        "rows": [[{"type": "raw_text", "text": cell or " "} for cell in row] for row in rows],
    }
