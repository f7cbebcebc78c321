"""Tagged blocks some open models write into their text: never shown, tool calls read as tool calls.

- `<think>...</think>` (DeepSeek-R1 and its distills, Qwen3 in thinking mode): the model's
  reasoning, dropped.
- `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the Hermes format Qwen2.5/Qwen3 use,
  vLLM's `hermes` tool parser reads the same tags): a tool call written as text, returned as one.

`TagFilter` works on a stream: it holds back only text that may still turn out to be a tag, so
each character is examined a bounded number of times (linear in the text's length).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_DROP = ("<think>", "</think>")
_CALL = ("<tool_call>", "</tool_call>")
_OPENERS = (_DROP[0], _CALL[0])
_LONGEST_OPENER = max(len(t) for t in _OPENERS)


@dataclass
class Filtered:
    text: str = ""  # what may be shown
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name": str, "arguments": str}


def _tool_call(body: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return None
    arguments = parsed.get("arguments", parsed.get("parameters", {}))
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"name": parsed["name"], "arguments": raw}


def _partial_opener_at(text: str) -> int:
    """Where a suffix of `text` could be the start of an opening tag (len(text) when none)."""
    start = max(0, len(text) - _LONGEST_OPENER + 1)
    for i in range(start, len(text)):
        if text[i] == "<" and any(t.startswith(text[i:]) for t in _OPENERS):
            return i
    return len(text)


class TagFilter:
    """Feeds text chunks through; returns the visible text and any tool calls written as text."""

    def __init__(self) -> None:
        self._pending = ""
        self._inside: tuple[str, str] | None = None  # the (opener, closer) of the open block

    def feed(self, chunk: str) -> Filtered:
        self._pending += chunk
        out = Filtered()
        while self._pending:
            if self._inside is not None:
                closer = self._inside[1]
                end = self._pending.find(closer)
                if end < 0:
                    # keep only what may hold the closer, except inside a tool call (its body is needed)
                    if self._inside is _DROP:
                        self._pending = self._pending[-(len(closer) - 1) :]
                    return out
                if self._inside is _CALL and (call := _tool_call(self._pending[:end].strip())):
                    out.tool_calls.append(call)
                self._pending = self._pending[end + len(closer) :]
                self._inside = None
                continue
            starts = [(i, tag) for tag in (_DROP, _CALL) if (i := self._pending.find(tag[0])) >= 0]
            if starts:
                i, tag = min(starts)
                out.text += self._pending[:i]
                self._pending = self._pending[i + len(tag[0]) :]
                self._inside = tag
                continue
            cut = _partial_opener_at(self._pending)
            out.text += self._pending[:cut]
            self._pending = self._pending[cut:]
            return out
        return out

    def flush(self) -> Filtered:
        """The end of the text: an unclosed think block is dropped; a held partial tag is text."""
        rest = "" if self._inside is not None else self._pending
        self._pending, self._inside = "", None
        return Filtered(text=rest)
