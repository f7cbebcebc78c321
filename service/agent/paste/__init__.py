"""Pasted configs, command lines, errors and logs: read with real parsers (PyYAML safe_load, json, shlex with
an argument table per tool, `ast` literals), never executed.

`split_message(text)` finds the pastes in a message; `read_paste(text, format)` reads one (format detected
or named); `paste_events(...)` is the offline agent's answer to a message with a paste.
"""

from __future__ import annotations

from service.agent.paste.detect import read_paste
from service.agent.paste.reading import FORMATS, PasteError, Reading
from service.agent.paste.split import SplitMessage, split_message

__all__ = ["FORMATS", "PasteError", "Reading", "SplitMessage", "read_paste", "split_message"]
