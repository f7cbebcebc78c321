"""A real config.json as the scenario's `architecture`: read through the Hub look-up's mapping
(tools/catalog/hf_config.py), every key either read, known to change no memory figure, or refused by name.

The files in tests/fixtures/config_json/ are the published config.json of each model, as its Hub repo serves
it (`owner--name.json` is huggingface.co/owner/name/blob/main/config.json; auto_map entries abridged to the
class names). Each must give the catalog's exact parameter count: before, Mixtral's `num_local_experts` and
DeepSeek's `n_routed_experts`/`kv_lora_rank` were dropped without a word (a dense 7.24B "Mixtral", a 2.6B
"DeepSeek-V2-Lite").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from service.app import create_app
from tests.service_support import offline_settings
from tools.catalog import get_model
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import GiB

CONFIGS = Path(__file__).parent / "fixtures" / "config_json"
HUB = Path(__file__).parent / "fixtures" / "hub"
CATALOG_ID = {
    "mistralai--Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "deepseek-ai--DeepSeek-V2-Lite": "deepseek-v2-lite",
    "deepseek-ai--DeepSeek-V3": "deepseek-v3",
    "meta-llama--Meta-Llama-3-8B": "llama-3-8b",
    "mistralai--Mistral-7B-v0.1": "mistral-7b-v0.1",
    "Qwen--Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "Qwen--Qwen3-8B": "qwen3-8b",
    "Qwen--Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen--Qwen1.5-MoE-A2.7B": "qwen1.5-moe-a2.7b",
    "google--gemma-2-9b": "gemma-2-9b",
    "google--gemma-3-27b-it": "gemma-3-27b",
    "microsoft--Phi-3-mini-4k-instruct": "phi-3-mini",
    "openai-community--gpt2": "gpt2",
    "tiiuae--falcon-7b": "falcon-7b",
    "THUDM--glm-4-9b": "glm-4-9b",
    "internlm--internlm2_5-7b-chat": "internlm2.5-7b",
    "baichuan-inc--Baichuan2-13B-Chat": "baichuan2-13b",
}


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(offline_settings(tmp_path / "c.sqlite3"))) as c:
        yield c


def test_every_fixture_is_a_family_case() -> None:
    assert {p.stem for p in CONFIGS.glob("*.json")} == set(CATALOG_ID)


@pytest.mark.parametrize("name", sorted(CATALOG_ID))
def test_a_real_config_json_gives_the_catalog_model(name: str) -> None:
    est = estimate(Scenario(architecture=_config(name), task="inference", gpu="h100"), plan=False)
    assert est.params_total == get_model(CATALOG_ID[name]).params
    said = {(a.field, a.code) for a in est.assumptions if a.field == "architecture"}
    # a complete config fills no MoE/MLA default; a vision model's tower is said not to be counted
    vision = {("architecture", "architecture.vision_not_counted")}
    assert said == (vision if "vision_config" in _config(name) else set())


@pytest.mark.parametrize("path", sorted(HUB.glob("*.json")), ids=lambda p: p.stem)
def test_the_hub_fixtures_are_accepted_as_they_are(path: Path) -> None:
    config = json.loads(path.read_text(encoding="utf-8"))
    assert Scenario(architecture=config).architecture is not None


def test_mixtral_is_a_mixture_of_experts_not_a_dense_model() -> None:
    """Issue 24: Mixtral's own keys gave a dense 7.24B model, 15.75 GiB, "fits" on one A100 80GB."""
    est = estimate(
        Scenario(architecture=_config("mistralai--Mixtral-8x7B-v0.1"), task="inference"), plan=False
    )
    assert est.params_total == 46_702_792_704
    assert est.gpu.id == "a100-80gb" and not est.fits
    assert round(est.per_gpu.total_bytes / GiB, 2) == 92.86  # 86.99 GiB of bf16 weights alone


def test_deepseek_v2_lite_keeps_its_experts_and_mla() -> None:
    arch = Scenario(architecture=_config("deepseek-ai--DeepSeek-V2-Lite")).architecture
    assert arch is not None
    assert (arch.num_experts, arch.num_shared_experts, arch.first_k_dense_layers) == (64, 2, 1)
    assert (arch.kv_lora_rank, arch.q_lora_rank, arch.qk_rope_head_dim) == (512, None, 64)  # null: no q LoRA
    assert arch.attention_kind == "mla"


def test_a_misspelt_key_is_refused_with_the_key_it_resembles(client: TestClient) -> None:
    config = _config("meta-llama--Meta-Llama-3-8B")
    config["num_hiden_layers"] = config.pop("num_hidden_layers")
    r = client.post("/v1/estimate", json={"architecture": config, "task": "inference", "gpu": "h100"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "architecture"
    assert (
        "'num_hiden_layers'" in body["error"]
        and "num_hidden_layers" in body["error"].split("num_hiden_layers")[1]
    )


def test_a_key_of_another_family_is_refused_by_name() -> None:
    """`num_local_experts` is Mixtral's: under model_type llama it would be dropped, so it is refused."""
    config = {**_config("meta-llama--Meta-Llama-3-8B"), "num_local_experts": 8, "my_flag": 1}
    with pytest.raises(ValidationError) as err:
        Scenario(architecture=config)
    text = str(err.value)
    assert "'my_flag', 'num_local_experts'" in text and "model_type 'llama'" in text
    assert "hidden_size" in text  # the accepted keys are listed


def test_irrelevant_keys_are_accepted_and_change_nothing() -> None:
    config = _config("meta-llama--Meta-Llama-3-8B")
    bare = {k: config[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads")} | {
        k: config[k]
        for k in ("num_hidden_layers", "num_key_value_heads", "vocab_size", "max_position_embeddings")
    }
    full = estimate(Scenario(architecture=config, task="inference", gpu="h100"), plan=False)
    plain = estimate(Scenario(architecture=bare, task="inference", gpu="h100"), plan=False)
    assert full.per_gpu.total_bytes == plain.per_gpu.total_bytes


@pytest.mark.parametrize(
    ("name", "left_out", "expected"),
    [
        (
            "mistralai--Mixtral-8x7B-v0.1",
            ["num_local_experts", "num_experts_per_tok"],
            {"num_local_experts": 8, "num_experts_per_tok": 2},
        ),
        (
            "deepseek-ai--DeepSeek-V3",
            ["n_shared_experts", "first_k_dense_replace", "q_lora_rank", "qk_rope_head_dim"],
            {"n_shared_experts": 1, "first_k_dense_replace": 3, "q_lora_rank": 1536, "qk_rope_head_dim": 64},
        ),
        ("Qwen--Qwen3-30B-A3B", ["moe_intermediate_size"], {"moe_intermediate_size": 768}),
    ],
)
def test_every_moe_and_mla_default_filled_is_an_assumption(
    name: str, left_out: list[str], expected: dict
) -> None:
    config = {k: v for k, v in _config(name).items() if k not in left_out}
    est = estimate(Scenario(architecture=config, task="inference", gpu="h100"), plan=False)
    said = {
        a.values["key"]: a.values["default"]
        for a in est.assumptions
        if a.code == "architecture.config_default"
    }
    assert said == expected
    # those are the published values, so the count is the catalog's
    assert est.params_total == get_model(CATALOG_ID[name]).params


def test_an_estimate_from_a_config_json_round_trips() -> None:
    first = estimate(Scenario(architecture=_config("deepseek-ai--DeepSeek-V2-Lite"), task="lora", gpu="h100"))
    again = estimate(Scenario.model_validate(json.loads(first.scenario.model_dump_json())))
    assert again.model_dump() == first.model_dump()


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("deepseek-ai--DeepSeek-V2-Lite", "first_k_dense_replace", [1]),
        ("mistralai--Mixtral-8x7B-v0.1", "max_position_embeddings", {"a": 1}),
        ("THUDM--glm-4-9b", "num_attention_heads", 0),
        ("deepseek-ai--DeepSeek-V2-Lite", "n_shared_experts", "two"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_422_not_a_500(
    client: TestClient, name: str, key: str, value: object
) -> None:
    r = client.post("/v1/estimate", json={"architecture": {**_config(name), key: value}, "task": "inference"})
    assert r.status_code == 422 and r.json()["field"] == "architecture", r.text
