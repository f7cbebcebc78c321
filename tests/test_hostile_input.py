"""No input breaks the service: impossible architectures, lone surrogates, huge bodies and strings, empty
keys, wrong media types, booleans and NaN where numbers belong each get a 4xx that says what was wrong,
never a 500, an `internal error` answer or a confident number; and the OpenAPI document says what is
accepted (message bounds, the SSE response and its event names)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service_support import offline_settings, parse_sse, reset_sse_exit_flag

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

LLAMA_7B_ARCH = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
}
JSON = {"content-type": "application/json"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = offline_settings(tmp_path / "hostile.sqlite3", agent_processes=0, max_body_bytes=64 * 1024)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


def _estimate_arch(client: TestClient, **arch: object):  # type: ignore[no-untyped-def]
    body = {"architecture": {**LLAMA_7B_ARCH, **arch}, "task": "inference", "gpu": "4090"}
    return client.post("/v1/estimate", json=body)


# ---- architectures -------------------------------------------------------------------------------------
def test_moe_layer_freq_zero_is_a_422_not_a_division_by_zero(client: TestClient) -> None:
    r = _estimate_arch(
        client, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=100, moe_layer_freq=0
    )
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "architecture.moe_layer_freq"


@pytest.mark.parametrize(
    ("arch", "field", "says"),
    [
        ({"norms_per_layer": -100000}, "norms_per_layer", "greater than or equal to 0"),
        ({"extra_params": -1e12}, "extra_params", "greater than or equal to 0"),
        ({"hidden_size": 7}, "head_dim", "not divisible by num_attention_heads (32)"),
        ({"num_key_value_heads": 64}, "num_key_value_heads", "more than num_attention_heads (32)"),
        ({"num_key_value_heads": 5}, "num_key_value_heads", "does not divide num_attention_heads (32)"),
        ({"num_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok", "more than num_experts (8)"),
        ({"first_k_dense_layers": 40}, "first_k_dense_layers", "more than num_hidden_layers (32)"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers", "less than or equal to"),
        ({"vocab_size": 0}, "vocab_size", "greater than 0"),
        ({"hidden_size": True}, "hidden_size", "boolean"),
        ({"num_experts": -2}, "num_experts", "greater than 0"),
    ],
)
def test_impossible_architectures_are_refused_naming_the_field(
    client: TestClient, arch: dict, field: str, says: str
) -> None:
    r = _estimate_arch(client, **arch)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["field"] == f"architecture.{field}", body
    assert says in body["error"], body


def test_a_valid_explicit_architecture_still_answers(client: TestClient) -> None:
    r = _estimate_arch(client, num_key_value_heads=8)
    assert r.status_code == 200, r.text
    assert r.json()["per_gpu"]["total_bytes"] > 0


# ---- text that is not text -------------------------------------------------------------------------------
def test_lone_surrogates_are_a_400_on_every_route(client: TestClient) -> None:
    chat = '{"message": "Llama-2-7B inference on a 4090 \\ud800?"}'
    r = client.post("/v1/chat", content=chat, headers=JSON)
    assert r.status_code == 400, r.text
    assert "surrogate" in r.json()["error"] and r.json()["field"] == "body"
    completion = (
        '{"model": "vramwise", "messages": [{"role": "user", "content": "Llama-2-7B on a 4090 \\udfff"}]}'
    )
    r = client.post("/v1/chat/completions", content=completion, headers=JSON)
    assert r.status_code == 400, r.text
    assert "surrogate" in r.json()["error"]["message"]
    # a valid pair (an emoji) is text
    ok = '{"message": "Llama-2-7B inference on a 4090 \\ud83d\\ude00"}'
    with client.stream("POST", "/v1/chat", content=ok, headers=JSON) as resp:
        assert resp.status_code == 200
        assert parse_sse(resp.iter_lines())[-1].event == "done"


# ---- size --------------------------------------------------------------------------------------------
def test_a_body_over_the_limit_is_a_413_also_when_chunked(client: TestClient) -> None:
    big = json.dumps({"model": "x" * 200_000, "gpu": "4090"})
    r = client.post("/v1/estimate", content=big, headers=JSON)
    assert r.status_code == 413, r.text
    assert r.json()["accepted"] == "at most 65,536 bytes (VRAMWISE_MAX_BODY_BYTES)"
    assert len(r.content) < 500

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused while reading
        yield b'{"message": "'
        for _ in range(100):
            yield b"a" * 1024
        yield b'"}'

    r = client.post("/v1/chat", content=chunks(), headers=JSON)
    assert r.status_code == 413, r.text


def test_long_strings_are_bounded_and_errors_do_not_echo_them(client: TestClient) -> None:
    r = client.post("/v1/estimate", json={"model": "m" * 50_000, "gpu": "4090"})
    assert r.status_code == 422 and r.json()["field"] == "model"
    assert len(r.content) < 500, len(r.content)
    r = client.post("/v1/estimate", json={"model": "n" * 199, "task": "inference", "gpu": "4090"})
    assert r.status_code == 422 and r.json()["field"] == "model"
    assert "n" * 61 not in r.json()["error"] and "(199 characters)" in r.json()["error"]
    r = client.post("/v1/estimate", json={"model": "llama-2-7b", "task": "inference", "gpu": "g" * 150})
    assert r.status_code == 422 and r.json()["field"] == "gpu"
    assert "g" * 61 not in r.json()["error"]
    r = client.get("/v1/conversations/" + "c" * 300)
    assert r.status_code == 404 and "c" * 61 not in r.json()["error"]


# ---- empty and odd values ----------------------------------------------------------------------------------
@pytest.mark.parametrize("user", ["", "   "])
def test_an_empty_openai_user_is_a_422_and_nothing_is_stored(client: TestClient, user: str) -> None:
    body = {
        "model": "vramwise",
        "user": user,
        "messages": [{"role": "user", "content": "Llama-2-7B on a 4090?"}],
    }
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["param"] == "user"


def test_an_empty_message_says_why(client: TestClient) -> None:
    r = client.post("/v1/chat", json={"message": ""})
    assert r.status_code == 422
    body = r.json()
    assert body["error"].startswith("message is empty") and body["accepted"] == "1 to 32000 characters"


def test_a_wrong_content_type_is_a_415(client: TestClient) -> None:
    r = client.post(
        "/v1/chat", content="message=hi", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 415, r.text
    assert r.json()["accepted"] == "Content-Type: application/json"
    r = client.post("/v1/estimate", content='{"model": "llama-2-7b"}', headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = client.post("/v1/chat/completions", content="{}", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "body",
    [
        "{bad",
        '{"message": "x",}',
        '{"learning_rate": NaN}',
        '{"seq_len": Infinity}',
        '{"epochs": -Infinity}',
        '{"epochs": 1e999}',
        "[" * 100_00 + "]" * 100_00,
        b'{"message": "\xff"}',
    ],
)
def test_every_unreadable_body_gets_the_same_400_shape(client: TestClient, body: str | bytes) -> None:
    shapes = set()
    for path in ("/v1/chat", "/v1/estimate", "/v1/display"):
        r = client.post(path, content=body, headers=JSON)
        assert r.status_code == 400, (path, r.text)
        data = r.json()
        assert data["error"].startswith("malformed JSON in the request body: "), data
        shapes.add((tuple(sorted(data)), data["field"], data["accepted"]))
    assert len(shapes) == 1, shapes


def test_booleans_are_not_numbers(client: TestClient) -> None:
    r = client.post("/v1/estimate", json={"model": "llama-2-7b", "gpu": "4090", "batch_size": True})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "batch_size" and "boolean" in r.json()["error"]
    r = client.post(
        "/v1/estimate", json={"model": "llama-2-7b", "gpu": "4090", "gradient_checkpointing": True}
    )
    assert r.status_code == 200  # a real boolean field still takes one


# ---- the OpenAPI document says what is accepted -----------------------------------------------------------
def test_openapi_declares_message_bounds_and_the_event_stream(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    message = spec["components"]["schemas"]["ChatRequest"]["properties"]["message"]
    assert (message["minLength"], message["maxLength"]) == (1, 32000)
    ok = spec["paths"]["/v1/chat"]["post"]["responses"]["200"]["content"]
    assert list(ok) == ["text/event-stream"]
    events = ok["text/event-stream"]["itemSchema"]["properties"]["event"]["enum"]
    assert events == ["meta", "scenario", "estimate", "display", "token", "notice", "done", "error"]
    for code in ("400", "413", "415", "422"):  # the errors of the event-stream route are JSON
        assert list(spec["paths"]["/v1/chat"]["post"]["responses"][code]["content"]) == ["application/json"]
    completions = spec["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    assert set(completions) == {"application/json", "text/event-stream"}
    for code in ("400", "422"):
        assert code in spec["paths"]["/v1/estimate"]["post"]["responses"]


@pytest.mark.parametrize("params", [1, 50_000])
def test_params_without_a_model_names_params_not_a_made_up_model(client: TestClient, params: int) -> None:
    r = client.post("/v1/estimate", json={"params": params, "task": "inference", "gpu": "4090"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["field"] == "params", body
    assert "too small for a decoder language model" in body["error"]
    assert "unknown model" not in body["error"] and "e-" not in body["error"]


@pytest.mark.parametrize(("params", "label"), [(7_000_000_000, "7B"), (10**15, "1000000B")])
def test_params_without_a_model_is_taken_at_that_count(client: TestClient, params: int, label: str) -> None:
    r = client.post("/v1/estimate", json={"params": params, "task": "inference", "gpu": "4090"})
    assert r.status_code == 200, r.text
    assert r.json()["scenario"]["model"] == label and r.json()["scenario"]["params"] == params
