"""Remarks on components are data (a note code); every language says each one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.agent.assumption_text import with_english_text
from service.agent.component_text import component_note_text, note_table
from service.agent.render import render_answer
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.labels import NOTE_CODES
from tools.result import Component
from tools.scenario import Scenario

LANGUAGES = ("en", "zh")
HAN = re.compile(r"[\u4e00-\u9fff]")

# one scenario of the golden corpus raising each code, with the component that carries it
RAISED_BY = {
    "kv_cache.window_after_prefill": (
        {"model": "mistral-7b-v0.1", "task": "inference", "gpu": "a100-80gb", "seq_len": 8192},
        "kv_cache",
    ),
    "optimizer.paged": (
        {"gpu": "4090", "model": "llama-2-7b", "optimizer": "paged_adamw_8bit", "task": "qlora"},
        "optimizer_states",
    ),
    "rl.generation_gathers_weights": (
        {
            "model": "llama-2-7b",
            "task": "ppo",
            "gpu": "a100-80gb",
            "num_gpus": 32,
            "zero_stage": 3,
            "optimizer": "adamw_8bit",
            "gradient_checkpointing": True,
            "batch_size": 4,
            "seq_len": 2048,
        },
        "generation_gathered_weights",
    ),
    "rl.reference_adapters_disabled": (
        {
            "model": "baichuan2-7b",
            "task": "ppo",
            "gpu": "h20",
            "num_gpus": 2,
            "tp": 2,
            "lora_rank": 16,
            "gradient_checkpointing": True,
            "batch_size": 5,
            "seq_len": 8192,
            "max_new_tokens": 256,
            "attention": "eager",
            "precision_recipe": "fp32",
        },
        "activations",
    ),
    "zero3.gathered_layer": (
        {
            # the reference's scoring forward must be the peak: GPT-2 takes its eager softmax in 16-bit (no
            # fp32 scores, tools/rules/activations.py eager_softmax_bytes), so a Llama-style model at 16k
            "model": "tinyllama-1.1b",
            "task": "dpo",
            "gpu": "h20",
            "num_gpus": 8,
            "tp": 4,
            "zero_stage": 3,
            "optimizer": "adamw_torch",
            "gradient_checkpointing": True,
            "recompute": "full",
            "batch_size": 3,
            "seq_len": 16384,
            "attention": "eager",
            "weight_dtype": "fp16",
            "kv_dtype": "bf16",
        },
        "zero3_gathered_params",
    ),
}


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_note_code_has_a_template(language: str) -> None:
    assert set(note_table(language)) == set(NOTE_CODES), language
    assert all(note_table(language)[code].strip() for code in NOTE_CODES)


def test_chinese_notes_are_chinese() -> None:
    en, zh = note_table("en"), note_table("zh")
    for code in NOTE_CODES:
        assert HAN.search(zh[code]) and zh[code] != en[code], code


def test_every_note_code_in_tools_source_is_listed() -> None:
    raised = set()
    for path in Path("tools").rglob("*.py"):
        raised |= set(re.findall(r'note_code="([^"]+)"', path.read_text(encoding="utf-8")))
    assert raised == set(NOTE_CODES)
    assert set(RAISED_BY) == set(NOTE_CODES)


@pytest.mark.parametrize("code", NOTE_CODES)
def test_tools_emit_the_code_and_no_prose(code: str) -> None:
    stated, name = RAISED_BY[code]
    est = estimate(Scenario(**stated))
    carriers = [c for c in est.components if c.note_code == code]
    assert [c.name for c in carriers][:1] == [name]
    assert all(c.note is None for c in est.components)  # the English words are filled at the edge
    english = with_english_text(est)
    assert {c.note for c in english.components if c.note_code == code} == {note_table("en")[code]}


@pytest.mark.parametrize("code", NOTE_CODES)
def test_answers_say_the_note_in_their_language(code: str) -> None:
    est = estimate(Scenario(**RAISED_BY[code][0]))
    en, zh = render_answer(est, "en"), render_answer(est, "zh")
    assert f"  - note: {note_table('en')[code]}" in en
    assert f"  - 附注：{note_table('zh')[code]}" in zh
    assert note_table("en")[code] not in zh


def test_paged_optimizer_note_reads_in_chinese() -> None:
    est = estimate(Scenario(**RAISED_BY["optimizer.paged"][0]))
    states = est.component("optimizer_states")
    assert states is not None
    assert component_note_text(states, "en") == "paged: may be paged to CPU RAM under memory pressure"
    assert component_note_text(states, "zh") == "分页：显存紧张时可能被换页到 CPU 内存"


def test_an_estimate_stored_before_note_codes_shows_its_note() -> None:
    old = Component.model_validate(
        {
            "name": "optimizer_states",
            "bytes": 1,
            "kind": "tensor",
            "formula": "",
            "substituted": "",
            "source": "",
            "note": "paged: may be paged to CPU RAM under memory pressure",
        }
    )
    assert old.note_code is None
    assert component_note_text(old, "zh") == old.note


def test_every_corpus_note_reads_in_both_languages() -> None:
    """All components of the golden corpus with a note code: English == the JSON's note, Chinese its own."""
    count = 0
    for entry in read_corpus():
        for data in (entry.get("estimate") or {}).get("components", []):
            c = Component.model_validate(data)
            if c.note_code is None:
                assert c.note is None
                continue
            count += 1
            assert component_note_text(c, "en") == c.note == note_table("en")[c.note_code]
            assert HAN.search(component_note_text(c, "zh") or "")
    # 59 before issue 24: + 7 sliding-window prefills (kv_cache.window_after_prefill); - 1 GPT-2 DPO row whose
    # peak moved from the reference's scoring forward (its ZeRO-3 gathered layer, noted) to the policy update
    # once GPT-2's 16-bit eager softmax was counted as such
    assert count == 65
