"""Settings that do not change peak memory are recognised and explained (tools/no_effect.py)."""

from __future__ import annotations

import json

import pytest

from tools.estimator import estimate
from tools.no_effect import NO_EFFECT_FIELDS, load_templates, no_effect_notes, read_prompt_text
from tools.scenario import Scenario

BASE = dict(model="llama-2-7b", task="full_finetune", batch_size=4, seq_len=2048)


def _by_field(scenario: Scenario, language: str = "en") -> dict[str, str]:
    return {n.field: n.explanation for n in no_effect_notes(scenario, language=language)}


def test_nothing_stated_nothing_reported() -> None:
    assert no_effect_notes(Scenario(**BASE)) == []


def test_every_listed_field_is_explained_with_its_value() -> None:
    s = Scenario(
        **BASE,
        epochs=3,
        gradient_accumulation_steps=8,
        learning_rate=2e-5,
        lora_alpha=16,
        lora_dropout=0.0,
        warmup_steps=100,
        global_batch_size=32,
    )
    notes = no_effect_notes(s)
    assert [n.field for n in notes] == list(NO_EFFECT_FIELDS)
    by = {n.field: n for n in notes}
    assert by["epochs"].value == 3
    assert "epochs = 3" in by["epochs"].explanation
    assert "batch_size = 4" in by["gradient_accumulation_steps"].explanation
    assert "2e-05" in by["learning_rate"].explanation
    assert "alpha/r" in by["lora_alpha"].explanation
    assert "nn.Identity" in by["lora_dropout"].explanation
    # 4 x 8 x 1 = 32: consistent global batch, explained as a product
    assert "4 x 8 x 1 = 32" in by["global_batch_size"].explanation


def test_global_batch_uses_data_parallel_size() -> None:
    # 16 GPUs with TP=2 and PP=2 -> DP = 4; 4 x 2 x 4 = 32
    s = Scenario(**BASE, num_gpus=16, tp=2, pp=2, gradient_accumulation_steps=2, global_batch_size=32)
    assert "4 x 2 x 4 = 32" in _by_field(s)["global_batch_size"]


def test_global_batch_implies_accumulation_when_not_stated() -> None:
    # 512 sequences with 4 per GPU on 8 DP GPUs: 16 accumulation steps
    s = Scenario(**BASE, num_gpus=8, global_batch_size=512)
    text = _by_field(s)["global_batch_size"]
    assert "16 gradient accumulation" in text
    assert "batch_size = 4" in text


def test_global_batch_mismatch_is_said() -> None:
    s = Scenario(**BASE, num_gpus=2, gradient_accumulation_steps=2, global_batch_size=100)
    text = _by_field(s)["global_batch_size"]
    assert "does not equal" in text
    assert "4 x 2 x 2 = 16" in text


def test_lora_dropout_positive_states_its_small_activation_cost() -> None:
    text = _by_field(Scenario(**BASE, lora_dropout=0.05))["lora_dropout"]
    assert "0.05" in text
    assert "nn.Dropout" in text


def test_chinese_is_first_class() -> None:
    s = Scenario(**BASE, epochs=2, gradient_accumulation_steps=4, global_batch_size=16)
    zh = _by_field(s, "zh")
    assert set(zh) == {"epochs", "gradient_accumulation_steps", "global_batch_size"}
    assert "峰值显存" in zh["epochs"]
    assert "4 x 4 x 1 = 16" in zh["global_batch_size"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_templates_are_files_with_the_same_keys(language: str) -> None:
    raw = read_prompt_text(language, "no_effect.json")
    data = json.loads(raw)
    assert set(data) == set(load_templates("en"))
    assert data == load_templates(language)
    for field in NO_EFFECT_FIELDS:
        assert any(k.startswith(field) for k in data), field


def test_unknown_language_falls_back_to_english() -> None:
    assert load_templates("fr") == load_templates("en")


def test_estimate_explains_and_ignores_them() -> None:
    plain = estimate(Scenario(**BASE), plan=False)
    stated = estimate(
        Scenario(**BASE, epochs=3, gradient_accumulation_steps=16, learning_rate=1e-4, warmup_steps=10),
        plan=False,
    )
    assert stated.per_gpu.total_bytes == plain.per_gpu.total_bytes  # not silently changed...
    assert [n.field for n in stated.no_effect] == [  # ...and not silently ignored
        "epochs",
        "gradient_accumulation_steps",
        "learning_rate",
        "warmup_steps",
    ]
