"""The coach's answer parser over written answers, half of them Chinese: units (GB/GiB/G/MB/bytes,
字节/兆), number words ("one hundred twelve", "一百一十二"), scientific notation, ranges, counts of GPUs,
verdicts, "unchanged", hint requests. Each asserts the parsed value."""

from __future__ import annotations

import pytest

from service.coach.answers import parse_answer

G, GI, M, MI = 10**9, 2**30, 10**6, 2**20

# (answer, the literal byte reading, the other reading of an ambiguous unit or None)
BYTES_EN = [
    ("about 112 GB", 112 * G, 112 * GI),
    ("~104 GiB", 104 * GI, None),
    ("1.2e11 bytes", 120 * G, None),
    ("1.2 x 10^11 bytes", 120 * G, None),
    ("roughly 13.5 GB", 13.5 * G, 13.5 * GI),
    ("13.48GB", 13.48 * G, 13.48 * GI),
    ("one hundred twelve GB", 112 * G, 112 * GI),
    ("a hundred and twelve G", 112 * G, 112 * GI),
    ("fifty-four gigabytes", 54 * G, 54 * GI),
    ("thirteen point five GiB", 13.5 * GI, None),
    ("7B x 16 = 112 GB", 112 * G, 112 * GI),
    ("I think it's around 26.9 GB for the master copy", 26.9 * G, 26.9 * GI),
    ("100-110 GB", 105 * G, 105 * GI),
    ("0.5 MB per token", 0.5 * M, 0.5 * MI),
    ("512 KiB", 512 * 1024, None),
    ("13,476,831,232 bytes", 13_476_831_232, None),
    ("1.5 TB", 1.5 * 10**12, 1.5 * 2**40),
    ("it needs 80G", 80 * G, 80 * GI),
    ("approx. 60 gb", 60 * G, 60 * GI),
    ("2048 MiB", 2048 * MI, None),
    ("≈ 4 GiB", 4 * GI, None),
    ("32", 32 * G, 32 * GI),  # a bare number is read in the question's unit (GB or GiB)
]
BYTES_ZH = [
    ("大概110G", 110 * G, 110 * GI),
    ("一百一十二GB", 112 * G, 112 * GI),
    ("大约 104 GiB", 104 * GI, None),
    ("约 26.9 GB", 26.9 * G, 26.9 * GI),
    ("十三点五G左右", 13.5 * G, 13.5 * GI),
    ("1.2×10¹¹字节", 120 * G, None),
    ("1.2e11 字节", 120 * G, None),
    ("差不多五十四个G", 54 * G, 54 * GI),
    ("显存大概要 112 GB", 112 * G, 112 * GI),
    ("７B×16=112GB", 112 * G, 112 * GI),  # full-width digits
    ("５６ＧＢ", 56 * G, 56 * GI),
    ("两百GB", 200 * G, 200 * GI),
    ("二十六点九 GB", 26.9 * G, 26.9 * GI),
    ("0.5兆", 0.5 * M, 0.5 * MI),
    ("每个 token 大约 0.5 MB", 0.5 * M, 0.5 * MI),
    ("一千零二十四 MiB", 1024 * MI, None),
    ("100到110GB之间", 105 * G, 105 * GI),
    ("将近 80G", 80 * G, 80 * GI),
    ("13476831232字节", 13_476_831_232, None),
    ("四十", 40 * G, 40 * GI),
    ("我算的是十四GB", 14 * G, 14 * GI),
    ("权重大约 12.55 GiB", 12.55 * GI, None),
]

COUNTS_EN = [
    ("two A100s", 2, None),
    ("2 GPUs", 2, None),
    ("it needs 4 H100s", 4, None),
    ("eight cards", 8, None),
    ("16 GPUs with TP 8", 16, None),
    ("no, it needs two 4090s", 2, False),
    ("three devices", 3, None),
    ("4 x A100", 4, None),
    ("at least 8 GPUs", 8, None),
]
COUNTS_ZH = [
    ("放不下，需要两张卡", 2, False),
    ("8卡", 8, None),
    ("需要 4 张 H100", 4, None),
    ("至少十六张卡", 16, None),
    ("三块 A100", 3, None),
    ("两台", 2, None),
    ("一张就够了", 1, True),
    ("要 4 个 GPU", 4, None),
    ("单卡放不下，得两张", 2, False),
]

VERDICTS_EN = [
    ("no", False),
    ("No.", False),
    ("yes", True),
    ("Yes, it fits", True),
    ("it does not fit", False),
    ("won't fit, OOM", False),
    ("it fits with room to spare", True),
    ("nope", False),
    ("can't", False),
]
VERDICTS_ZH = [
    ("不能", False),
    ("能", True),
    ("放不下", False),
    ("放得下", True),
    ("可以", True),
    ("不行，会爆显存", False),
    ("装不下", False),
    ("没问题", True),
    ("不够", False),
]

SAME = [("the same", True), ("unchanged", True), ("no change", True), ("不变", True), ("和之前一样", True)]
SAME += [("显存没有变化", True), ("相同", True), ("it stays the same, 18 GB", True)]
HINTS = ["hint", "Hint please", "?", "提示", "给点提示", "提示一下", "求提示"]

BYTES = BYTES_EN + BYTES_ZH
COUNTS = COUNTS_EN + COUNTS_ZH
VERDICTS = VERDICTS_EN + VERDICTS_ZH


def _is_zh(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" for ch in text)


def test_at_least_80_answers_half_of_them_chinese() -> None:
    texts = [t for t, *_ in BYTES + COUNTS + VERDICTS] + [t for t, _ in SAME] + HINTS
    assert len(texts) >= 80
    assert sum(_is_zh(t) for t in texts) >= len(texts) / 2


@pytest.mark.parametrize(("text", "literal", "other"), BYTES)
def test_memory_figures(text: str, literal: float, other: float | None) -> None:
    p = parse_answer(text)
    expected = [round(literal)] + ([round(other)] if other is not None else [])
    assert [b for b, _ in p.readings] == expected, (text, p)
    assert not p.hint


@pytest.mark.parametrize(("text", "count", "fits"), COUNTS)
def test_gpu_counts(text: str, count: int, fits: bool | None) -> None:
    p = parse_answer(text)
    assert p.count == count, (text, p)
    assert p.fits is fits, (text, p)
    assert p.readings == () or "tp" in text.lower()  # a count is not a memory figure


@pytest.mark.parametrize(("text", "fits"), VERDICTS)
def test_verdicts(text: str, fits: bool) -> None:
    p = parse_answer(text)
    assert p.fits is fits, (text, p)
    assert p.readings == () and p.count is None


@pytest.mark.parametrize(("text", "same"), SAME)
def test_unchanged(text: str, same: bool) -> None:
    assert parse_answer(text).same is same


@pytest.mark.parametrize("text", HINTS)
def test_hint_requests(text: str) -> None:
    p = parse_answer(text)
    assert p.hint and p.readings == ()


def test_per_token_question_reads_a_bare_number_in_megabytes() -> None:
    p = parse_answer("0.5", default_unit="m")
    assert [b for b, _ in p.readings] == [500_000, 524_288]


def test_nothing_readable() -> None:
    for text in ("", "I don't know the formula", "随便"):
        assert parse_answer(text).empty, text
