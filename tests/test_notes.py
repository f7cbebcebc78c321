"""Estimator notes are data (a code and its values); every language says each of them."""

from __future__ import annotations

import re

import pytest

from service.agent.prompt_files import load_toml
from service.agent.render import note_text
from tools.estimator import estimate
from tools.notes import NOTE_CODES, Note, note
from tools.scenario import Scenario

LANGUAGES = ("en", "zh")
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_note_code_has_a_template_using_only_its_values(language: str) -> None:
    templates = load_toml(language, "notes.toml")["notes"]
    assert set(templates) == set(NOTE_CODES), language
    for code, template in templates.items():
        assert set(PLACEHOLDER.findall(template)) <= set(NOTE_CODES[code]), (language, code)


def test_the_languages_use_the_same_values() -> None:
    en, zh = (load_toml(lang, "notes.toml")["notes"] for lang in LANGUAGES)
    for code in NOTE_CODES:
        assert set(PLACEHOLDER.findall(en[code])) == set(PLACEHOLDER.findall(zh[code])), code


def test_a_note_with_an_unknown_code_or_value_is_refused_where_it_is_made() -> None:
    with pytest.raises(ValueError, match="unknown note code"):
        note("made_up")
    with pytest.raises(ValueError, match="takes"):
        note("no_native_bf16", card="T4")


def test_tools_hold_no_note_prose() -> None:
    """No English sentence is handed to the notes in tools/ (they are Note objects everywhere)."""
    est = estimate(
        Scenario(
            model="llama-2-7b",
            task="full_finetune",
            gpu="v100",
            seq_len=8192,
            optimizer="paged_adamw",
            weight_dtype="bf16",
        ),
        plan=False,
    )
    assert est.notes and all(isinstance(n, Note) for n in est.notes)
    codes = {n.code for n in est.notes}
    assert {"seq_beyond_context", "paged_optimizer", "no_native_bf16"} <= codes


@pytest.mark.parametrize(
    ("note", "en", "zh"),
    [
        (
            note("seq_beyond_context", seq_len=8192, max_position_embeddings=4096),
            "seq_len 8,192 exceeds the model's max_position_embeddings (4,096)",
            "序列长度 8,192 超过了模型的 max_position_embeddings（4,096）",
        ),
        (
            note("kv_heads_replicated", tp=16, kv_heads=8, copies=2),
            "tp=16 > 8 KV heads: each KV head is replicated on 2 ranks",
            "张量并行 TP=16 大于 8 个 KV 头：每个 KV 头在 2 个 rank 上各存一份",
        ),
        (
            note("gradients_whole_step_recipe", recipe="mixed"),
            "the mixed recipe (DeepSpeed/Megatron) keeps gradients in persistent buffers",
            "混合精度方案（DeepSpeed/Megatron）",
        ),
        (
            note(
                "rl_colocated",
                models=[{"role": "actor", "trainable": True}, {"role": "reference", "trainable": False}],
                lora_reference=True,
                reference_offload=False,
            ),
            "every GPU holds actor (trainable), reference (frozen) (the reference is the policy with adapters "
            "disabled) -- colocated, the TRL default; frozen models stay resident",
            "策略模型（可训练）、参考模型（冻结）（参考模型就是关闭适配器的策略模型）",
        ),
    ],
)
def test_notes_read_in_both_languages(note: Note, en: str, zh: str) -> None:
    assert en in note_text(note, "en")
    assert zh in note_text(note, "zh")
