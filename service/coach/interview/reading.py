"""How an interview answer is read before the coach's parser (service/coach/answers.py) sees it.

Candidates give a memory figure with its reasoning: "about 112 GB: 16 bytes a parameter times 7B",
"14 GB (7B x 2 bytes)", "每个参数 16 字节，一共 112GB". The parser takes the last memory figure of an
answer, which would be the per-element size. For a question answered in GB or GiB, a byte count under
1,000 is such a size (bytes per parameter, per element, per state), never the answer: it is dropped.
"""

from __future__ import annotations

import re

SMALL_BYTES = re.compile(r"(?<![0-9A-Za-z.])(\d{1,3}(?:\.\d+)?)\s*(?:bytes?|个?字节)(?![a-z])", re.IGNORECASE)


def without_element_sizes(answer: str) -> str:
    """`answer` without the byte counts under 1,000 ("2 bytes", "16 字节")."""
    return SMALL_BYTES.sub(" ", answer)


def answer_text(answer: str, answer_in: str) -> str:
    """The text the coach's parser reads for a question answered in `answer_in`."""
    return without_element_sizes(answer) if answer_in == "bytes" else answer
