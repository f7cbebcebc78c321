"""Grounding checker: which figures count, unit conversions, rounding, the streaming gate.

Reference figure: Llama-2-7B fp16 weights = 6,738,415,616 x 2 B = 13,476,831,232 B
= 12.551 GiB (/2**30) = 13.477 GB (/10**9) = 12,852.52 MiB (/2**20).
"""

from __future__ import annotations

import logging

import pytest

from service.agent.llm.grounding import AllowedFigures, GroundingGate, find_figures, ungrounded_figures
from service.agent.render import render_answer
from tools.units import fmt_gib

WEIGHTS = 13_476_831_232  # Llama-2-7B fp16 weights, bytes
HEADROOM = -3_435_973_837  # a shortfall of 3.20 GiB (3.2 x 2**30, rounded)
A100 = 85_899_345_920  # 80 GiB


def allowed() -> AllowedFigures:
    a = AllowedFigures()
    a.add_bytes([WEIGHTS, HEADROOM, A100])
    return a


def values(text: str) -> list[tuple[float, str]]:
    return [(f.value, f.unit) for f in find_figures(text)]


# ---- what is a memory figure --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Weights need 12.55 GiB.", [(12.55, "gib")]),
        ("about 13.5 GB of weights", [(13.5, "gb")]),
        ("12,853 MiB or 13,477 MB", [(12853.0, "mib"), (13477.0, "mb")]),
        ("13,476,831,232 B in total", [(13476831232.0, "b")]),
        ("13476831232 bytes", [(13476831232.0, "bytes")]),
        ("1.5 TB of host RAM", [(1.5, "tb")]),
        ("24 gigabytes", [(24.0, "gigabytes")]),
        ("12-13 GiB", [(12.0, "gib"), (13.0, "gib")]),
        ("headroom -3.2 GiB", [(3.2, "gib")]),
    ],
)
def test_english_figures_are_found(text: str, expected: list[tuple[float, str]]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("权重大约需要14G显存", [(14.0, "g")]),
        ("两张 24GB 的 4090", [(24.0, "gb")]),
        ("总共 12.55 GiB，余量 3.2GiB。", [(12.55, "gib"), (3.2, "gib")]),
        ("需要 13,476,831,232 字节", [(13476831232.0, "字节")]),
        ("全宽数字：１２．５５ＧｉＢ", [(12.55, "gib")]),
        ("大概 12到13GB", [(12.0, "gb"), (13.0, "gb")]),
    ],
)
def test_chinese_figures_are_found(text: str, expected: list[tuple[float, str]]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Llama-2-7B has 6.74B parameters; a 70B model is ten times larger.",
        "Qwen3-30B-A3B activates 3.3B parameters per token.",
        "70亿参数的模型，LoRA 只训练 4.19M 参数",
        "fp16 is 2 bytes per parameter; mixed precision Adam is 16 B/param, the 16x rule.",
        "80% of the card, 32k context, batch 8, ZeRO-3, TP=2, 8x7B",
        "H100 bandwidth is 3.35 TB/s and NVLink 900 GB/s",
        "an A100-80GB or an H100-80G",
        "gradient accumulation adds 0 GiB",
        "每个参数 2 字节，8卡H800，32K上下文",
    ],
)
def test_non_memory_numbers_are_not_figures(text: str) -> None:
    assert find_figures(text) == []


# ---- matching: unit conversion and shown precision ----------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "12.55 GiB",  # binary, 2 decimals
        "12.6 GiB",  # 1 decimal: 12.551 rounds to 12.6
        "13 GiB",  # 0 decimals: within 0.5
        "13.48 GB",  # decimal GB (10**9)
        "13.5 GB",
        "12.55 GB",  # GB used loosely for GiB, as many people do
        "12852.5 MiB",
        "12,853 MiB",  # 12,852.52 shown as an integer
        "13,477 MB",
        "13,476,831,232 B",
        "13476831232 bytes",
        "约13G显存",  # Chinese shorthand
        "0.0135 TB",  # 13.477e9 / 1e12
        "需要 13,476,831,232 字节",
        "short by 3.2 GiB",  # |headroom|
        "one 80 GB card",  # the GPU's memory (80 GiB, NVIDIA's "80GB")
        "80.00 GiB",
    ],
)
def test_figures_matching_a_tool_figure_pass(text: str) -> None:
    assert ungrounded_figures(text, allowed()) == []


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("12.5 GiB", "12.5 GiB"),  # 12.551 shown with 1 decimal is 12.6, not 12.5
        ("12.54 GiB", "12.54 GiB"),
        ("14 GB", "14 GB"),  # 13.48 GB rounds to 13
        ("12,800 MiB", "12,800 MiB"),
        ("13,476,831,233 B", "13,476,831,233 B"),  # bytes are exact
        ("权重需要14G显存", "14G"),
        ("总共 26.10 GiB", "26.10 GiB"),
        ("12-13 GiB", "12-13 GiB"),  # the 12 of the range
        ("short by 4 GiB", "4 GiB"),
    ],
)
def test_invented_or_misrounded_figures_are_caught(text: str, bad: str) -> None:
    caught = ungrounded_figures(text, allowed())
    assert [f.text for f in caught] == [bad]


def test_user_figures_are_allowed() -> None:
    a = AllowedFigures()
    a.add_text("Can I fine-tune on my 24GB card with 64 GB of RAM?")
    assert ungrounded_figures("Your 24GB card and 64 GB of RAM", a) == []
    assert [f.text for f in ungrounded_figures("Your 48GB card", a)] == ["48GB"]


# ---- the streaming gate -------------------------------------------------------------------------


def test_gate_releases_only_whole_checked_sentences() -> None:
    gate = GroundingGate(allowed())
    text = "The weights take 12.55 GiB. It fits on one A100 with 80.00 GiB.\nDone"
    released: list[str] = []
    for ch in text:  # one character at a time, the worst case for splitting
        result = gate.feed(ch)
        assert not result.violations
        if result.released:
            released.append(result.released)
    # never released mid-figure: "12." is not a sentence end
    assert released[0] == "The weights take 12.55 GiB. "
    assert len(released) >= 2
    assert gate.flush().released == "Done"
    assert gate.released == text


def test_gate_stops_at_the_bad_sentence_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    gate = GroundingGate(allowed())
    with caplog.at_level(logging.WARNING, logger="vramwise.grounding"):
        first = gate.feed("Weights: 12.55 GiB. Gradients: 12.55 GiB. ")
        second = gate.feed("Adam states: 50.20 GiB. Total: 75.30 GiB.\n")
    assert first.released == "Weights: 12.55 GiB. Gradients: 12.55 GiB. "
    assert second.released == ""  # "Adam states: 50.20 GiB." is one claim: held whole, nothing beyond
    assert [f.text for f in second.violations] == ["50.20 GiB"]
    assert "50.20 GiB" not in gate.released
    assert "75.30 GiB" not in gate.released
    assert any("50.20 GiB" in r.getMessage() for r in caplog.records if r.name == "vramwise.grounding")


def test_gate_chinese_sentences() -> None:
    gate = GroundingGate(allowed())
    ok = gate.feed("权重需要 12.55 GiB。可以放进一张 80GB 的 A100。")
    assert ok.released == "权重需要 12.55 GiB。可以放进一张 80GB 的 A100。"
    bad = gate.feed("优化器状态大约 50G。")
    assert bad.released == ""
    assert [f.text for f in bad.violations] == ["50G"]


def test_gate_releases_long_unpunctuated_text_at_a_safe_space() -> None:
    gate = GroundingGate(allowed())
    words = " ".join(["memory"] * 120)  # 839 characters, no sentence end
    result = gate.feed(words + " ")
    assert result.released and not result.violations
    assert words.startswith(result.released.rstrip())
    assert gate.flush().released.strip() == words[len(result.released) :].strip()


def test_gate_never_splits_a_number_from_its_unit() -> None:
    gate = GroundingGate(allowed())
    assert gate.feed("Fine. Total: 50.2").released == "Fine. "  # a label and its figure stay together
    assert gate.feed("0 GiB on one card.").released == ""  # no whitespace after "." yet: held
    result = gate.flush()
    assert [f.text for f in result.violations] == ["50.20 GiB"]
    assert gate.released == "Fine. "


# ---- cross-check against the real estimator and the templated answers ---------------------------

TEMPLATED_CASES = [
    {"model": "llama-2-7b", "task": "inference", "gpu": "a100-80gb"},
    {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "batch_size": 4, "seq_len": 2048},
    {"model": "qwen2.5-7b", "task": "lora", "gpu": "4090", "lora_rank": 16},
    {"model": "llama-2-7b", "task": "qlora", "gpu": "t4"},
    {"model": "llama-2-70b", "task": "full_finetune", "gpu": "h100", "num_gpus": 8, "zero_stage": 3},
    {"model": "llama-2-70b", "task": "inference", "gpu": "h100", "num_gpus": 4, "tp": 4, "seq_len": 32768},
]


async def _allowed_after_tool(args: dict[str, object]) -> tuple[AllowedFigures, object]:
    """The allowed figures exactly as the LLM agent builds them after one estimate_memory call."""
    from service.agent.llm.agent import allow_tool_run
    from service.agent.llm.tools import ToolRecorder, build_tools

    recorder = ToolRecorder()
    tool = next(t for t in build_tools(recorder) if t.name == "estimate_memory")
    await tool.ainvoke(args)
    a = AllowedFigures()
    allow_tool_run(a, recorder.runs[-1])
    return a, recorder.estimates[-1]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("args", TEMPLATED_CASES, ids=lambda a: f"{a['model']}-{a['task']}")
async def test_templated_answers_are_grounded_and_a_changed_figure_is_not(
    args: dict[str, object], language: str
) -> None:
    """No false positives on real 2-5 kB answers; one altered figure in them is caught."""
    from service.agent.render import render_answer

    a, est = await _allowed_after_tool(args)
    text = render_answer(est, language)
    assert len(find_figures(text)) >= 20  # the checker sees the figures...
    assert ungrounded_figures(text, a) == []  # ...and all of them are the tool's
    total = fmt_gib(est.per_gpu.total_bytes)
    assert total in text
    wrong = fmt_gib(est.per_gpu.total_bytes * 1.1)
    assert [f.text for f in ungrounded_figures(text.replace(total, wrong, 1), a)] == [wrong]


GROUNDED_CASES = [
    {"model": "llama-3-70b", "task": "inference", "gpu": "h100", "num_gpus": 2},
    {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100"},
    {"model": "qwen2.5-72b", "task": "inference", "gpu": "a800", "num_gpus": 3},
    {"model": "deepseek-r1", "task": "inference", "gpu": "h200", "num_gpus": 8},
    {"model": "qwen2.5-14b", "task": "qlora", "gpu": "4090"},
    {"model": "llama-2-7b", "task": "inference", "gpu": "a100"},  # max_model_len line
    {"model": "deepseek-v3", "task": "inference", "gpu": "a100", "num_gpus": 8},  # FP8 note (zh: 1 字节)
    {"model": "llama-3-8b", "task": "inference", "gpu": "4090", "seq_len": 32768},  # context note
]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("args", GROUNDED_CASES, ids=lambda a: f"{a['model']}-{a['task']}")
async def test_rendered_answers_pass_the_grounding_checker(args: dict[str, object], language: str) -> None:
    from service.agent.llm.agent import allow_tool_run
    from service.agent.llm.grounding import AllowedFigures, ungrounded_figures
    from service.agent.llm.tools import ToolRecorder, build_tools

    recorder = ToolRecorder()
    tool = next(t for t in build_tools(recorder) if t.name == "estimate_memory")
    await tool.ainvoke(args)
    allowed = AllowedFigures()
    allow_tool_run(allowed, recorder.runs[-1])
    text = render_answer(recorder.estimates[-1], language)
    assert ungrounded_figures(text, allowed) == []
