"""Component formulas are in no particular language: symbols, units, numbers and library or kernel names,
each symbol said in words by prompts/<lang>/formulas.toml [symbols] (the legend under the breakdown)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from service.agent.formula_text import SYMBOL, formula_symbols, formula_tables, legend_lines
from service.agent.prompt_files import load_toml
from service.agent.render import render_answer
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.result import Component
from tools.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent

# Identifiers a formula may hold that are not symbols of the legend: the multiplication sign, units,
# functions, number formats, parallel groups, library, kernel, schedule and module names. Closed: a new
# word in a formula is either added to the legend (both languages) or, if it is a name, here.
NOT_SYMBOLS = frozenset(
    {
        "x",  # multiplication
        "MiB",
        "min",
        "max",
        "sum",
        "cdiv",  # ceiling division (vLLM's blocks)
        "pad256",  # llama.cpp's GGML_PAD(n, 256)
        # number formats
        "bf16",
        "f16",
        "fp16",
        "fp32",
        "fp8",
        "fp4",
        "nf4",
        "int8",
        "awq",
        "gptq",
        "GGUF",
        "EXL2",
        "Q4_K_M",
        "Q6_K",
        "Q8_0",
        # parallel groups and libraries
        "TP",
        "DP",
        "PP",
        "CP",
        "EP",
        "ZeRO",
        "DeepSpeed",
        "DoRA",
        "lm_head",
        "embed_tokens",
        # attention kernels (Scenario.attention's names) and SDPA
        "flash",
        "eager",
        "math",
        "SDPA",
    }
)
GGUF_TYPE = re.compile(r"I?Q[1-8](?:_K)?(?:_[0-9A-Z]{1,3})?")  # any GGUF file type a weights formula names


def _components(obj: Any) -> list[dict[str, Any]]:
    """Every component-shaped dict of a corpus entry (RL estimates nest models' parts)."""
    if isinstance(obj, dict):
        found = [obj] if "formula" in obj and "substituted" in obj and "bytes" in obj else []
        return found + [c for v in obj.values() for c in _components(v)]
    if isinstance(obj, list):
        return [c for v in obj for c in _components(v)]
    return []


def _known(word: str, symbols: dict[str, str]) -> bool:
    return word in symbols or word in NOT_SYMBOLS or bool(GGUF_TYPE.fullmatch(word))


def test_both_languages_define_the_same_symbols_in_their_own_words() -> None:
    en, zh = formula_tables("en")[0], formula_tables("zh")[0]
    assert set(en) == set(zh) and len(en) > 80
    assert not set(en) & NOT_SYMBOLS
    for sym in en:
        assert SYMBOL.fullmatch(sym), sym
        assert en[sym].strip() and zh[sym].strip(), sym
        assert en[sym] != zh[sym], sym  # said in Chinese, not copied
        assert re.search(r"[\u4e00-\u9fff]", zh[sym]), (sym, zh[sym])
    for lang in ("en", "zh"):
        text = formula_tables(lang)[1]
        assert "${symbol}" in text["legend_item"] and "${meaning}" in text["legend_item"]
        assert text["legend_title"]


def test_every_corpus_formula_is_symbols_units_and_names_only() -> None:
    """All 12,662 components of the golden corpus (test_golden_corpus proves it is today's output):
    every identifier of `formula` and `substituted` is a legend symbol (defined in both languages) or on
    the closed NOT_SYMBOLS list; no English word is left."""
    symbols = formula_tables("en")[0]
    count, used = 0, set()
    for entry in read_corpus():
        for data in _components(entry.get("estimate") or {}):
            words = formula_symbols((data["formula"], data["substituted"]))
            unknown = [w for w in words if not _known(w, symbols)]
            assert not unknown, (unknown, data["label_code"], data["formula"], data["substituted"])
            used |= set(words) & set(symbols)
            count += 1
    assert count >= 12_662, count
    assert len(used) > 70, sorted(set(symbols) - used)


def test_every_legend_symbol_is_one_tools_can_write() -> None:
    """No dead entries: each symbol appears in the estimator's source (tools/)."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tools").rglob("*.py"))
    missing = [
        sym
        for sym in formula_tables("en")[0]
        if not re.search(rf"(?<![A-Za-z0-9_]){sym}(?![A-Za-z0-9_])", source)
    ]
    assert not missing, missing


def test_no_word_translation_table_is_left() -> None:
    assert "formula_terms" not in load_toml("zh", "labels.toml")
    render_py = (ROOT / "service" / "agent" / "render.py").read_text(encoding="utf-8")
    assert "localise_terms" not in render_py and "formula_terms" not in render_py


SAMPLE = (
    Scenario(model="llama-2-7b", task="full_finetune", gpu="a100"),
    Scenario(model="qwen2.5-14b", task="qlora", gpu="4090"),
    Scenario(model="llama-3-8b", task="inference", gpu="4090", engine="vllm"),
    Scenario(model="llama-2-7b", task="inference", gpu="4090", weight_dtype="q4_k_m"),
    Scenario(model="llama-3-8b", task="dpo", gpu="a100", num_gpus=4),
    Scenario(model="llama-2-13b", task="full_finetune", gpu="h100", num_gpus=8, zero_stage=3, pp=2),
)


@pytest.mark.parametrize("scenario", SAMPLE, ids=lambda s: f"{s.model}-{s.task}-{s.engine or ''}")
def test_chinese_answers_say_every_symbol_of_their_formulas_in_chinese(scenario: Scenario) -> None:
    e = estimate(scenario, plan=False)
    zh, en = render_answer(e, "zh"), render_answer(e, "en")
    symbols_zh, symbols_en = formula_tables("zh")[0], formula_tables("en")[0]
    comps: list[Component] = list(e.components)
    used = [
        w for w in formula_symbols(t for c in comps for t in (c.formula, c.substituted)) if w in symbols_zh
    ]
    assert used, scenario
    assert "公式中的符号：" in zh and "Symbols in the formulas:" not in zh
    for sym in used:
        assert f"  - `{sym}`：{symbols_zh[sym]}" in zh, sym
        assert f"  - `{sym}`: {symbols_en[sym]}" in en, sym
        assert symbols_en[sym] not in zh, sym
    legend = legend_lines(comps, "zh")
    assert len(legend) == len(used) + 1  # each used symbol once, nothing else
    for c in comps:  # the formulas are the estimator's own, in both answers
        assert f"`{c.formula}` = `{c.substituted}`" in zh


def test_coach_breakdown_says_its_formula_symbols_in_the_learners_language() -> None:
    from service.coach.answers import parse_answer
    from service.coach.expected import estimate_for, expected_value
    from service.coach.grading import grade
    from service.coach.topics import seed_question

    spec = seed_question("weights")
    est = estimate_for(spec.scenario, spec.quantity)
    weights = est.component("weights")
    assert weights.formula == "P_local x 2 B"
    zh = grade(spec, est, expected_value(est, spec.quantity), parse_answer("7 GB", default_unit="g"), "zh")
    en = grade(spec, est, expected_value(est, spec.quantity), parse_answer("7 GB", default_unit="g"), "en")
    assert f"  - `P_local`：{formula_tables('zh')[0]['P_local']}" in zh.explanation
    assert f"  - `P_local`: {formula_tables('en')[0]['P_local']}" in en.explanation
    assert "公式中的符号：" in zh.explanation and "Symbols in the formulas:" not in zh.explanation
