"""Assumptions are data (a field, its value, a code and values); every language says each of them."""

from __future__ import annotations

import json

import pytest

from service.agent.assumption_text import (
    PLACEHOLDER,
    SERVICE_CODES,
    assumption_text,
    fill,
    templates,
    with_english_text,
)
from tests.golden.make_corpus import read_corpus
from tools.assumptions import ASSUMPTION_CODES, assumption
from tools.estimator import estimate
from tools.result import Assumption
from tools.scenario import Scenario

LANGUAGES = ("en", "zh")
ALL_CODES = {**ASSUMPTION_CODES, **SERVICE_CODES}


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_assumption_code_has_a_template_using_only_its_values(language: str) -> None:
    table = templates(language)
    assert set(table) == set(ALL_CODES), language
    for code, template in table.items():
        assert set(PLACEHOLDER.findall(template)) <= set(ALL_CODES[code]), (language, code)


def test_the_languages_use_the_same_values() -> None:
    en, zh = (templates(lang) for lang in LANGUAGES)
    for code in ALL_CODES:
        assert set(PLACEHOLDER.findall(en[code])) == set(PLACEHOLDER.findall(zh[code])), code


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_template_formats_with_its_values(language: str) -> None:
    for code, names in ALL_CODES.items():
        text = fill(templates(language)[code], {name: 12345 for name in names})
        assert "${" not in text and "[[" not in text and text.strip(), (language, code, text)


def test_tools_hold_no_assumption_prose() -> None:
    """Straight out of the estimator an assumption has a code and values, no sentence."""
    est = estimate(Scenario(model="llama-2-7b", task="qlora", gpu="a100"), plan=False)
    assert est.assumptions and all(a.reason is None and a.code in ASSUMPTION_CODES for a in est.assumptions)
    gpu = next(a for a in est.assumptions if a.field == "gpu")
    assert (gpu.code, gpu.values) == (
        "gpu.alias_other",
        {"alias": "A100", "variant": "80 GB", "card": "a100-80gb", "other": "A100 40GB"},
    )
    assert est.gpu.alias_note is None  # the English note is the service's (with_english_text)
    shown = with_english_text(est)
    assert (
        shown.gpu.alias_note == "'A100' taken as the 80 GB variant (a100-80gb); say A100 40GB for the other"
    )
    assert assumption_text(gpu, "zh").endswith("要按另一个版本计算请写 A100 40GB")


def test_the_json_keeps_the_english_reason() -> None:
    est = with_english_text(estimate(Scenario(model="llama-2-7b", task="lora", gpu="v100-16gb"), plan=False))
    shown = {a.field: a.reason for a in est.assumptions}
    assert shown["lora_rank"] == "PEFT LoraConfig default r=8"
    assert shown["weight_dtype"] == "Tesla V100 16GB has no bf16: fp16"


@pytest.mark.parametrize(
    ("said", "en", "zh"),
    [
        (
            assumption("tp", 4, "tp.serving_largest", heads=28, per_replica=8, tp=4),
            "8 does not divide the 28 attention heads: TP=4 is the largest that does (vLLM "
            "--tensor-parallel-size 4); the other GPUs hold replicas",
            "8 不能整除 28 个注意力头：TP=4 是能整除的最大值",
        ),
        (
            assumption(
                "images",
                2,
                "images.tokens",
                text_tokens=2048,
                images=2,
                image_tokens=1369,
                decoder_tokens=4786,
            ),
            "2,048 text tokens + 2 image(s) x 1,369 image tokens = 4,786 decoder tokens per sequence",
            "2,048 个文本 token + 2 张图片 x 每张 1,369 个图像 token = 每条序列 4,786 个解码器 token",
        ),
        (
            assumption("lora_dropout", 0.0, "lora_dropout.default", extra_bytes=3 * 2**29),
            "a 1-byte dropout mask per input element (+1.50 GiB)",
            "1 字节的 dropout 掩码（+1.50 GiB）",
        ),
        (
            assumption("critic_model", "llama-2-7b", "critic_model.policy_size", model="Llama-2-7B"),
            "no critic model given: the same size as the policy (Llama-2-7B)",
            "没有给出价值模型：按与策略模型同样大小的模型计算（Llama-2-7B）",
        ),
    ],
)
def test_assumptions_read_in_both_languages(said: Assumption, en: str, zh: str) -> None:
    assert en in assumption_text(said, "en")
    assert zh in assumption_text(said, "zh")


def test_an_optional_part_is_left_out_without_its_value() -> None:
    said = assumption("lora_dropout", 0.0, "lora_dropout.default")
    assert assumption_text(said, "en").endswith("a 1-byte dropout mask per input element")
    assert assumption_text(said, "zh").endswith("dropout 掩码")


def test_every_corpus_assumption_reads_in_both_languages() -> None:
    """All 1,931 golden-corpus estimates (tests/test_golden_corpus.py proves they are what the estimator
    emits now): each assumption's code is known and reads in English (= the JSON's reason) and Chinese."""
    seen: set[str] = set()
    count = 0
    for entry in read_corpus():
        for data in (entry.get("estimate") or {}).get("assumptions", []):
            a = Assumption.model_validate(data)
            assert a.code in ALL_CODES, a.code
            en, zh = assumption_text(a, "en"), assumption_text(a, "zh")
            assert en == a.reason, (a.code, en, a.reason)
            for text in (en, zh):
                assert "${" not in text and "[[" not in text and text.strip(), (a.code, text)
            seen.add(a.code)
            count += 1
    assert count > 9_000 and len(seen) > 40, (count, len(seen))


def test_an_estimate_stored_before_codes_still_loads_and_says_its_reason() -> None:
    """Slack keeps Estimate JSON (service/slack/store.py): one saved before assumptions and labels had
    codes has `code: null` and only its English reason, which is what every language then shows, and
    components named by their stored English label (English) or their name's label (other languages)."""
    from service.agent.render import component_label, render_answer
    from tools.result import Estimate

    data = with_english_text(estimate(Scenario(model="llama-2-7b", task="inference", gpu="4090"), plan=False))
    old = json.loads(data.model_dump_json())
    for a in old["assumptions"]:
        a.update(code=None, values={})
    for c in old["components"]:
        c.update(label_code=None, label_values={})
    stored = Estimate.model_validate_json(json.dumps(old))
    first = stored.assumptions[0]
    assert first.code is None and assumption_text(first, "zh") == first.reason
    assert first.reason and first.reason in render_answer(stored, "zh")
    weights = stored.component("weights")
    assert weights is not None and weights.label == "weights (bf16)"
    assert component_label(weights, "en") == "weights (bf16)" and component_label(weights, "zh") == "权重"
