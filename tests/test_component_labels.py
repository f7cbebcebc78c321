"""Component labels are data (a label code and values); every language names each component."""

from __future__ import annotations

import pytest

from service.agent.assumption_text import PLACEHOLDER
from service.agent.component_text import label_tables, label_text
from service.agent.render import component_label
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.labels import LABEL_CODES
from tools.result import Component
from tools.scenario import Scenario

LANGUAGES = ("en", "zh")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_label_code_has_a_template_using_only_its_values(language: str) -> None:
    templates, _ = label_tables(language)
    assert set(templates) == set(LABEL_CODES), language
    for code, template in templates.items():
        assert set(PLACEHOLDER.findall(template)) <= set(LABEL_CODES[code]), (language, code)


def test_the_languages_use_the_same_values() -> None:
    en, zh = (label_tables(lang)[0] for lang in LANGUAGES)
    for code in LABEL_CODES:
        assert set(PLACEHOLDER.findall(en[code])) == set(PLACEHOLDER.findall(zh[code])), code


def test_every_worded_value_has_words_in_each_language() -> None:
    en, zh = (label_tables(lang)[1] for lang in LANGUAGES)
    assert set(en) <= set(zh)  # Chinese also names the values English shows as they are (recompute.none)


def test_tools_hold_no_label_prose() -> None:
    est = estimate(Scenario(model="llama-2-7b", task="full_finetune", gpu="a100", optimizer="sgd_momentum"))
    assert all(c.label is None and c.label_code in LABEL_CODES for c in est.components)
    states = est.component("optimizer_states")
    assert states is not None and (states.label_code, states.label_values) == (
        "optimizer_states",
        {"optimizer": "sgd_momentum"},
    )
    assert component_label(states, "en") == "SGD momentum buffer"
    assert component_label(states, "zh") == "SGD 动量缓冲"


def test_labels_read_in_both_languages() -> None:
    acts = Component(
        name="activations",
        bytes=1,
        kind="tensor",
        formula="",
        substituted="",
        source="",
        label_code="activations.offloaded",
        label_values={"recompute": "selective", "kernel": "flash"},
        model_role="actor",
    )
    assert component_label(acts, "en") == (
        "activations (selective recompute, flash), layer inputs in CPU memory [actor]"
    )
    assert (
        component_label(acts, "zh")
        == "激活值（选择性重计算，flash 注意力），各层输入放在 CPU 内存（策略模型）"
    )


def test_every_corpus_component_is_named_in_both_languages() -> None:
    """Every component of the 1,931 golden-corpus estimates: its code is known, English reads as the
    JSON's label, Chinese has a template and no placeholder or untranslated value word left."""
    count = 0
    zh_words = label_tables("zh")[1]
    for entry in read_corpus():
        for data in (entry.get("estimate") or {}).get("components", []):
            c = Component.model_validate(data)
            assert c.label_code in LABEL_CODES, c.label_code
            assert label_text(c.label_code, c.label_values, "en") == c.label
            zh = label_text(c.label_code, c.label_values, "zh")
            assert zh and "${" not in zh, (c.label_code, zh)
            for name, value in c.label_values.items():
                if name in ("recompute", "kernel", "optimizer", "scored"):
                    assert f"{name}.{value}" in zh_words, (name, value)
            count += 1
    assert count > 12_000, count
