"""Issue 30, items 3 and 7: the Hub look-up is kept and bounded, and bad names or configs are 4xx.

Against the fake Hub on loopback (tests/fakes/hub_server.py): a resolved repo is kept in memory and on disk
for VRAMWISE_HUB_CACHE_TTL_S (each estimate naming an org/name made 4-5 Hub requests, cached names
included); on a real `vramwise serve`, a Hub that does not answer holds at most VRAMWISE_HUB_MAX_LOOKUPS
threads and does not slow ordinary estimates (it delayed them by up to 9.6 s); messages never show a server
path; `org/a--b`-style ids and a deeply nested config.json are 422s, never 500s."""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path

import httpx
import pytest

from service.hub import HubSettings, fetch_hub_model
from service.hub_cache import ResolvedRepos
from tests.fakes.hub_server import FakeRepo, fake_hub
from tests.serve_support import serve, serve_env
from tools.errors import ScenarioError

FIXTURES = Path(__file__).parent / "fixtures" / "hub"
QWEN_CONFIG = (FIXTURES / "Qwen--Qwen2.5-0.5B-Instruct.config.json").read_bytes()


def _settings(url: str, tmp_path: Path, **env: str) -> HubSettings:
    return HubSettings.from_env({"HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hf"), **env})


def test_a_resolved_repo_costs_the_hub_nothing_within_its_ttl(tmp_path: Path) -> None:
    with fake_hub({"acme/kept": FakeRepo({"config.json": QWEN_CONFIG})}) as hub:
        first = fetch_hub_model("acme/kept", _settings(hub.url, tmp_path))
        sent = len(hub.requests)
        for _ in range(5):
            again = fetch_hub_model("acme/kept", _settings(hub.url, tmp_path))
        assert sent >= 2 and len(hub.requests) == sent  # five more look-ups, no request
        assert again.architecture == first.architecture and again.revision == first.revision
        # on disk too: another process (a fresh memory) reads it without the Hub
        kept = ResolvedRepos().get(hub.url, tmp_path / "hf" / "hub", "acme/kept", ttl_s=60)
        assert kept is not None and kept.config["hidden_size"] == 896
        # a TTL of 0 keeps nothing: every look-up asks the Hub
        fetch_hub_model("acme/kept", _settings(hub.url, tmp_path, VRAMWISE_HUB_CACHE_TTL_S="0"))
        assert len(hub.requests) > sent


def test_an_unreachable_hub_names_no_server_path(tmp_path: Path) -> None:
    settings = _settings("http://127.0.0.1:9", tmp_path, VRAMWISE_HUB_TIMEOUT_S="2")
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/anything", settings)
    assert str(tmp_path) not in err.value.message and "/hf" not in err.value.message
    offline = _settings("http://127.0.0.1:9", tmp_path, HF_HUB_OFFLINE="1")
    with pytest.raises(ScenarioError) as err:
        fetch_hub_model("acme/anything", offline)
    assert str(tmp_path) not in err.value.message and "HF_HOME" in err.value.message


def test_a_deeply_nested_config_is_a_422_not_a_500(tmp_path: Path) -> None:
    nested = b'{"model_type": "llama", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    odd = b'{"model_type": "llama", "hidden_size": [1], "num_hidden_layers": {"a": 1}}'
    repos = {"acme/deep": FakeRepo({"config.json": nested}), "acme/odd": FakeRepo({"config.json": odd})}
    with fake_hub(repos) as hub:
        env = serve_env(tmp_path / "db.sqlite3", HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"))
        log = tmp_path / "server.log"
        with serve(env, log) as (url, _):
            for repo in repos:
                r = httpx.post(f"{url}/v1/estimate", json={"model": repo, "task": "inference"}, timeout=30)
                assert r.status_code == 422, (repo, r.text)
                assert r.json()["field"] == "architecture" and r.json()["accepted"]
    assert "Traceback" not in log.read_text()


@pytest.mark.parametrize(
    "name", ["org/a--b", "org/a..b", "org/name-", "org/name.git", "org/.name", "-org/name"]
)
def test_names_the_hub_refuses_are_422(tmp_path: Path, name: str) -> None:
    from fastapi.testclient import TestClient

    from service.app import create_app
    from tests.service_support import offline_settings

    with TestClient(create_app(offline_settings(tmp_path / "db.sqlite3", agent_processes=0))) as client:
        r = client.post("/v1/estimate", json={"model": name, "task": "inference"})
    assert r.status_code == 422, r.text
    assert "no '--' or '..'" in r.json()["accepted"]


def test_a_hub_that_never_answers_does_not_slow_other_estimates(tmp_path: Path) -> None:
    repos = {f"acme/stuck-{i}": FakeRepo({"config.json": QWEN_CONFIG}, delay_s=20.0) for i in range(60)}
    with fake_hub(repos) as hub:
        env = serve_env(
            tmp_path / "db.sqlite3",
            HF_ENDPOINT=hub.url,
            HF_HOME=str(tmp_path / "hf"),
            VRAMWISE_HUB_TIMEOUT_S="4",
        )
        log = tmp_path / "server.log"
        with serve(env, log) as (url, _), concurrent.futures.ThreadPoolExecutor(64) as pool:
            stuck = [
                pool.submit(httpx.post, f"{url}/v1/estimate", json={"model": name}, timeout=60)
                for name in repos
            ]
            time.sleep(1.0)  # every stuck look-up has started
            started = time.monotonic()
            ordinary = httpx.post(
                f"{url}/v1/estimate", json={"model": "llama-2-7b", "gpu": "4090"}, timeout=60
            )
            ordinary_s = time.monotonic() - started
            asked_the_hub = len([r for r in hub.requests if "/resolve/" in r])  # one per look-up thread
            codes = [f.result().status_code for f in stuck]
    assert ordinary.status_code == 200 and ordinary_s < 1.5, ordinary_s
    assert set(codes) == {422}, codes  # hub_busy or hub_timeout: clear errors, never a 500
    assert asked_the_hub <= 4, hub.requests  # VRAMWISE_HUB_MAX_LOOKUPS: at most 4 threads wait on the Hub
    assert "Traceback" not in log.read_text()
