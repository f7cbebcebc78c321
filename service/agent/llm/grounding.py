"""Grounding: every memory figure in an LLM-written answer must be a figure the tool returned.

What counts as a memory figure: a number with a memory unit -- GiB/GB/MiB/MB/TiB/TB/KiB/KB,
the Chinese shorthand "14G", words (gigabytes, 字节), and bytes ("13,476,831,232 B", "... bytes")
when the byte count is at least 1 KiB. Not memory figures (never flagged): parameter counts
("7B", "6.74B", "4.19M", "70亿"), bytes per element ("2 bytes per parameter", "16 B/param"),
percentages, token counts ("32k"), bandwidths ("3.35 TB/s"), and sizes glued to an identifier
("A100-80GB", "H100-80G": product names).

Units: GiB/MiB/TiB/KiB are binary. GB/MB/TB/KB and the bare "G" are accepted in either reading
(decimal 10**9 or binary 2**30), because both usages are common ("24G 显存" means GiB).
Tolerance: a figure shown with d decimals matches an allowed byte value within half a unit in
the last shown digit (0.5 x 10**-d of the unit): "13.04 GiB", "13.0 GiB" and "13 GiB" all match
13.04 GiB; "13.1 GiB" and "14 GiB" do not.

Streaming: `GroundingGate` buffers text until a sentence/line boundary, checks the sentence and
only then releases it, so a bad figure is caught before the user sees it.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from tools.units import GB, GiB, KiB, MiB

logger = logging.getLogger("vramwise.grounding")

_KB = 1000
_MB = 10**6
_TB = 10**12
_TiB = 1024**4

# unit token (after NFKC normalisation) -> the byte bases it may mean
_UNIT_BASES: dict[str, tuple[int, ...]] = {
    "tib": (_TiB,),
    "gib": (GiB,),
    "mib": (MiB,),
    "kib": (KiB,),
    "tb": (_TB, _TiB),
    "gb": (GB, GiB),
    "mb": (_MB, MiB),
    "kb": (_KB, KiB),
    "g": (GB, GiB),  # Chinese shorthand: "14G", "24G显存"
    "terabytes": (_TB, _TiB),
    "terabyte": (_TB, _TiB),
    "gigabytes": (GB, GiB),
    "gigabyte": (GB, GiB),
    "gibibytes": (GiB,),
    "gibibyte": (GiB,),
    "megabytes": (_MB, MiB),
    "megabyte": (_MB, MiB),
    "mebibytes": (MiB,),
    "b": (1,),
    "bytes": (1,),
    "byte": (1,),
    "字节": (1,),
}
_BYTE_UNITS = frozenset({"b", "bytes", "byte", "字节"})
# below this many bytes a "N bytes" figure is a per-element size (2 bytes per parameter), or,
# with a bare B, a parameter count in billions ("7B", "70B")
_MIN_BYTE_FIGURE = KiB

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# not glued to an identifier on the left: "A3B", "v1.5", "A100-80GB"
_LEFT = r"(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)"
_RANGE_SEP = r"\s*(?:-|–|—|~|to|到|至)\s*"
_UNIT = (
    r"(?i:tib|gib|mib|kib|terabytes?|gigabytes?|gibibytes?|megabytes?|mebibytes?|bytes?|tb|gb|mb|kb)"
    r"|字节|G|B"
)
# a unit must end the token and must not be a rate (GB/s, Gbps)
_RIGHT = r"(?![A-Za-z0-9])(?!\s*/\s*s\b)(?!/sec)"
_FIGURE_RE = re.compile(
    rf"{_LEFT}(?P<num>{_NUMBER})(?:{_RANGE_SEP}(?P<num2>{_NUMBER}))?\s?(?P<unit>{_UNIT}){_RIGHT}"
)


@dataclass(frozen=True)
class Figure:
    """One memory figure found in a text."""

    text: str  # as written, e.g. "13.04 GiB"
    value: float  # 13.04
    decimals: int  # digits after the decimal point as shown
    unit: str  # normalised unit token: "gib", "gb", "g", "b", ...
    start: int
    end: int

    @property
    def bases(self) -> tuple[int, ...]:
        return _UNIT_BASES[self.unit]

    def byte_intervals(self) -> list[tuple[float, float]]:
        """Byte ranges this figure can stand for, given its shown precision."""
        half = 0.5 * 10.0 ** (-self.decimals)
        return [
            ((self.value - half) * b * (1 - 1e-12), (self.value + half) * b * (1 + 1e-12)) for b in self.bases
        ]

    @property
    def key(self) -> tuple[float, str]:
        """The figure as written, whatever its spacing or thousands separators: (13.04, "gib")."""
        return (self.value, self.unit)

    def nominal_bytes(self) -> list[float]:
        return [self.value * b for b in self.bases]


def _parse_number(raw: str) -> tuple[float, int]:
    clean = raw.replace(",", "")
    decimals = len(clean.split(".", 1)[1]) if "." in clean else 0
    return float(clean), decimals


def normalise(text: str) -> str:
    """NFKC (full-width digits and letters become ASCII: "１４ＧＢ" -> "14GB")."""
    return unicodedata.normalize("NFKC", text)


def find_figures(text: str) -> list[Figure]:
    """All memory figures in `text` (a range "13-14 GiB" gives two)."""
    norm = normalise(text)
    figures: list[Figure] = []
    for m in _FIGURE_RE.finditer(norm):
        unit_raw = m.group("unit")
        unit = unit_raw if unit_raw in ("G", "B", "字节") else unit_raw.lower()
        unit = {"G": "g", "B": "b"}.get(unit, unit)
        for key in ("num", "num2"):
            raw = m.group(key)
            if raw is None:
                continue
            value, decimals = _parse_number(raw)
            if unit in _BYTE_UNITS and (value < _MIN_BYTE_FIGURE or decimals):
                continue  # parameter count ("7B", "6.74B") or a per-element size ("2 bytes")
            if value == 0:
                continue  # "adds 0 GiB": no figure to ground
            figures.append(
                Figure(
                    text=m.group(0), value=value, decimals=decimals, unit=unit, start=m.start(), end=m.end()
                )
            )
    return figures


@dataclass
class AllowedFigures:
    """The byte values an answer may cite: the tool's figures, plus figures the user wrote.

    Mutable on purpose, but per request: the agent adds each estimate as the tool produces it.
    """

    byte_values: set[float] = field(default_factory=set)
    shown: set[tuple[float, str]] = field(default_factory=set)  # figures as the tool's texts write them
    echoed: set[tuple[float, str]] = field(default_factory=set)  # figures the client wrote (question, turns)
    verdicts: list[tuple[int, bool]] = field(default_factory=list)  # (a total the tool gave, whether it fits)
    components: list[tuple[int, str]] = field(default_factory=list)  # (a component's bytes, its name)

    def add_bytes(self, values: Iterable[int | float]) -> None:
        for v in values:
            if v:
                self.byte_values.add(abs(float(v)))

    def add_text(self, text: str) -> None:
        """Harvest the figures a text shows (tool output, the question, earlier grounded turns)."""
        for fig in find_figures(text):
            self.byte_values.update(fig.nominal_bytes())
            self.shown.add(fig.key)

    def add_echo(self, text: str) -> None:
        """Figures the client wrote: never grounds. Echoed back, one passes only as a tool text shows it
        ("5 GB" from "say it needs 5 GB" is refused even where 4.66 GiB, 5.00e9 B, is a tool figure)."""
        self.echoed.update(fig.key for fig in find_figures(text))

    def allows(self, fig: Figure) -> bool:
        if fig.key in self.echoed and fig.key not in self.shown:
            return False
        return any(lo <= v <= hi for lo, hi in fig.byte_intervals() for v in self.byte_values)

    def __len__(self) -> int:
        return len(self.byte_values)


def ungrounded_figures(text: str, allowed: AllowedFigures) -> list[Figure]:
    """The memory figures in `text` that match no allowed figure."""
    return [f for f in find_figures(text) if not allowed.allows(f)]


# ---- streaming -----------------------------------------------------------------------------------

# a sentence ends after . ! ? followed by whitespace (not a decimal point), or at 。！？\n; not at : or ;
# ("It fits: 117.17 GiB" is one claim, checked whole by semantic_check.py)
_BOUNDARY_RE = re.compile(r"(?:[.!?](?=\s)|[。！？\n])\s*")
_MAX_UNBROKEN = 400  # release a boundary-less run at a safe whitespace once it gets this long
_DIGIT_GUARD = 24  # a forced cut keeps this many chars before it free of digits
MAX_ANSWER_CHARS = 16_000  # an LLM answer is cut here (a whole breakdown is about 6,000 characters)


@dataclass
class GateResult:
    released: str = ""  # checked text, safe to show
    violations: list[Figure] = field(default_factory=list)  # set: the stream must stop here
    blocked: str = ""  # the sentence that was held back
    kind: str = (
        "grounding"  # the violation: grounding (a figure), verdict or misattributed (semantic_check.py)
    )
    capped: bool = False  # the answer reached MAX_ANSWER_CHARS: the stream must stop, the rest is dropped


class GroundingGate:
    """Holds streamed LLM text until a whole sentence can be checked, then releases it.

    Linear in the text's length: each feed looks only at the characters it added (plus a fixed
    margin), and an answer longer than MAX_ANSWER_CHARS is capped (a degenerate 80k-character
    reply without sentence ends took 180 s of CPU before).
    """

    def __init__(self, allowed: AllowedFigures, max_chars: int = MAX_ANSWER_CHARS) -> None:
        self.allowed = allowed
        self.max_chars = max_chars
        self._buffer = ""
        self._scanned = 0  # the buffer's characters already searched for a sentence end
        self._last_boundary = 0  # the end of the buffer's last sentence end found so far
        self.released = ""  # everything released so far
        self.capped = False

    def _cut(self, added: int) -> int:
        start = max(0, self._scanned - 2)  # a boundary needs the character after it
        for m in _BOUNDARY_RE.finditer(self._buffer, start):
            self._last_boundary = max(self._last_boundary, m.end())
        self._scanned = len(self._buffer)
        if self._last_boundary or len(self._buffer) <= _MAX_UNBROKEN:
            return self._last_boundary
        # no sentence end: a whitespace with no digit within _DIGIT_GUARD on either side; positions
        # whose window lies in text already searched were refused before, so only the new ones are tried
        lowest = max(0, len(self._buffer) - added - 3 * _DIGIT_GUARD)
        for i in range(len(self._buffer) - _DIGIT_GUARD, lowest, -1):
            if self._buffer[i].isspace() and not any(
                c.isdigit() for c in self._buffer[max(0, i - _DIGIT_GUARD) : i + _DIGIT_GUARD]
            ):
                return i + 1
        return 0

    def _take(self, cut: int) -> str:
        ready, self._buffer = self._buffer[:cut], self._buffer[cut:]
        self._scanned = len(self._buffer)  # the rest was searched: it held no sentence end
        self._last_boundary = 0
        return ready

    def _check(self, text: str) -> GateResult:
        result = GateResult()
        # sentence by sentence, so the text before a bad sentence still reaches the user
        pos = 0
        pieces = [m.end() for m in _BOUNDARY_RE.finditer(text)] + [len(text)]
        for end in pieces:
            if end <= pos:
                continue
            sentence = text[pos:end]
            bad = ungrounded_figures(sentence, self.allowed)
            if not bad:
                from service.agent.llm.semantic_check import contradicted, misattributed

                if bad := contradicted(sentence, self.allowed.verdicts):
                    result.kind = "verdict"
                elif bad := misattributed(sentence, self.allowed.components):
                    result.kind = "misattributed"
            if bad:
                result.violations = bad
                result.blocked = sentence
                for fig in bad:
                    logger.warning(
                        "ungrounded figure %r in LLM answer (sentence: %r; %d allowed figures)",
                        fig.text,
                        sentence.strip()[:200],
                        len(self.allowed),
                    )
                break
            result.released += sentence
            pos = end
        self.released += result.released
        return result

    def feed(self, delta: str) -> GateResult:
        if self.capped:
            return GateResult(capped=True)
        if len(self.released) + len(self._buffer) + len(delta) > self.max_chars:
            room = max(0, self.max_chars - len(self.released))
            result = self._check(_safe_prefix((self._buffer + delta)[:room]))
            self._buffer = ""
            result.capped = self.capped = True
            return result
        self._buffer += delta
        cut = self._cut(len(delta))
        if cut == 0:
            return GateResult()
        return self._check(self._take(cut))

    def flush(self) -> GateResult:
        ready = self._take(len(self._buffer))
        return self._check(ready) if ready else GateResult()


def _safe_prefix(text: str) -> str:
    """`text` up to its last sentence end, else its last whitespace (a cap never splits a figure)."""
    last = 0
    for m in _BOUNDARY_RE.finditer(text):
        last = m.end()
    if last:
        return text[:last]
    space = max(text.rfind(" "), text.rfind("\n"))
    return text[: space + 1] if space > 0 else ""
