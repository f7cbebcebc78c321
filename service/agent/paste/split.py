"""A message as the sentence and the pasted blocks in it.

Fenced code blocks (Markdown/Slack ```...```) are pastes; without fences, a multi-line message whose lines
(all but up to two leading or trailing sentence lines) read as a known format is a paste, and so is a single
line that is a known tool's command or a CUDA out-of-memory message. Anything else is an ordinary question:
the check is cheap, so questions without a paste are not slowed down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from service.agent.paste.reading import PasteError

# a language word counts only on the fence's own line (Slack writes ```vllm serve ...``` on one line)
_FENCE = re.compile(r"```(?:[ \t]*([\w.+\-]*)[ \t]*\n)?(.*?)```", re.DOTALL)
_INLINE = re.compile(r"`([^`\n]{8,})`")
_MARKERS = re.compile(
    r"`|\n|CUDA out of memory|OutOfMemoryError|^\s*(?:[A-Z_]+=\S+\s+)*(?:vllm|python3?|llama-|\./llama-|"
    r"deepspeed|torchrun|accelerate|trl|llamafactory-cli|FROM)\b",
    re.IGNORECASE,
)
_KEY_LINE = re.compile(r"^\s*[\w.\-]+\s*:\s*\S")


@dataclass
class SplitMessage:
    """The words around the paste, and each pasted block (with the language a fence named, if any)."""

    sentence: str
    pastes: list[str] = field(default_factory=list)
    fenced: bool = False
    errors: list[PasteError] = field(default_factory=list)


def _reads(text: str) -> bool:
    from service.agent.paste.detect import detect_and_read

    try:
        reading = detect_and_read(text)
    except PasteError:
        return False
    # without a fence, only what read as something counts ("accelerate launch with 4 GPUs?" is a question)
    return reading is not None and bool(reading.used or reading.observed)


def _single_line(line: str) -> SplitMessage | None:
    """A one-line command or error; words typed after a command ("... on a 4090?") are the sentence."""
    from service.agent.paste.detect import detect_and_read

    if not _reads(line):
        return None
    reading = detect_and_read(line)
    leftover = reading.facts.get("leftover", []) if reading is not None else []
    return SplitMessage(sentence=" ".join(leftover), pastes=[line])


def _unfenced(text: str) -> SplitMessage | None:
    lines = text.strip().splitlines()
    if len(lines) == 1:
        single = lines[0]
        for span in _INLINE.finditer(single):
            if _reads(span.group(1)):
                return SplitMessage(
                    sentence=" ".join((single[: span.start()] + " " + single[span.end() :]).split()),
                    pastes=[span.group(1)],
                )
        return _single_line(single)
    for head in range(0, min(3, len(lines))):
        for tail in range(0, min(3, len(lines) - head)):
            body = lines[head : len(lines) - tail]
            if not body:
                continue
            if _reads("\n".join(body)):
                sentence = " ".join([*lines[:head], *lines[len(lines) - tail :]]).strip()
                return SplitMessage(sentence=sentence, pastes=["\n".join(body)])
    key_lines = sum(1 for line in lines if _KEY_LINE.match(line))
    if key_lines >= 3 and key_lines >= len(lines) // 2:  # a config that does not parse: say where
        from service.agent.paste.detect import load_yaml

        try:
            load_yaml("\n".join(lines))
        except PasteError as err:
            return SplitMessage(sentence="", pastes=["\n".join(lines)], errors=[err])
    return None


def split_message(text: str) -> SplitMessage | None:
    """The sentence and the pastes of a message; None for a message without a paste."""
    if not _MARKERS.search(text):
        return None
    blocks = list(_FENCE.finditer(text))
    if blocks:
        sentence = _FENCE.sub(" ", text)
        return SplitMessage(
            sentence=" ".join(sentence.split()),
            pastes=[b.group(2) for b in blocks if b.group(2).strip()],
            fenced=True,
        )
    return _unfenced(text)
