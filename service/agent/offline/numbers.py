"""Numbers as people type them: "4k", "32K", "8192", "70亿", "两张", "8卡", "2x", "1.5B", "2e-5".

Pure functions; every one returns None when the text does not say a number.
"""

from __future__ import annotations

import re

# Chinese numerals people use for counts ("两张4090", "八卡", "十六张").
_ZH_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "单": 1, "二": 2, "两": 2, "双": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_EN_WORDS = {
    "a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "dual": 2, "a pair of": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16,
    "thirty-two": 32, "sixty-four": 64,
}  # fmt: skip

ZH_NUMERAL = "[零〇一单二两双三四五六七八九十百]+"
EN_COUNT_WORD = "|".join(sorted((re.escape(w) for w in _EN_WORDS), key=len, reverse=True))


def zh_numeral(text: str) -> int | None:
    """'两' -> 2, '十六' -> 16, '三十二' -> 32, '一百' -> 100; digits pass through."""
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        return int(text)
    if "百" in text:
        head, _, tail = text.partition("百")
        hundreds = _ZH_DIGITS.get(head, 1) if head else 1
        rest = zh_numeral(tail) if tail else 0
        return None if rest is None else hundreds * 100 + rest
    if "十" in text:
        head, _, tail = text.partition("十")
        tens = _ZH_DIGITS.get(head, 1) if head else 1
        ones = _ZH_DIGITS.get(tail, 0) if tail else 0
        return tens * 10 + ones
    if len(text) == 1 and text in _ZH_DIGITS:
        return _ZH_DIGITS[text]
    return None


def count_word(text: str) -> int | None:
    """An English or Chinese count word or digits: 'two' -> 2, '8' -> 8, '两' -> 2."""
    t = text.strip().lower()
    if t.isdigit():
        return int(t)
    if t in _EN_WORDS:
        return _EN_WORDS[t]
    return zh_numeral(t)


_SUFFIX = {"k": 1024, "m": 1024 * 1024}


def token_count(text: str) -> int | None:
    """Sequence lengths: '4k' -> 4096, '32K' -> 32768, '128k' -> 131072, '8192' -> 8192, '1.5k' -> 1536.

    A 'k' on a context length means 1024 tokens, as model cards use it (Llama-3.1's "128K" = 131,072).
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM])?\s*", text)
    if not m:
        return None
    value = float(m.group(1))
    if m.group(2):
        value *= _SUFFIX[m.group(2).lower()]
    return round(value)


def plain_int(text: str) -> int | None:
    """'8', '1,024', '2k' (a batch or step count; k = 1000 here) -> int."""
    t = text.strip().replace(",", "").replace("_", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kK])?", t)
    if not m:
        return None
    value = float(m.group(1)) * (1000 if m.group(2) else 1)
    return round(value)


def float_value(text: str) -> float | None:
    """'2e-5', '0.0001', '3', '1.5' -> float."""
    try:
        return float(text.strip())
    except ValueError:
        return None


_PARAM_UNITS = {"b": 1e9, "bn": 1e9, "billion": 1e9, "m": 1e6, "million": 1e6, "t": 1e12}
_ZH_PARAM_UNITS = {"亿": 1e8, "千亿": 1e11, "万亿": 1e12, "百亿": 1e10}


def param_count(text: str) -> int | None:
    """'7B' -> 7e9, '1.5b' -> 1.5e9, '70亿' -> 7e9, '700亿' -> 7e10, '1.8万亿' -> 1.8e12, '350M' -> 3.5e8."""
    t = text.strip().lower().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(千亿|万亿|百亿|亿)", t)
    if m:
        return round(float(m.group(1)) * _ZH_PARAM_UNITS[m.group(2)])
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(billion|million|bn|b|m|t)", t)
    if m:
        return round(float(m.group(1)) * _PARAM_UNITS[m.group(2)])
    return None


def size_label(n_params: int) -> str:
    """7e9 -> '7B', 1.5e9 -> '1.5B', 5e8 -> '0.5B', 3.5e8 -> '350M': the bare-size form the catalog accepts."""
    if n_params >= 5 * 10**8:
        value = n_params / 10**9
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return f"{text}B"
    value = n_params / 10**6
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{text}M"
