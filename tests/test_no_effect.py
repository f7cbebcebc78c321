"""Settings that do not change peak memory are recognised and explained (tools/no_effect.py)."""

from __future__ import annotations

import json

import pytest

from service.agent.prompt_files import read_prompt
from service.agent.render import no_effect_templates, no_effect_text
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.no_effect import NO_EFFECT_FIELDS, accumulation_figures, no_effect_notes
from tools.scenario import Scenario
from tools.units import fmt_gib

BASE = dict(model="llama-2-7b", task="full_finetune", batch_size=4, seq_len=2048)


def _by_field(scenario: Scenario, language: str = "en") -> dict[str, str]:
    return {n.field: no_effect_text(n, language) for n in no_effect_notes(scenario)}


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
    assert "epochs = 3" in no_effect_text(by["epochs"], "en")
    assert "batch_size = 4" in no_effect_text(by["gradient_accumulation_steps"], "en")
    assert "2e-05" in no_effect_text(by["learning_rate"], "en")
    assert "alpha/r" in no_effect_text(by["lora_alpha"], "en")
    assert "nn.Identity" in no_effect_text(by["lora_dropout"], "en")
    # 4 x 8 x 1 = 32: consistent global batch, explained as a product
    assert "4 x 8 x 1 = 32" in no_effect_text(by["global_batch_size"], "en")


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
    raw = read_prompt(language, "no_effect.json")
    data = json.loads(raw)
    assert set(data) == set(no_effect_templates("en"))
    assert data == no_effect_templates(language)
    for field in NO_EFFECT_FIELDS:
        assert any(k.startswith(field) for k in data), field


def test_unknown_language_falls_back_to_english() -> None:
    assert no_effect_templates("fr") == no_effect_templates("en")


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


# ---- gradient accumulation: the number of steps never matters, 1 -> >1 can (tools.rules.phases) ---------------
# Qwen2.5-1.5B full fine-tuning under HF Trainer (amp: fp32 weights + bf16 autocast, no DeepSpeed), one
# A100 80GB, micro-batch 4 x 2048, gradient checkpointing. P = 1,543,714,304 (tied embeddings), fp32
# gradients: 1,543,714,304 x 4 B = 6,174,857,216 B = 5.75 GiB.
HF_FULL = dict(
    model="qwen2.5-1.5b",
    task="full_finetune",
    precision_recipe="amp",
    gpu="a100-80gb",
    batch_size=4,
    seq_len=2048,
    gradient_checkpointing=True,
)
QWEN_1_5B_FP32_GRADS = 1_543_714_304 * 4


def _peak(**kw: object) -> tuple[int, int]:
    e = estimate(Scenario(**kw), plan=False)  # type: ignore[arg-type]
    return e.per_gpu.tensor_peak_bytes, e.per_gpu.total_bytes


def test_accumulating_keeps_the_gradients_under_hf_trainer_and_the_note_says_by_how_much() -> None:
    t1, total1 = _peak(**HF_FULL, gradient_accumulation_steps=1)
    t4, total4 = _peak(**HF_FULL, gradient_accumulation_steps=4)
    t16, total16 = _peak(**HF_FULL, gradient_accumulation_steps=16)
    assert t4 - t1 == QWEN_1_5B_FP32_GRADS  # 1 -> 4: exactly the gradient bytes
    assert (t16, total16) == (t4, total4)  # 4 -> 16: nothing
    en = _by_field(Scenario(**HF_FULL, gradient_accumulation_steps=4))["gradient_accumulation_steps"]
    assert "alive between micro-batches; with 1 step HF Trainer frees them" in en
    assert f"raises the tensor peak by {fmt_gib(QWEN_1_5B_FP32_GRADS)}" in en  # 5.75 GiB
    assert f"{fmt_gib(t1)} with gradient_accumulation_steps = 1 -> {fmt_gib(t4)} with 4" in en
    assert f"(total per GPU {fmt_gib(total1)} -> {fmt_gib(total4)})" in en
    zh = _by_field(Scenario(**HF_FULL, gradient_accumulation_steps=4), "zh")["gradient_accumulation_steps"]
    assert f"张量峰值增加 {fmt_gib(QWEN_1_5B_FP32_GRADS)}" in zh
    assert f"每卡总计 {fmt_gib(total1)} -> {fmt_gib(total4)}" in zh
    assert "no effect" not in en and "没有影响" not in zh


def test_accumulation_figures_are_the_estimators_own() -> None:
    s = Scenario(**HF_FULL, gradient_accumulation_steps=8)
    fig = accumulation_figures(s)
    assert fig is not None
    assert (fig.tensor_one, fig.total_one) == _peak(**HF_FULL, gradient_accumulation_steps=1)
    assert (fig.tensor_stated, fig.total_stated) == _peak(**HF_FULL, gradient_accumulation_steps=8)
    assert fig.gradients == QWEN_1_5B_FP32_GRADS and not fig.whole_step_anyway


def test_every_accumulation_note_of_the_corpus_says_the_answer_s_own_total() -> None:
    """The note estimates the job as asked again with 1 step and with its own: the latter is the answer's total
    (it estimated the resolved job before, whose filled `mixed` recipe reads as DeepSpeed's stated one:
    llama-2-7b full fine-tuning with 8 steps said 155.20 GiB beside an answer of 153.71 GiB)."""
    checked = 0
    for row in read_corpus():
        est = row.get("estimate") or {}
        for note in est.get("no_effect", []):
            if note["field"] == "gradient_accumulation_steps" and "total" in note["values"]:
                assert note["values"]["total"] == fmt_gib(est["per_gpu"]["total_bytes"]), row["scenario"]
                checked += 1
    assert checked >= 20


def test_zero2_holds_gradients_for_the_whole_step_so_accumulation_adds_nothing() -> None:
    zero2 = {**HF_FULL, "num_gpus": 8, "zero_stage": 2}
    one = _peak(**zero2, gradient_accumulation_steps=1)
    assert _peak(**zero2, gradient_accumulation_steps=4) == one
    en = _by_field(Scenario(**zero2, gradient_accumulation_steps=4))["gradient_accumulation_steps"]
    assert en.startswith("gradient_accumulation_steps = 4: no effect on memory here")
    assert f"the peak is {fmt_gib(one[1])} per GPU with 1 accumulation step and with 4" in en
    zh = _by_field(Scenario(**zero2, gradient_accumulation_steps=4), "zh")["gradient_accumulation_steps"]
    assert f"每卡峰值都是 {fmt_gib(one[1])}" in zh


def test_lora_accumulation_keeps_only_the_adapter_gradients() -> None:
    # Llama-2-7B LoRA r=8 on q_proj,v_proj (PEFT defaults): 2 x 32 x 8 x (4096 + 4096) = 4,194,304
    # trainable params in fp32 (PEFT autocast_adapter_dtype): 16,777,216 B of gradients kept alive
    lora = dict(model="llama-2-7b", task="lora", gpu="4090", batch_size=4, seq_len=2048)
    t1, _ = _peak(**lora, gradient_accumulation_steps=1)
    t2, _ = _peak(**lora, gradient_accumulation_steps=2)
    assert t2 - t1 == 4_194_304 * 4
    en = _by_field(Scenario(**lora, gradient_accumulation_steps=2))["gradient_accumulation_steps"]
    assert f"raises the tensor peak by {fmt_gib(16_777_216)}" in en  # 0.02 GiB


def test_one_accumulation_step_is_explained_without_a_second_estimate() -> None:
    en = _by_field(Scenario(**HF_FULL, gradient_accumulation_steps=1))["gradient_accumulation_steps"]
    assert "no accumulation" in en and "zero_grad(set_to_none=True)" in en
    assert "GiB" not in en


def test_epochs_lr_warmup_alpha_change_nothing_under_hf_trainer() -> None:
    plain = _peak(**HF_FULL, gradient_accumulation_steps=4)
    assert _peak(**HF_FULL, gradient_accumulation_steps=4, epochs=1) == plain
    assert _peak(**HF_FULL, gradient_accumulation_steps=4, epochs=100) == plain
    assert _peak(**HF_FULL, gradient_accumulation_steps=4, learning_rate=3e-4, warmup_steps=500) == plain
    lora = dict(model="llama-2-7b", task="lora", gpu="4090", batch_size=4, seq_len=2048)
    assert _peak(**lora, lora_alpha=64) == _peak(**lora, lora_alpha=8) == _peak(**lora)
    # global batch = micro-batch x accumulation x DP: only the micro-batch is on the GPU
    assert _peak(**HF_FULL, gradient_accumulation_steps=4, global_batch_size=16) == plain
