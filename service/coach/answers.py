"""Free-text answers, English or Chinese, read into figures: "about 112 GB", "~104 GiB", "大概110G",
"一百一十二GB", "1.2e11 bytes", "two A100s", "放不下，需要两张卡", "no", "the same", "hint".

`parse_answer(text, default_unit)` returns every reading of a memory figure (an ambiguous "G" or "GB"
is both 10^9 and 2^30: people write GB for what nvidia-smi shows in GiB), a GPU count, a yes/no
verdict, "unchanged", or a hint request. Number words go through service/agent/offline/numbers.py.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field

from service.agent.offline.numbers import replace_en_numbers, replace_zh_numbers

KIB, MIB, GIB, TIB, PIB = 2**10, 2**20, 2**30, 2**40, 2**50
MOST_BYTES = 10**21  # a zettabyte: no answer about GPU memory is larger (1e308 GB is a figure, not memory)

# unit (lower-case) -> the byte multipliers it may mean, the first one being the literal reading
_UNITS: dict[str, tuple[int, ...]] = {
    "pib": (PIB,), "pb": (10**15, PIB), "petabytes": (10**15,), "petabyte": (10**15,), "pebibytes": (PIB,),
    "pebibyte": (PIB,), "拍字节": (10**15, PIB), "tebibytes": (TIB,), "tebibyte": (TIB,), "太字节": (10**12, TIB),
    "gibibytes": (GIB,), "gibibyte": (GIB,), "mebibytes": (MIB,), "mebibyte": (MIB,), "kibibytes": (KIB,),
    "kibibyte": (KIB,), "kilobyte": (10**3, KIB), "千字节": (10**3, KIB),
    "tib": (TIB,), "tb": (10**12, TIB), "t": (10**12, TIB), "terabytes": (10**12,), "terabyte": (10**12,),
    "gib": (GIB,), "gb": (10**9, GIB), "g": (10**9, GIB), "gigabytes": (10**9, GIB), "gigabyte": (10**9, GIB),
    "吉字节": (10**9, GIB), "千兆": (10**9, GIB), "个g": (10**9, GIB),
    "mib": (MIB,), "mb": (10**6, MIB), "m": (10**6, MIB), "megabytes": (10**6, MIB), "megabyte": (10**6, MIB),
    "兆字节": (10**6, MIB), "兆": (10**6, MIB),
    "kib": (KIB,), "kb": (10**3, KIB), "k": (10**3, KIB), "kilobytes": (10**3, KIB),
    "bytes": (1,), "byte": (1,), "b": (1,), "字节": (1,),
}  # fmt: skip
_UNIT_NAMES = {
    10**15: "PB",
    PIB: "PiB",
    10**12: "TB",
    TIB: "TiB",
    10**9: "GB",
    GIB: "GiB",
    10**6: "MB",
    MIB: "MiB",
    10**3: "KB",
}
_UNIT_NAMES.update({KIB: "KiB", 1: "bytes"})
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUM = (
    r"\d+(?:,\d{3})*(?:\.\d+)?(?:\s*(?:e|x\s*10\s*\^|\*\s*10\s*\^|\*\s*10\s*\*\*|×\s*10\s*\^?)\s*[+-]?\d+)?"
)
_FIGURE = re.compile(
    rf"(?<![a-z0-9.])({_NUM})(?![\d]|[.,]\d)(?:\s*(?:-|–|~|to|到|至)\s*({_NUM}))?\s*({_UNIT_RE})?(?![a-z])"
)
_NEGATIVE = re.compile(r"(?<![\w.])[-−]\s?\d|\bminus\s+\d|负\s*\d")  # "-5 GB", "minus 5", "负5"
_NUMERAL_UNITS = (("千兆字节", "gb"), ("千兆", "gb"), ("千字节", "kb"))
_TEN_THOUSANDS = re.compile(r"(\d+(?:\.\d+)?)\s*(万|亿)")  # "1.2万", "5亿" (the words are read first)
_COUNT_NOUN = re.compile(
    r"^\s*(?:x\s*)?(?:张|块|台|卡|个\s*gpu|个|gpus?\b|cards?\b|devices?\b|[a-z]*\d{2,4}[a-z]*s?\b|a100s?|h100s?|h200s?)"
)
_APPROX = re.compile(
    r"about|around|approx(?:imately)?\.?|roughly|nearly|almost|~|≈|大概|大约|约|差不多|左右|将近"
)
_HINT = re.compile(
    r"^\s*(?:hint|a hint|hint please|give me a hint|clue|help|\?|提示|给个提示|给点提示|提示一下|求提示|不会)\s*[.!。！?？]*\s*$"
)
_SAME = re.compile(
    r"\b(?:same|unchanged|no change|does not change|doesn't change|won't change|not change|no effect|"
    r"stays? the same|identical)\b|不变|没变|一样|相同|不会变|没有变化|没影响|没有影响|不影响"
)
_NO = re.compile(
    r"\b(?:no|nope|not fit|doesn't fit|does not fit|won't fit|will not fit|can't|cannot|can not|oom|out of memory|"
    r"too (?:big|large|much))\b|放不下|装不下|不能|不行|不可以|不够|跑不了|跑不起来|塞不下|不会放得下|爆显存|否"
)
_YES = re.compile(
    r"\b(?:yes|yep|yeah|sure|fits|it fits|will fit|can|ok|okay|enough)\b|放得下|装得下|能|可以|够|没问题|是的|行"
)


@dataclass(frozen=True)
class ParsedAnswer:
    """What a free-text answer says. `readings` are byte values (the literal reading first)."""

    text: str
    hint: bool = False
    same: bool = False
    fits: bool | None = None
    count: int | None = None
    number: float | None = None  # the figure as written, before its unit
    unit: str | None = None  # as written (lower-case), None when bare
    readings: tuple[tuple[int, str], ...] = field(default_factory=tuple)  # (bytes, unit name)
    approximate: bool = False
    negative: bool = False  # a figure written with a minus sign: memory is never negative
    too_large: bool = False  # a figure beyond MOST_BYTES (or beyond a float): not a memory size

    @property
    def bytes(self) -> int | None:
        return self.readings[0][0] if self.readings else None

    @property
    def empty(self) -> bool:
        return not (
            self.hint or self.same or self.fits is not None or self.count is not None or self.readings
        )


def normalise(text: str) -> str:
    """Full-width digits and punctuation to ASCII (NFKC), lower case, Chinese commas as spaces."""
    t = unicodedata.normalize("NFKC", text).lower()
    return t.replace("，", " , ").replace("、", " , ").replace("。", " . ")


def _number(raw: str) -> float:
    """The figure's value; infinity for one beyond a float ("1e999", "3x10^99999")."""
    raw = raw.replace(",", "").replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(?:(?:x10\^|\*10\^|\*10\*\*|×10\^?)([+-]?\d+))?", raw)
    try:
        if m and m.group(2) is not None:
            exponent = int(m.group(2)) if len(m.group(2)) < 6 else (400 if m.group(2)[0] != "-" else -400)
            return float(m.group(1)) * 10.0**exponent
        return float(raw)
    except OverflowError:
        return math.inf


def _ten_thousands(match: re.Match[str]) -> str:
    """ "1.2万" -> "12000", "5亿" -> "500000000" (万 = 10^4, 亿 = 10^8)."""
    value = float(match.group(1)) * (10**4 if match.group(2) == "万" else 10**8)
    return f"{value:.0f}" if value.is_integer() else f"{value}"


def _figures(t: str) -> list[tuple[float, str | None, int]]:
    """(value, unit, end position) of every number in the normalised text; ranges as their middle."""
    found = []
    for m in _FIGURE.finditer(t):
        value = _number(m.group(1))
        if m.group(2):
            value = (value + _number(m.group(2))) / 2
        found.append((value, m.group(3), m.end(1) if not m.group(2) else m.end(2)))
    return found


def parse_answer(text: str, default_unit: str = "g") -> ParsedAnswer:
    """Read a free-text answer. `default_unit` is how a bare number is read ("g": GB or GiB)."""
    raw = text.strip()
    t = normalise(raw)
    if _HINT.match(t):
        return ParsedAnswer(text=raw, hint=True)
    same = bool(_SAME.search(t))
    if same:  # "一样" must not become "1样" below
        t = _SAME.sub(" ", t)
    for word, unit in _NUMERAL_UNITS:  # unit words that hold a numeral (千) are units, not "1000"
        t = t.replace(word, unit)
    t = _TEN_THOUSANDS.sub(_ten_thousands, t)  # "1.2万" before the numerals' reading sees a lone 万
    t = _TEN_THOUSANDS.sub(_ten_thousands, replace_zh_numbers(replace_en_numbers(t)))
    approximate = bool(_APPROX.search(t))
    negative = bool(_NEGATIVE.search(t))

    figures = _figures(t)
    count = None
    memory: list[tuple[float, str | None]] = []
    bare: list[float] = []
    for value, unit, end in figures:
        rest = t[end:]
        if unit is None and _COUNT_NOUN.match(rest):
            count = round(value)
            continue
        if unit in ("b",) and value < 10_000:  # "7B" in an answer is a parameter count, not 7 bytes
            continue
        if unit is None:
            bare.append(value)
        else:
            memory.append((value, unit))
    readings: tuple[tuple[int, str], ...] = ()
    number, unit_written = None, None
    if memory:
        number, unit_written = memory[-1]
    elif bare and count is None:
        number = bare[-1]
    too_large = number is not None and not number * _UNITS[unit_written or default_unit][0] <= MOST_BYTES
    if number is not None and not too_large:
        unit_key = unit_written or default_unit
        readings = tuple((round(number * mult), _UNIT_NAMES[mult]) for mult in _UNITS[unit_key])
    if count is None and bare and not memory and number is not None and float(number).is_integer():
        count = int(number)  # a bare integer may also be a count ("2")

    fits: bool | None = None
    if _NO.search(t):
        fits = False
    elif _YES.search(t):
        fits = True
    return ParsedAnswer(
        text=raw,
        same=same,
        fits=fits,
        count=count,
        number=number,
        unit=unit_written,
        readings=readings,
        approximate=approximate,
        negative=negative,
        too_large=too_large,
    )
