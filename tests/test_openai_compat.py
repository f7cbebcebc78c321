"""The OpenAI-compatible endpoint through the REAL `openai` SDK against a REAL uvicorn on
127.0.0.1: non-streaming and streaming completions whose text carries the estimator's numbers,
conversations continued by id or restored from the messages array, errors as SDK exceptions."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from service.app import create_app
from tests.service_support import GIB, live_server, offline_settings, reset_sse_exit_flag
from tools.estimator import estimate
from tools.scenario import Scenario

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

QUESTION = "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("openai") / "conversations.sqlite3"
    with live_server(create_app(offline_settings(db))) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c


def stored(base_url: str, conversation_id: str) -> dict:
    r = httpx.get(f"{base_url}/v1/conversations/{conversation_id}", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def total_gib_text(scenario: dict) -> str:
    return f"{estimate(Scenario.model_validate(scenario)).per_gpu.total_bytes / GIB:.2f}"


def test_non_streaming_completion_carries_the_tools_numbers(client: openai.OpenAI, base_url: str) -> None:
    resp = client.chat.completions.create(model="vramwise", messages=[{"role": "user", "content": QUESTION}])
    assert resp.object == "chat.completion" and resp.model == "vramwise"
    assert resp.choices[0].finish_reason == "stop"
    text = resp.choices[0].message.content or ""
    cid = resp.model_extra["conversation_id"]
    conv = stored(base_url, cid)
    assert conv["turns"][0]["answer"] == text
    assert conv["scenario"]["model"] == "llama-2-7b" and conv["scenario"]["task"] == "lora"
    assert total_gib_text(conv["scenario"]) in text


def test_streaming_completion(client: openai.OpenAI, base_url: str) -> None:
    stream = client.chat.completions.create(
        model="vramwise", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.object == "chat.completion.chunk" and c.model == "vramwise" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len([c for c in chunks if c.choices[0].delta.content]) > 1  # it really streamed
    conv = stored(base_url, chunks[0].model_extra["conversation_id"])
    assert conv["turns"][0]["answer"] == text
    assert total_gib_text(conv["scenario"]) in text


def test_continue_a_conversation_by_id(client: openai.OpenAI, base_url: str) -> None:
    first = client.chat.completions.create(model="vramwise", messages=[{"role": "user", "content": QUESTION}])
    cid = first.model_extra["conversation_id"]
    follow = client.chat.completions.create(
        model="vramwise",
        messages=[{"role": "user", "content": "What about an A100 80GB?"}],
        extra_body={"conversation_id": cid},
    )
    assert follow.model_extra["conversation_id"] == cid
    conv = stored(base_url, cid)
    assert len(conv["turns"]) == 2
    assert conv["scenario"]["model"] == "llama-2-7b" and conv["scenario"]["gpu"] == "a100-80gb"
    assert total_gib_text(conv["scenario"]) in (follow.choices[0].message.content or "")


def test_user_field_is_a_stable_conversation_key(client: openai.OpenAI, base_url: str) -> None:
    user = "team-a-notebook-7"
    client.chat.completions.create(
        model="vramwise", messages=[{"role": "user", "content": QUESTION}], user=user
    )
    client.chat.completions.create(
        model="vramwise", messages=[{"role": "user", "content": "What about an A100 80GB?"}], user=user
    )
    conv = stored(base_url, user)
    assert [t["question"] for t in conv["turns"]] == [QUESTION, "What about an A100 80GB?"]
    assert conv["scenario"]["model"] == "llama-2-7b" and conv["scenario"]["gpu"] == "a100-80gb"


def test_messages_array_restores_the_previous_scenario(client: openai.OpenAI, base_url: str) -> None:
    """A stateless front end resends the whole history: earlier questions are re-parsed."""
    first = client.chat.completions.create(model="vramwise", messages=[{"role": "user", "content": QUESTION}])
    history = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "What about an A100 80GB?"},
    ]
    follow = client.chat.completions.create(model="vramwise", messages=history)
    conv = stored(base_url, follow.model_extra["conversation_id"])
    assert conv["scenario"]["model"] == "llama-2-7b" and conv["scenario"]["task"] == "lora"
    assert conv["scenario"]["gpu"] == "a100-80gb"
    assert total_gib_text(conv["scenario"]) in (follow.choices[0].message.content or "")


def test_models_list(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["vramwise"]
    assert client.models.retrieve("vramwise").id == "vramwise"


def test_errors_surface_as_sdk_exceptions(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert "The model 'gpt-4o' does not exist on this endpoint; use 'vramwise'" in str(err.value)

    with pytest.raises(openai.UnprocessableEntityError) as err:
        client.chat.completions.create(model="vramwise", messages=[{"role": "user", "content": "  "}])
    assert "messages.0.content is empty" in str(err.value)

    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(
            model="vramwise",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"conversation_id": "nope"},
        )
    assert "unknown conversation_id 'nope'" in str(err.value)

    with pytest.raises(openai.UnprocessableEntityError) as err:
        client.chat.completions.create(model="vramwise", messages=[{"role": "assistant", "content": "hi"}])
    assert "the last message must be the user's question" in str(err.value)


def test_malformed_json_is_a_400(base_url: str) -> None:
    r = httpx.post(
        f"{base_url}/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith("malformed JSON in the request body")
