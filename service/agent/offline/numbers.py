"""Numbers as people type them: "4k", "32K", "8192", "70亿", "两张", "8卡", "2x", "1.5B", "2e-5".

Pure functions; every one returns None when the text does not say a number.
"""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx

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
    m = rx.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM])?\s*", text)
    if not m:
        return None
    value = float(m.group(1))
    if m.group(2):
        value *= _SUFFIX[m.group(2).lower()]
    return round(value)


def plain_int(text: str) -> int | None:
    """'8', '1,024', '2k' (a batch or step count; k = 1000 here) -> int."""
    t = text.strip().replace(",", "").replace("_", "")
    m = rx.fullmatch(r"(\d+(?:\.\d+)?)([kK])?", t)
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
    m = rx.fullmatch(r"(\d+(?:\.\d+)?)(千亿|万亿|百亿|亿)", t)
    if m:
        return round(float(m.group(1)) * _ZH_PARAM_UNITS[m.group(2)])
    m = rx.fullmatch(r"(\d+(?:\.\d+)?)(billion|million|bn|b|m|t)", t)
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


# --- written-out numbers in free-text answers ("one hundred twelve", "一百一十二", "十三点五") --------------

_EN_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_EN_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}  # fmt: skip
_EN_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6}
EN_NUMBER_WORD = "|".join(sorted([*_EN_UNITS, *_EN_TENS, *_EN_SCALES, "point"], key=len, reverse=True))
_EN_NUMBER_RUN = rx.compile(
    rf"(?<![a-z])(?:a hundred|{'|'.join([*_EN_UNITS, *_EN_TENS])})(?:[\s-]+(?:and\s+)?(?:{EN_NUMBER_WORD}))*(?![a-z])"
)


def en_number(text: str) -> float | None:
    """'one hundred twelve' -> 112, 'a hundred and four' -> 104, 'thirteen point five' -> 13.5,
    'twenty-six' -> 26; None when the words are not a number."""
    words = [w for w in re.split(r"[\s-]+", text.strip().lower()) if w and w != "and"]
    if words and words[0] == "a":
        words[0] = "one"
    if not words:
        return None
    decimals = ""
    if "point" in words:
        i = words.index("point")
        tail = words[i + 1 :]
        if not tail or any(w not in _EN_UNITS or _EN_UNITS[w] > 9 for w in tail):
            return None
        decimals = "".join(str(_EN_UNITS[w]) for w in tail)
        words = words[:i]
    total, current = 0, 0
    for w in words:
        if w in _EN_UNITS:
            current += _EN_UNITS[w]
        elif w in _EN_TENS:
            current += _EN_TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w in _EN_SCALES:
            total += max(current, 1) * _EN_SCALES[w]
            current = 0
        else:
            return None
    whole = total + current
    return float(f"{whole}.{decimals}") if decimals else float(whole)


def replace_en_numbers(text: str) -> str:
    """Every run of English number words in `text` (lower-case) written as digits."""

    def sub(m: re.Match[str]) -> str:
        value = en_number(m.group(0))
        if value is None:
            return m.group(0)
        return f"{value:g}" if value != int(value) else str(int(value))

    return _EN_NUMBER_RUN.sub(sub, text)


_ZH_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
ZH_NUMBER_CHARS = "零〇一二两三四五六七八九十百千万点"
_ZH_NUMBER_RUN = rx.compile(rf"[{ZH_NUMBER_CHARS}]+")


def zh_number(text: str) -> float | None:
    """'一百一十二' -> 112, '十三点五' -> 13.5, '一千零二十四' -> 1024, '两万' -> 20000, '三' -> 3."""
    text = text.strip()
    if not text or any(ch not in ZH_NUMBER_CHARS for ch in text):
        return None
    whole, _, frac = text.partition("点")
    decimals = ""
    if frac:
        if any(ch not in _ZH_DIGITS for ch in frac):
            return None
        decimals = "".join(str(_ZH_DIGITS[ch]) for ch in frac)
    total, section, digit = 0, 0, None
    for ch in whole:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        elif ch in _ZH_SMALL_UNITS:
            section += (1 if digit is None else digit) * _ZH_SMALL_UNITS[ch]
            digit = None
        elif ch == "万":
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            return None
    value = total + section + (digit or 0)
    if not whole:
        return None
    return float(f"{value}.{decimals}") if decimals else float(value)


def replace_zh_numbers(text: str) -> str:
    """Every run of Chinese numerals in `text` written as digits ('一百一十二GB' -> '112GB')."""

    def sub(m: re.Match[str]) -> str:
        run = m.group(0)
        value = zh_number(run)
        if value is None:
            return run
        return f"{value:g}" if value != int(value) else str(int(value))

    return _ZH_NUMBER_RUN.sub(sub, text)
