"""Answer text in pieces: consecutive texts grouped, in order, into pieces of at most N characters.

The chat stream sends an answer's text in pieces of up to 1 KiB (service/api/agent_pool.py), not one SSE
event per line: `text_groups` is that rule, used to merge streamed text events (service/api/sse_wire.py
`merge_tokens`) and by the offline agent to make its text in pieces in the first place.
"""

from __future__ import annotations

from collections.abc import Sequence


def text_groups(texts: Sequence[str], max_chars: int) -> list[list[str]]:
    """`texts` in groups of consecutive texts of at most `max_chars` characters together, each as long as
    the next text fits (a longer single text is a group of its own)."""
    groups: list[list[str]] = []
    size = 0
    for text in texts:
        if groups and size + len(text) <= max_chars:
            groups[-1].append(text)
            size += len(text)
        else:
            groups.append([text])
            size = len(text)
    return groups
