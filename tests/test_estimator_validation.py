"""Bad input: a ScenarioError naming the field and what is accepted; warnings go to notes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario


def err(**kw) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        estimate(Scenario(**kw), plan=False)
    return info.value


def test_unknown_model_and_gpu_suggest_near_names() -> None:
    e = err(model="lama-2-7b")
    assert e.field == "model" and "llama-2-7b" in e.suggestions
    g = err(model="llama-2-7b", gpu="A1000-80")
    assert g.field == "gpu" and g.accepted


def test_no_model_at_all() -> None:
    e = err(task="inference")
    assert e.field == "model" and "7B" in (e.accepted or "")


def test_tp_must_divide_heads_and_lists_divisors() -> None:
    e = err(model="llama-2-7b", tp=3, num_gpus=3)
    assert e.field == "tp" and "1, 2, 4, 8, 16, 32" in (e.accepted or "")


def test_tp_larger_than_kv_heads_replicates_with_a_note() -> None:
    est = estimate(Scenario(model="llama-3-8b", task="inference", tp=16, num_gpus=16, gpu="h100"), plan=False)
    assert any(n.code == "kv_heads_replicated" and n.values["copies"] == 2 for n in est.notes)
    # each of 16 ranks still holds one KV head: 2 x 32 layers x 1 x 128 x 2 B per token
    assert est.serving is not None and est.serving.kv_bytes_per_token == 2 * 32 * 1 * 128 * 2


def test_tp_neither_divisor_nor_multiple_of_kv_heads() -> None:
    from tools.model.architecture import Architecture

    arch = Architecture(
        hidden_size=1536,
        num_hidden_layers=4,
        num_attention_heads=12,
        num_key_value_heads=4,
        intermediate_size=4096,
        vocab_size=1000,
    )
    e = err(architecture=arch, tp=6, num_gpus=6)
    assert e.field == "tp" and "4" in (e.accepted or "")


def test_pp_larger_than_layers() -> None:
    e = err(model="tinyllama-1.1b", pp=64, num_gpus=64)
    assert e.field == "pp" and "1..22" in (e.accepted or "")


def test_num_gpus_not_divisible_by_model_parallel() -> None:
    e = err(model="llama-2-7b", tp=2, pp=2, num_gpus=6)
    assert e.field == "num_gpus" and "multiple of 4" in (e.accepted or "")


def test_lora_settings_on_inference_and_full_finetune() -> None:
    assert err(model="llama-2-7b", task="inference", lora_rank=8).field == "lora_rank"
    assert err(model="llama-2-7b", task="full_finetune", lora_targets=["q_proj"]).field == "lora_targets"


def test_unknown_lora_target_lists_the_models_linears() -> None:
    e = err(model="llama-2-7b", task="lora", lora_targets=["q_proj", "query"])
    assert e.field == "lora_targets"
    assert "q_proj" in e.accepted and "down_proj" in e.accepted and "all-linear" in e.accepted


def test_qlora_needs_a_4bit_base() -> None:
    e = err(model="llama-2-7b", task="qlora", weight_dtype="bf16")
    assert e.field == "weight_dtype" and "nf4" in (e.accepted or "")


def test_quantised_weights_cannot_be_fully_trained() -> None:
    assert err(model="llama-2-7b", task="full_finetune", weight_dtype="int4").field == "weight_dtype"


def test_zero_stage_on_inference() -> None:
    e = err(model="llama-2-7b", task="inference", zero_stage=3)
    assert e.field == "zero_stage"


def test_param_offload_needs_zero3() -> None:
    assert err(model="llama-2-7b", task="full_finetune", offload_params="cpu").field == "offload_params"


def test_absurd_sizes() -> None:
    e = err(model="llama-2-7b", batch_size=1_000_000, seq_len=10_000_000)
    assert e.field == "batch_size"
    with pytest.raises(ValidationError):
        Scenario(model="llama-2-7b", batch_size=-1)
    with pytest.raises(ValidationError):
        Scenario(model="llama-2-7b", seq_len=0)


def test_expert_parallel_on_dense_model() -> None:
    assert err(model="llama-2-7b", ep=2, num_gpus=2).field == "ep"


def test_freeze_layers_beyond_model() -> None:
    assert err(model="llama-2-7b", task="freeze", trainable_layers=40).field == "trainable_layers"


def test_seq_beyond_max_position_is_a_note_not_an_error() -> None:
    est = estimate(Scenario(model="llama-2-7b", task="inference", seq_len=8192, gpu="h100"), plan=False)
    assert any(n.code == "seq_beyond_context" for n in est.notes)


def test_max_new_tokens_beyond_context() -> None:
    assert err(model="llama-2-7b", seq_len=100, max_new_tokens=200).field == "max_new_tokens"


def test_error_text_names_field_and_accepted() -> None:
    e = err(model="llama-2-7b", tp=3, num_gpus=3)
    text = str(e)
    assert text.startswith("tp:") and "Accepted:" in text and "\n" not in text
