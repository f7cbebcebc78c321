"""Which GPU an estimate is for is data (layout parts with codes); every language says it."""

from __future__ import annotations

import pytest

from service.agent.assumption_text import PLACEHOLDER, with_english_text
from service.agent.component_text import gpu_role_table, gpu_role_text
from service.agent.render import render_answer
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.labels import GPU_ROLE_CODES
from tools.result import PerGpu
from tools.scenario import Scenario

LANGUAGES = ("en", "zh")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_gpu_role_code_has_a_template_using_only_its_values(language: str) -> None:
    table = gpu_role_table(language)
    for code, names in GPU_ROLE_CODES.items():
        assert code in table, (language, code)
        assert set(PLACEHOLDER.findall(table[code])) == set(names), (language, code)
    assert {"where.first", "where.last", "where.middle", "joiner"} <= set(table)


def test_tools_give_parts_and_no_words() -> None:
    e = estimate(
        Scenario(
            model="llama-2-7b", task="full_finetune", gpu="a100-80gb", pp=2, tp=2, num_gpus=8, zero_stage=1
        ),
        plan=False,
    )
    assert e.per_gpu.gpu_role is None
    assert e.per_gpu.gpu_role_parts == [
        {"code": "pp_stage", "values": {"index": 0, "of": 2, "where": "first", "layers": 16}},
        {"code": "tp_rank", "values": {"of": 2}},
        {"code": "dp_rank_zero", "values": {"of": 2, "zero": 1}},
    ]
    assert with_english_text(e).per_gpu.gpu_role == (
        "PP stage 0 of 2 (first, 16 layers), TP rank 0 of 2, DP rank 0 of 2 (ZeRO-1)"
    )
    zh = gpu_role_text(e.per_gpu, "zh")
    assert (
        zh
        == "流水线第 0 段（共 2 段，首段，16 层），张量并行 2 路中的第 0 号卡，数据并行 2 路中的第 0 号卡（ZeRO-1）"
    )
    assert f"负载最重的卡：{zh}。" in render_answer(e, "zh")
    assert "Most loaded GPU: PP stage 0 of 2 (first, 16 layers)" in render_answer(e, "en")


def test_a_single_gpu_and_a_stored_estimate() -> None:
    e = estimate(Scenario(model="llama-2-7b", task="inference", gpu="a100-80gb"), plan=False)
    assert gpu_role_text(e.per_gpu, "en") == "single GPU" and gpu_role_text(e.per_gpu, "zh") == "单卡"
    old = PerGpu.model_validate(
        {"tensor_peak_bytes": 1, "total_bytes": 1, "peak_phase": "decode", "gpu_role": "TP rank 0 of 2"}
    )
    assert gpu_role_text(old, "zh") == "TP rank 0 of 2"  # stored before the parts: its own text


def test_every_corpus_gpu_role_reads_in_both_languages() -> None:
    count = 0
    for entry in read_corpus():
        if "estimate" not in entry:
            continue
        per_gpu = PerGpu.model_validate(entry["estimate"]["per_gpu"])
        assert per_gpu.gpu_role_parts and all(p["code"] in GPU_ROLE_CODES for p in per_gpu.gpu_role_parts)
        assert gpu_role_text(per_gpu.model_copy(update={"gpu_role": None}), "en") == per_gpu.gpu_role
        zh = gpu_role_text(per_gpu, "zh") or ""
        assert "rank" not in zh and "stage" not in zh and "${" not in zh
        count += 1
    assert count == 1628
