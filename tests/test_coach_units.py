"""Issue 30, item 10: the coach's grader reads every unit and refuses impossible figures. "12 PB" was read as
12 GB, "12PiB" as 1 GB, "-5 GB" as 5 GB, "1.2万MB" as 1.2 MB, and "1e308 GB" raised OverflowError (a 500)."""

from __future__ import annotations

import pytest

from service.coach.answers import parse_answer
from service.coach.grading import grade
from service.coach.topics import seed_question

GB, GIB, PIB = 10**9, 2**30, 2**50


@pytest.mark.parametrize(
    ("answer", "readings"),
    [
        ("12 PB", ((12 * 10**15, "PB"), (12 * PIB, "PiB"))),
        ("12PiB", ((12 * PIB, "PiB"),)),
        ("3 pebibytes", ((3 * PIB, "PiB"),)),
        ("1.5 TiB", ((3 * 2**39, "TiB"),)),
        ("2 tebibytes", ((2 * 2**40, "TiB"),)),
        ("4 KiB", ((4096, "KiB"),)),
        ("500 kilobyte", ((500_000, "KB"), (512_000, "KiB"))),
        ("1.2万MB", ((12_000 * 10**6, "MB"), (12_000 * 2**20, "MiB"))),
        ("十二万MB", ((120_000 * 10**6, "MB"), (120_000 * 2**20, "MiB"))),
        ("0.5亿KB", ((5 * 10**10, "KB"), (5 * 10**7 * 1024, "KiB"))),
        ("两亿千字节", ((2 * 10**11, "KB"), (2 * 10**8 * 1024, "KiB"))),
        ("1.5万亿字节", ((15 * 10**11, "bytes"),)),
        ("一千兆", ((GB, "GB"), (GIB, "GiB"))),
        ("2拍字节", ((2 * 10**15, "PB"), (2 * PIB, "PiB"))),
        ("about 112 GB", ((112 * GB, "GB"), (112 * GIB, "GiB"))),
        ("100-120 GB", ((110 * GB, "GB"), (110 * GIB, "GiB"))),
    ],
)
def test_every_unit_is_read(answer: str, readings: tuple[tuple[int, str], ...]) -> None:
    parsed = parse_answer(answer)
    assert parsed.readings == readings
    assert not parsed.negative and not parsed.too_large


@pytest.mark.parametrize("answer", ["-5 GB", "−5 GB", "minus 5 GB", "负5GB", "负五GB", "- 112 GiB"])
def test_a_negative_figure_is_refused_with_a_hint(answer: str) -> None:
    spec = seed_question("weights")
    parsed = parse_answer(answer)
    assert parsed.negative
    g = grade(spec, None, {"bytes": 13_476_831_232}, parsed, "en")
    assert g.correct is None  # not graded: the person may answer again
    assert g.explanation.startswith("Memory is never negative: give the figure without a minus sign")
    zh = grade(spec, None, {"bytes": 13_476_831_232}, parsed, "zh")
    assert zh.explanation.startswith("显存不会是负数")


@pytest.mark.parametrize("answer", ["1e308 GB", "1e999 GB", "3x10^99999 GB", "9e20 PB", "1e400"])
def test_a_figure_beyond_any_memory_is_refused_not_a_crash(answer: str) -> None:
    spec = seed_question("weights")
    parsed = parse_answer(answer)
    assert parsed.too_large and parsed.readings == ()
    g = grade(spec, None, {"bytes": 13_476_831_232}, parsed, "en")
    assert g.correct is None
    assert "larger than any GPU memory (over 10^21 bytes)" in g.explanation


def test_a_range_and_a_hyphenated_name_are_not_negative() -> None:
    assert not parse_answer("100-120 GB").negative
    assert not parse_answer("llama-2-7b needs 14 GB").negative
    assert parse_answer("12 PB").readings[0] == (12 * 10**15, "PB")  # not 12 GB
