"""GGUF and EXL2 weight formats: ggml block sizes, llama.cpp per-tensor mixes, and the estimate they give."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.agent.render import component_label
from tools.catalog.models import get_model
from tools.estimator import estimate
from tools.model.params import count_params
from tools.rules.gguf import (
    BLOCKS,
    FILE_TYPES,
    GgufFormat,
    bpw,
    exl2_bits,
    gguf_file_type,
    row_bytes,
    tensor_type,
)
from tools.scenario import WEIGHT_DTYPES, Scenario


def _weights(**kw: object) -> int:
    e = estimate(Scenario(task="inference", gpu="h100", seq_len=512, **kw))
    return next(c.bytes for c in e.components if c.name == "weights")


# ggml-common.h static_asserts: the bits per weight its comments state
@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("q8_0", 8.5),
        ("q6_k", 6.5625),
        ("q5_k", 5.5),
        ("q4_k", 4.5),
        ("q4_0", 4.5),
        ("iq4_xs", 4.25),
        ("q3_k", 3.4375),
        ("iq3_s", 3.4375),
        ("iq3_xxs", 3.0625),
        ("q2_k", 2.625),
        ("iq2_xs", 2.3125),
        ("iq2_xxs", 2.0625),
        ("iq1_s", 1.5625),
        ("iq1_m", 1.75),
    ],
)
def test_block_bits_per_weight(block: str, expected: float) -> None:
    assert bpw(block) == expected


def test_every_file_type_is_a_scenario_dtype() -> None:
    for name in FILE_TYPES:
        assert name in WEIGHT_DTYPES
        assert FILE_TYPES[name] in BLOCKS
    for old in ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"):
        assert old in WEIGHT_DTYPES


def test_row_fallback_when_the_row_does_not_divide() -> None:
    # tensor_type_fallback: Q4_K on a 4000-wide row falls back to Q5_0 (22 B per 32)
    assert row_bytes("q4_k", 4096) == 16 * 144
    assert row_bytes("q4_k", 4000) == 125 * 22


def test_q4_k_m_mix_follows_use_more_bits() -> None:
    # 32 layers: attn_v / ffn_down get Q6_K in layers 0-3, 28-31 and every third in between (16 of 32)
    types = [tensor_type("q4_k_m", "ffn_down", i, 32, 1) for i in range(32)]
    assert types.count("q6_k") == 16 and types.count("q4_k") == 16
    assert [tensor_type("q4_k_m", "attn_q", i, 32, 1) for i in range(32)] == ["q4_k"] * 32


def test_llama2_13b_gguf_sizes_match_the_published_files() -> None:
    # localmodels/Llama-2-13B-ggml README ("Provided files"): q4_K_M 7.87 GB ("GGML_TYPE_Q6_K for half of the
    # attention.wv and feed_forward.w2 tensors, else GGML_TYPE_Q4_K"), q4_0 7.32 GB. The files hold the token
    # embedding too, which llama.cpp keeps on the CPU: 32000 x 5120 in the base type is added back here.
    emb = 32000 * 5120
    for dtype, block, published, tolerance in (
        ("q4_k_m", "q4_k", 7.87e9, 0.002),
        ("q4_0", "q4_0", 7.32e9, 0.01),
    ):
        gpu = _weights(model="llama-2-13b", weight_dtype=dtype)
        file_bytes = gpu + emb // BLOCKS[block][1] * BLOCKS[block][0]
        assert abs(file_bytes - published) / published < tolerance, (dtype, file_bytes)
    # Llama-2-7B Q4_K_M on the GPU: every byte from the block table and the per-tensor mix
    assert _weights(model="llama-2-7b", weight_dtype="q4_k_m") == 4_006_535_168


def test_q4_k_m_is_about_4_85_bits_not_4_25() -> None:
    pb = count_params(get_model("llama-2-7b").architecture)
    fmt = GgufFormat("q4_k_m")
    linears = [lin for lin in pb.linears if lin.name != "lm_head"]
    assert 4.78 < fmt.effective_bpw(linears) < 4.85
    e = estimate(Scenario(model="llama-2-7b", task="inference", gpu="4090", weight_dtype="q4_k_m"))
    w = next(c for c in e.components if c.name == "weights")
    assert (w.label_code, w.label_values) == (
        "weights.gguf",
        {"file_type": "Q4_K_M", "base": "Q4_K", "base_bpw": 4.5, "mix": "q4_k_m"},
    )
    label = component_label(w, "en")
    assert "Q4_K_M" in label and "4.5 bpw" in label and "Q6_K" in label
    assert "bpw on this model" in w.formula


def test_exl2_counts_the_stated_bits() -> None:
    w = _weights(model="llama-2-7b", weight_dtype="exl2", weight_bits=4.65)
    w5 = _weights(model="llama-2-7b", weight_dtype="exl2", weight_bits=5.0)
    # 6,476,005,376 decoder linear params x 0.35 bits / 8
    assert w5 - w == pytest.approx(6_476_005_376 * 0.35 / 8, abs=2)


def test_inference_formats_are_refused_for_training_and_need_bits() -> None:
    with pytest.raises(ValidationError, match="inference format"):
        Scenario(model="llama-2-7b", task="full_finetune", weight_dtype="q4_k_m")
    with pytest.raises(ValidationError, match="weight_bits"):
        Scenario(model="llama-2-7b", weight_dtype="exl2")
    with pytest.raises(ValidationError, match="stored by gguf"):
        Scenario(model="llama-2-7b", weight_dtype="q8_0", quant_method="gptq")
    e = estimate(Scenario(model="llama-2-7b", weight_dtype="q5_k_m", gpu="4090"), plan=False)
    assert not any(a.field == "quant_method" for a in e.assumptions)  # no "usually GPTQ" default for a GGUF
    assert "GGUF Q5_K_M" in component_label(next(c for c in e.components if c.name == "weights"), "en")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llama-2-7b.Q4_K_M.gguf", "q4_k_m"),
        ("Q5_K_S", "q5_k_s"),
        ("q4km", "q4_k_m"),
        ("IQ3_XS quant", "iq3_xs"),
        ("q8_0", "q8_0"),
        ("q6_k", "q6_k"),
        ("Q4_K", "q4_k_m"),
        ("iq4_xs", "iq4_xs"),
        ("bf16 please", None),
        ("a q8 model", None),
    ],
)
def test_gguf_names(text: str, expected: str | None) -> None:
    assert gguf_file_type(text) == expected


def test_exl2_bits_in_text() -> None:
    assert exl2_bits("Llama-3-70B-exl2 4.65bpw") == 4.65
    assert exl2_bits("6.0 bpw") == 6.0
    assert exl2_bits("no bits here") is None
