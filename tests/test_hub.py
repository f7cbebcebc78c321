"""Hugging Face Hub look-up against a fake Hub on 127.0.0.1 (HF_ENDPOINT), serving real config.json files.

Covers: the architecture and exact safetensors count of a repo the catalog lacks, quantization_config,
the disk cache (HF_HOME) and HF_HUB_OFFLINE, a gated repo (401) with and without HF_TOKEN, a 404, a slow
server against the time bound, a malformed config.json, and /v1/estimate with an `org/name` model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.agent.assumption_text import assumption_text
from service.hub import HubSettings, estimate_any_model, fetch_hub_model, resolve_hub_scenario
from tests.fakes.hub_server import FakeHub, FakeRepo, fake_hub, safetensors_header
from tools.errors import ScenarioError
from tools.scenario import Scenario

FIXTURES = Path(__file__).parent / "fixtures" / "hub"
QWEN_05B_PARAMS = 494_032_768  # HF safetensors count of Qwen/Qwen2.5-0.5B-Instruct (tied head not stored)


def _config(name: str) -> bytes:
    return (FIXTURES / f"{name}.config.json").read_bytes()


def _qwen2_shards() -> dict[str, bytes]:
    """Qwen2.5-0.5B's checkpoint tensors (names and shapes of the real repo) in two shards + index."""
    h, inter, kv, vocab = 896, 4864, 128, 151936

    def layer(i: int) -> dict[str, tuple[str, list[int]]]:
        p = f"model.layers.{i}."
        return {
            p + "input_layernorm.weight": ("BF16", [h]),
            p + "mlp.down_proj.weight": ("BF16", [h, inter]),
            p + "mlp.gate_proj.weight": ("BF16", [inter, h]),
            p + "mlp.up_proj.weight": ("BF16", [inter, h]),
            p + "post_attention_layernorm.weight": ("BF16", [h]),
            p + "self_attn.k_proj.bias": ("BF16", [kv]),
            p + "self_attn.k_proj.weight": ("BF16", [kv, h]),
            p + "self_attn.o_proj.weight": ("BF16", [h, h]),
            p + "self_attn.q_proj.bias": ("BF16", [h]),
            p + "self_attn.q_proj.weight": ("BF16", [h, h]),
            p + "self_attn.v_proj.bias": ("BF16", [kv]),
            p + "self_attn.v_proj.weight": ("BF16", [kv, h]),
        }

    first: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": ("BF16", [vocab, h])}
    second: dict[str, tuple[str, list[int]]] = {"model.norm.weight": ("BF16", [h])}
    for i in range(24):
        (first if i < 12 else second).update(layer(i))
    names = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    index = {
        "metadata": {"total_size": 2 * QWEN_05B_PARAMS},
        "weight_map": {t: shard for shard, tensors in names.items() for t in tensors},
    }
    files = {shard: safetensors_header(tensors) for shard, tensors in names.items()}
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    return files


REPOS = {
    "Qwen/Qwen2.5-0.5B-Instruct": lambda: FakeRepo(
        {"config.json": _config("Qwen--Qwen2.5-0.5B-Instruct"), **_qwen2_shards()}
    ),
    # the same checkpoint under a name the catalog does not know (a fine-tune, a mirror's copy)
    "acme/qwen-mini-sft": lambda: FakeRepo(
        {"config.json": _config("Qwen--Qwen2.5-0.5B-Instruct"), **_qwen2_shards()}
    ),
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": lambda: FakeRepo(
        {"config.json": _config("Qwen--Qwen2.5-7B-Instruct-GPTQ-Int4")}
    ),
    "acme/nemo-gated": lambda: FakeRepo(
        {"config.json": _config("mistralai--Mistral-Nemo-Base-2407")}, gated=True
    ),
    "acme/slow-model": lambda: FakeRepo({"config.json": _config("Qwen--Qwen2.5-0.5B-Instruct")}, delay_s=3.0),
    "acme/broken": lambda: FakeRepo({"config.json": b'{"model_type": "llama", "hidden_size": 4096,'}),
}


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with fake_hub({repo: make() for repo, make in REPOS.items()}) as server:
        yield server


def _settings(hub: FakeHub, tmp_path: Path, **env: str) -> HubSettings:
    return HubSettings.from_env({"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), **env})


def test_architecture_and_exact_count_from_the_hub(hub: FakeHub, tmp_path: Path) -> None:
    model = fetch_hub_model("Qwen/Qwen2.5-0.5B-Instruct", _settings(hub, tmp_path))
    assert model.architecture.hidden_size == 896 and model.architecture.kv_heads == 2
    assert model.architecture.tie_word_embeddings and model.architecture.attention_bias
    assert model.safetensors_params == QWEN_05B_PARAMS
    assert model.params_by_dtype == {"BF16": QWEN_05B_PARAMS}
    assert model.stored_dtype == "bf16" and model.revision and not model.from_cache
    # the architecture's own count agrees with the checkpoint's headers to the parameter
    from tools.model.params import count_params

    assert count_params(model.architecture).total == QWEN_05B_PARAMS
    # the files landed in the HF_HOME cache
    assert list((tmp_path / "hf" / "hub").glob("models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/*/config.json"))


def test_cache_then_offline(hub: FakeHub, tmp_path: Path) -> None:
    fetch_hub_model("Qwen/Qwen2.5-0.5B-Instruct", _settings(hub, tmp_path))
    before = len(hub.requests)
    offline = fetch_hub_model("Qwen/Qwen2.5-0.5B-Instruct", _settings(hub, tmp_path, HF_HUB_OFFLINE="1"))
    assert len(hub.requests) == before  # HF_HUB_OFFLINE: nothing sent
    assert offline.from_cache and offline.safetensors_params == QWEN_05B_PARAMS
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", _settings(hub, tmp_path, HF_HUB_OFFLINE="1"))
    assert err.value.code == "hub_unreachable" and "HF_HUB_OFFLINE" in err.value.message


def test_quantization_config_sets_the_format(hub: FakeHub, tmp_path: Path) -> None:
    sc = Scenario(model="Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", task="inference", gpu="4090")
    resolved, assumption = resolve_hub_scenario(sc, _settings(hub, tmp_path))
    assert (
        resolved.weight_dtype == "int4"
        and resolved.quant_method == "gptq"
        and resolved.quant_group_size == 128
    )
    assert assumption is not None and assumption.values["quant"] == "gptq"
    assert "quantization_config: gptq" in assumption_text(assumption, "en")
    assert resolved.architecture is not None and resolved.architecture.hidden_size == 3584


def test_gated_repo_needs_a_token(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/nemo-gated", _settings(hub, tmp_path))
    assert err.value.code == "hub_gated" and "HF_TOKEN" in err.value.message
    model = fetch_hub_model("acme/nemo-gated", _settings(hub, tmp_path, HF_TOKEN="hf_test_token"))
    from tools.model.params import count_params

    assert count_params(model.architecture).total == 12_247_782_400  # Mistral-Nemo-Base-2407


def test_unknown_repo_is_a_404_naming_the_endpoint(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/does-not-exist", _settings(hub, tmp_path))
    assert (
        err.value.code == "hub_not_found"
        and hub.url in err.value.message
        and "HF_ENDPOINT" in err.value.message
    )


def test_slow_hub_is_time_bounded(hub: FakeHub, tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/slow-model", _settings(hub, tmp_path, VRAMWISE_HUB_TIMEOUT_S="0.5"))
    assert time.monotonic() - t0 < 2.5
    assert err.value.code in ("hub_timeout", "hub_unreachable") and "HF_ENDPOINT" in err.value.message


def test_malformed_config_is_a_clear_error(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/broken", _settings(hub, tmp_path))
    assert err.value.field == "architecture" and "not valid JSON" in err.value.message


def test_unreachable_hub_names_the_setting(tmp_path: Path) -> None:
    settings = HubSettings.from_env(
        {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf"), "VRAMWISE_HUB_TIMEOUT_S": "2"}
    )
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/anything", settings)
    assert err.value.code in ("hub_unreachable", "hub_timeout") and "HF_ENDPOINT" in err.value.message


def test_catalog_models_never_touch_the_hub(hub: FakeHub, tmp_path: Path) -> None:
    sc = Scenario(model="Qwen/Qwen2.5-7B-Instruct", task="inference")
    resolved, assumption = resolve_hub_scenario(sc, _settings(hub, tmp_path))
    assert resolved is sc and assumption is None and hub.requests == []


def test_estimate_of_a_hub_model(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    est = estimate_any_model(
        Scenario(model="acme/qwen-mini-sft", task="inference", gpu="4090", weight_dtype="bf16"), plan=False
    )
    weights = next(c for c in est.components if c.name == "weights")
    assert weights.bytes == 2 * QWEN_05B_PARAMS  # bf16: 2 bytes x the exact count
    first = est.assumptions[0]
    assert first.field == "model" and "Hugging Face Hub" in first.reason and "494,032,768" in first.reason
    assert "Hugging Face Hub" in assumption_text(
        first, "zh"
    )  # every language says where the config came from


def test_v1_estimate_resolves_hub_ids(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from service.app import create_app
    from tests.service_support import offline_settings

    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with TestClient(create_app(offline_settings(tmp_path / "db.sqlite3"))) as client:
        ok = client.post("/v1/estimate", json={"model": "acme/qwen-mini-sft", "task": "inference"})
        assert ok.status_code == 200, ok.text
        assert "Hugging Face Hub" in ok.json()["assumptions"][0]["reason"]
        gated = client.post("/v1/estimate", json={"model": "acme/nemo-gated", "task": "inference"})
        assert gated.status_code == 422 and "HF_TOKEN" in gated.text  # a clear error, never a 500
