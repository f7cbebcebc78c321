"""Model names in a question -> what the estimator gets (service/agent/offline/mentions.py, model_names.py)."""

from __future__ import annotations

import pytest

from service.agent.offline.parser import parse_question


@pytest.mark.parametrize(
    ("question", "model", "code"),
    [
        # an org/name id: the catalog's entry when it has one, else the id itself (the Hub), as typed
        ("meta-llama/Llama-3.1-8B-Instruct on a 4090", "llama-3.1-8b", None),
        ("acme/Qwen-Mini-SFT on a 4090", "acme/Qwen-Mini-SFT", None),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ on a 4090", "Qwen/Qwen2.5-7B-Instruct-AWQ", None),
        # two models with a slash between them are not an organisation and a repo
        ("llama-2-7b/llama-2-13b LoRA on a 4090", "llama-2-7b", None),
        # GGUF / EXL2 repos have no config.json on the Hub: the base model from the catalog
        ("bartowski/Qwen2.5-14B-Instruct-GGUF q4_k_m on a 4090", "qwen2.5-14b", None),
        # "qwen-32b" is not Qwen3 at 2B
        ("R1-distill-qwen-32b on a 4090", "deepseek-r1-distill-qwen-32b", "model_distill"),
        ("deepseek-r1:1.5b on a 3060", "deepseek-r1-distill-qwen-1.5b", "model_distill"),
        ("deepseek-r1:70b on 2 A100", "deepseek-r1-distill-llama-70b", "model_distill"),
        ("DeepSeek-R1 on 8 H200", "deepseek-r1", None),  # the 671B model itself
        # a variant of a catalog model, a name the catalog lacks with a size, a known family's unknown version
        ("Qwen2.5-Math-7B on a 4090", "qwen2.5-7b", "model_variant"),
        ("InternLM2-20B on an A100", "20B", "model_size_only"),
        ("Llama-5-9000B on an A100", "llama-5-9000b", None),
        ("Qwen9-7B on an A100", "qwen9-7b", None),
    ],
)
def test_model_names(question: str, model: str, code: str | None) -> None:
    parsed = parse_question(question)
    assert parsed.scenario["model"] == model
    reason = parsed.filled.get("model")
    assert (reason.code if reason else None) == code
