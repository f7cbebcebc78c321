"""The families added for the models people ask about: counts pinned against published figures.

Exact figures are the HF safetensors parameter counts of each repo (the sum of its checkpoint tensor
sizes); rounded ones are the model page's figure and are checked to 0.5 %. Each count is recomputed
here from the architecture (config.json shapes) by `count_params`, vision towers by `tools.catalog.vision`.
"""

from __future__ import annotations

import pytest

from service.agent.assumption_text import assumption_text
from tools.catalog import get_model, lookup_model
from tools.catalog.vision import (
    mllama_extra_params,
    mllama_vision_params,
    qwen2_5_vl_vision_params,
    qwen2_vl_vision_params,
)

EXACT = {
    "mistral-nemo-12b": 12_247_782_400,
    "mistral-small-22b": 22_247_282_688,
    "mistral-small-24b": 23_572_403_200,
    "codestral-22b": 22_247_282_688,
    "starcoder2-3b": 3_030_371_328,
    "starcoder2-7b": 7_173_923_840,
    "starcoder2-15b": 15_957_889_024,
    "bloom-560m": 559_214_592,
    "bloom-1b1": 1_065_314_304,
    "bloom-1b7": 1_722_408_960,
    "bloom-3b": 3_002_557_440,
    "bloom-7b1": 7_069_016_064,
    "bloom-176b": 176_247_271_424,
    "llama-7b": 6_738_415_616,
    "llama-13b": 13_015_864_320,
    "llama-33b": 32_528_943_616,
    "llama-65b": 65_285_660_672,
    "llama-3.2-11b-vision": 10_670_220_835,
    "qwen2-0.5b": 494_032_768,
    "qwen2-1.5b": 1_543_714_304,
    "qwen2-7b": 7_615_616_512,
    "qwen2-72b": 72_706_203_648,
    "qwen2-vl-2b": 2_208_985_600,
    "qwen2-vl-7b": 8_291_375_616,
    "qwen2.5-vl-7b": 8_292_166_656,
    "qwen3-coder-480b-a35b": 480_154_875_392,
    "gemma-3-270m": 268_098_176,
    "phi-3.5-moe": 41_873_153_344,
    "olmo-1b": 1_176_764_416,
    "olmo-7b": 6_888_095_744,
    "olmo-2-7b": 7_298_617_344,
    "bert-large": 335_141_888,
}
ROUNDED = {  # model page figures (3 significant digits) / the GPT-3 paper
    "llama-3.2-90b-vision": 88.6e9,
    "qwen1.5-1.8b": 1.84e9,
    "qwen1.5-4b": 3.95e9,
    "qwen1.5-7b": 7.72e9,
    "qwen1.5-14b": 14.2e9,
    "qwen1.5-32b": 32.5e9,
    "qwen1.5-72b": 72.3e9,
    "qwen1.5-110b": 111e9,
    "qwen2-vl-72b": 73.4e9,
    "qwen2.5-vl-3b": 3.75e9,
    "qwen2.5-vl-32b": 33.5e9,
    "qwen2.5-vl-72b": 73.4e9,
    "deepseek-r1-distill-qwen-1.5b": 1.78e9,
    "glm-4-9b-0414": 9.4e9,
    "glm-4-32b-0414": 32.6e9,
    "gpt-3-175b": 175.0e9,
}


@pytest.mark.parametrize("model_id,count", sorted(EXACT.items()))
def test_exact_published_counts(model_id: str, count: int) -> None:
    assert get_model(model_id).params == count


@pytest.mark.parametrize("model_id,count", sorted(ROUNDED.items()))
def test_rounded_published_counts(model_id: str, count: float) -> None:
    assert abs(get_model(model_id).params - count) / count < 0.005


def test_vision_towers_counted() -> None:
    # Qwen2-VL-7B = the Qwen2-7B decoder + a 675.8M-parameter ViT and merger
    assert qwen2_vl_vision_params(out_hidden_size=3584) == 675_759_104
    assert get_model("qwen2-vl-7b").params - get_model("qwen2-7b").params == 675_759_104
    assert get_model("qwen2-vl-7b").architecture.extra_params == qwen2_vl_vision_params(out_hidden_size=3584)
    # Qwen2.5-VL's ViT: RMSNorm + SwiGLU (3420 wide): 676,550,144 with the 3584-wide merger
    assert qwen2_5_vl_vision_params(out_hidden_size=3584) == 676_550_144
    assert get_model("qwen2.5-vl-7b").params - get_model("qwen2.5-7b").params == 676_550_144
    # Llama-3.2-Vision: the mllama encoder (863.6M) + projector + cross-attention extras
    assert mllama_vision_params() == 863_567_379
    assert get_model("llama-3.2-11b-vision").architecture.extra_params == mllama_extra_params(
        text_hidden_size=4096, num_cross_attention_layers=8
    )


def test_olmo_norms_have_no_parameters() -> None:
    arch = get_model("olmo-7b").architecture
    assert not arch.parametric_norms
    assert arch.model_copy(update={"parametric_norms": True}) != arch
    # with weights on its 65 LayerNorms OLMo-7B would hold 65 x 4096 more parameters
    from tools.model.params import count_params

    with_weights = count_params(arch.model_copy(update={"parametric_norms": True})).total
    assert with_weights - get_model("olmo-7b").params == 65 * 4096


@pytest.mark.parametrize(
    "name,model_id",
    [
        ("mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-12b"),
        ("StarCoder2-15B", "starcoder2-15b"),
        ("Llama-3.2-11B-Vision-Instruct", "llama-3.2-11b-vision"),
        ("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl-7b"),
        ("bloomz-7b1", "bloom-7b1"),
        ("BLOOM-7B", "bloom-7b1"),
        ("Qwen2-72B-Instruct", "qwen2-72b"),
        ("Qwen1.5-32B-Chat", "qwen1.5-32b"),
        ("GPT-3", "gpt-3-175b"),
        ("LLaMA-65B", "llama-65b"),
        ("bert-large-uncased", "bert-large"),
        ("huggyllama/llama-30b", "llama-33b"),
    ],
)
def test_names_people_type(name: str, model_id: str) -> None:
    spec = lookup_model(name)
    assert spec is not None and spec.id == model_id


@pytest.mark.parametrize(
    "question,model,gpu",
    [
        ("24G显存能跑Mistral-Nemo吗", "mistral-nemo-12b", None),
        ("Mistral Small 24B on a 4090", "mistral-small-24b", "4090"),
        ("codestral on two 3090", "codestral-22b", "3090"),
        ("Llama-3.2-11B-Vision inference on a 4090", "llama-3.2-11b-vision", "4090"),
        ("StarCoder2-15B on L4", "starcoder2-15b", "l4"),
        ("BLOOM-7B fine-tune on A100", "bloom-7b1", "a100"),
        ("phi-3.5-moe on H100", "phi-3.5-moe", "h100"),
        ("OLMo 2 7B lora on a 4090", "olmo-2-7b", "4090"),
        ("GPT-3 175B inference on 8 A100", "gpt-3-175b", "a100"),
        ("acme/qwen-mini-sft on a 4090", "acme/qwen-mini-sft", "4090"),
        ("can I run qwen2.5-14b on a 22G 2080 Ti", "qwen2.5-14b", "2080-ti-22gb"),
        ("一张24G的4090能推理Qwen2.5-14B吗", "qwen2.5-14b", "4090"),
    ],
)
def test_questions_name_the_new_models_and_cards(question: str, model: str, gpu: str | None) -> None:
    from service.agent.offline.parser import parse_question

    parsed = parse_question(question)
    assert parsed.scenario.get("model") == model
    if gpu is not None:
        assert parsed.scenario.get("gpu") == gpu


def test_a_modded_card_from_a_question_is_taken_at_its_size() -> None:
    from tools.catalog import find_gpu

    spec, note = find_gpu("2080-ti-22gb")
    assert spec.id == "rtx-2080-ti-22gb" and spec.memory_bytes == 22528 * 2**20 and note is None


def test_image_tokens_join_the_decoder_sequence() -> None:
    from tools.estimator import estimate
    from tools.scenario import Scenario

    text = estimate(Scenario(model="qwen2-vl-7b", task="inference", gpu="4090", seq_len=2048), plan=False)
    two = estimate(
        Scenario(model="qwen2-vl-7b", task="inference", gpu="4090", seq_len=2048, images=2), plan=False
    )
    kv = {
        e: next(c.bytes for c in x.components if c.name == "kv_cache")
        for e, x in (("text", text), ("two", two))
    }
    # Qwen2-VL-7B KV: 2 x 28 layers x 4 KV heads x 128 x 2 B = 57,344 B per token; 2 x 1,369 image tokens more
    assert kv["text"] == 2048 * 57_344 and kv["two"] == (2048 + 2 * 1369) * 57_344
    said = next(a for a in two.assumptions if a.field == "images")
    assert said.values == {"text_tokens": 2048, "images": 2, "image_tokens": 1369, "decoder_tokens": 4786}
    assert "4,786 decoder tokens" in assumption_text(said, "en")
    assert two.scenario.seq_len == 2048  # the text length stays as stated: re-resolving adds nothing twice
    mllama = estimate(
        Scenario(model="llama-3.2-11b-vision", task="inference", gpu="4090", images=1), plan=False
    )
    assert any(n.code == "images_not_modelled" for n in mllama.notes)


def test_questions_with_images() -> None:
    from service.agent.offline.parser import parse_question

    assert parse_question("Qwen2-VL-7B inference with 2 images on a 4090").scenario["images"] == 2
    zh = parse_question("Qwen2.5-VL-7B 3张图片 4090").scenario
    assert zh["images"] == 3 and "num_gpus" not in zh
