"""The HTTP service through Starlette's TestClient (streams for real): every endpoint, the SSE
event order, bad input as 4xx with clear messages, and conversations that survive a restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.agent.assumption_text import with_english_text
from service.agent.base import ConversationState
from service.agent.events import AgentEvent, ErrorEvent, Language, TokenEvent
from service.app import create_app
from tests.service_support import GIB, SSEEvent, offline_settings, parse_sse, reset_sse_exit_flag
from tools.estimator import estimate as tool_estimate
from tools.result import Estimate
from tools.scenario import Scenario


def estimate(scenario: Scenario, plan: bool = True) -> Estimate:
    """The estimator's Estimate as the service shows it (English reasons and labels filled in)."""
    return with_english_text(tool_estimate(scenario, plan=plan))


__all__ = ["reset_sse_exit_flag"]  # autouse fixture

QUESTION = "Can I run Llama-2-7B inference on one RTX 4090?"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "conversations.sqlite3"


@pytest.fixture
def client(db_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(offline_settings(db_path, max_message_chars=300))) as c:
        yield c


def chat(client: TestClient, body: dict) -> list[SSEEvent]:
    with client.stream("POST", "/v1/chat", json=body) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        return parse_sse(resp.iter_lines())


def by_name(events: list[SSEEvent], name: str) -> list[SSEEvent]:
    return [e for e in events if e.event == name]


# ---- the chat stream ---------------------------------------------------------------------------------
def test_chat_stream_order_and_numbers_match_the_estimator(client: TestClient) -> None:
    events = chat(client, {"message": QUESTION})
    names = [e.event for e in events]
    assert names[0] == "meta"
    assert names[-1] == "done"
    assert names.count("done") == 1 and "error" not in names
    assert names.index("scenario") < names.index("estimate") < names.index("done")
    assert names.count("token") > 1
    cid = events[0].data["conversation_id"]
    assert len(cid) == 32 and events[0].data["agent"] == "offline"

    scenario = Scenario.model_validate(by_name(events, "scenario")[0].data)
    assert scenario.model == "llama-2-7b" and scenario.task == "inference"
    expected = estimate(scenario)
    streamed = by_name(events, "estimate")[0].data
    assert streamed["per_gpu"]["total_bytes"] == expected.per_gpu.total_bytes
    assert streamed["gpu"]["memory_bytes"] == expected.gpu.memory_bytes
    assert sum(c["bytes"] for c in streamed["components"]) == expected.per_gpu.total_bytes

    answer = by_name(events, "done")[0].data
    assert answer["conversation_id"] == cid
    assert answer["answer"] == "".join(e.data["text"] for e in by_name(events, "token"))
    assert answer["estimate"]["per_gpu"]["total_bytes"] == expected.per_gpu.total_bytes
    assert f"{expected.per_gpu.total_bytes / GIB:.2f}" in answer["answer"]


def test_follow_up_uses_the_stored_scenario(client: TestClient) -> None:
    first = chat(client, {"message": QUESTION})
    cid = first[0].data["conversation_id"]
    follow = chat(client, {"message": "What about an A100 80GB?", "conversation_id": cid})
    assert follow[0].data["conversation_id"] == cid
    scenario = Scenario.model_validate(by_name(follow, "scenario")[0].data)
    assert scenario.model == "llama-2-7b"  # from the stored scenario
    assert scenario.task == "inference"
    assert by_name(follow, "estimate")[0].data["gpu"]["id"] == "a100-80gb"

    stored = client.get(f"/v1/conversations/{cid}").json()
    assert [t["question"] for t in stored["turns"]] == [QUESTION, "What about an A100 80GB?"]
    assert stored["scenario"]["gpu"] == "a100-80gb"
    assert stored["turns"][1]["answer"] == by_name(follow, "done")[0].data["answer"]


def test_a_restart_loses_nothing(db_path: Path) -> None:
    with TestClient(create_app(offline_settings(db_path))) as c1:
        first = chat(c1, {"message": QUESTION})
    cid = first[0].data["conversation_id"]
    first_answer = by_name(first, "done")[0].data["answer"]

    # a new app (new engine, new agent) on the same file: the conversation continues
    with TestClient(create_app(offline_settings(db_path))) as c2:
        stored = c2.get(f"/v1/conversations/{cid}").json()
        assert stored["turns"][0]["answer"] == first_answer
        assert stored["scenario"]["model"] == "llama-2-7b"
        follow = chat(c2, {"message": "and with a batch of 8?", "conversation_id": cid})
    scenario = Scenario.model_validate(by_name(follow, "scenario")[0].data)
    assert scenario.model == "llama-2-7b" and scenario.batch_size == 8
    assert by_name(follow, "done")[0].data["conversation_id"] == cid


def test_chinese_question_answers_in_chinese(client: TestClient) -> None:
    events = chat(client, {"message": "用一张 4090 跑 Llama-2-7B 推理需要多少显存？"})
    done = by_name(events, "done")[0].data
    assert done["language"] == "zh"
    assert (
        done["estimate"]["gpu"]["memory_bytes"]
        == estimate(Scenario.model_validate(done["scenario"])).gpu.memory_bytes
    )


def test_chat_stream_carries_panel_texts_in_the_answers_language(client: TestClient) -> None:
    """`display` follows `estimate`: the Chinese answer's labels, reasons and changes for the page's
    panels (the Estimate itself keeps its English reasons); `done` carries the same object."""
    events = chat(client, {"message": "用一张 RTX 4090 能对 Llama-2-7B 做 LoRA 微调吗？"})
    names = [e.event for e in events]
    assert names.index("display") == names.index("estimate") + 1
    est = by_name(events, "estimate")[0].data
    expected = estimate(Scenario.model_validate(by_name(events, "scenario")[0].data))
    assert est["per_gpu"]["total_bytes"] == expected.per_gpu.total_bytes and not expected.fits
    display = by_name(events, "display")[0].data
    assert by_name(events, "done")[0].data["display"] == display
    assert display["language"] == "zh"
    assert display["verdict"].startswith("**结论：放不下。** 每卡需要 **") and "差 " in display["verdict"]

    assert [(c["name"], c["model_role"]) for c in display["components"]] == [
        (c.name, c.model_role) for c in expected.components
    ]
    labels = {c["name"]: c["label"] for c in display["components"]}
    assert labels["weights"] == "冻结的底座（BF16）+ 适配器"
    assert labels["optimizer_states"] == "AdamW 优化器状态（一阶矩与二阶矩）"
    assert (
        labels["activations"] == "激活值（不重计算，flash 注意力）"
        and labels["cuda_context"] == "CUDA 上下文"
    )

    assert [a["field"] for a in display["assumptions"]] == [a.field for a in expected.assumptions]
    shown = {a["field"]: a for a in display["assumptions"]}
    assert shown["batch_size"] == {
        "field": "batch_size",
        "label": "micro-batch（每卡每次前向的序列数）",
        "value": "1",
        "reason": "没有说明 micro-batch：按每卡每次 1 条序列计算（显存随它线性增长）",
    }
    assert shown["optimizer"]["value"] == "AdamW"
    assert shown["optimizer"]["reason"].startswith(
        "没有说明优化器：按 HF Trainer 默认的 adamw_torch_fused 计算"
    )
    english = {a.reason for a in expected.assumptions}
    assert not english & {a["reason"] for a in display["assumptions"]}
    assert {a["reason"] for a in est["assumptions"]} == english  # the contract field is unchanged

    assert len(display["suggestions"]) == len(expected.suggestions)
    assert display["suggestions"][0] == {"change": "开启梯度检查点", "tradeoffs": "；每步约慢 33%（重计算）"}
    for d, sug in zip(display["suggestions"], est["suggestions"], strict=True):
        assert d["change"] != sug["change"] and sug["change"]  # the JSON's change stays English


def test_english_display_keeps_the_estimators_texts(client: TestClient) -> None:
    events = chat(client, {"message": "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?"})
    display = by_name(events, "display")[0].data
    expected = estimate(Scenario.model_validate(by_name(events, "scenario")[0].data))
    assert display["language"] == "en" and display["verdict"].startswith("**Verdict: does not fit.**")
    assert [c["label"] for c in display["components"]][:2] == [
        "frozen base (bf16) + adapters",
        "AdamW m and v",
    ]
    shown = {a["field"]: a for a in display["assumptions"]}
    assert shown["batch_size"]["reason"] == "micro-batch of one sequence per GPU"
    assert shown["seq_len"]["reason"] == next(a.reason for a in expected.assumptions if a.field == "seq_len")
    assert display["suggestions"][0]["change"] == "gradient checkpointing"


def test_display_endpoint_restores_a_turns_panels(client: TestClient) -> None:
    scenario = {"model": "llama-2-7b", "task": "inference", "gpu": "4090"}
    r = client.post("/v1/display", json={"scenario": scenario, "language": "zh"})
    assert r.status_code == 200, r.text
    body = r.json()
    expected = estimate(Scenario.model_validate(scenario))
    assert body["estimate"] == json.loads(expected.model_dump_json())
    display = body["display"]
    assert display["language"] == "zh" and display["verdict"].startswith("**结论：放得下。**")
    assert {a["field"]: a["reason"] for a in display["assumptions"]}[
        "seq_len"
    ] == "没有说明序列长度：按 4096 token 的上下文计算（不超过模型的 max_position_embeddings）"
    assert display["serving"][0].startswith("**推理服务容量**")
    assert f"{expected.serving.max_kv_tokens:,}" in display["serving"][2]

    r = client.post("/v1/display", json={"scenario": {**scenario, "gpu": "rtx-9090"}, "language": "zh"})
    assert r.status_code == 422 and "rtx-9090" in r.text
    r = client.post("/v1/display", json={"scenario": scenario, "language": "fr"})
    assert r.status_code == 422


# ---- the stream always ends with done or error, whatever the agent does -------------------------------
class ScriptedAgent:
    """Protocol double for the runner's guarantees (the real agent never misbehaves on cue)."""

    def __init__(self, name: str, mode: str) -> None:
        self.name = name
        self.mode = mode

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        yield TokenEvent(text="partial ")
        if self.mode == "raise":
            raise RuntimeError("secret internal detail")
        if self.mode == "refuse":
            yield ErrorEvent(
                message="model: unknown 'llama-99'",
                field="model",
                accepted="a catalog id",
                suggestions=["llama-2-7b"],
            )


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("raise", "internal error while answering; the details are in the service log"),
        ("stop", "the agent stopped without an answer; please ask again"),
        ("refuse", "model: unknown 'llama-99'"),
    ],
)
def test_stream_ends_with_one_error_event(db_path: Path, mode: str, message: str) -> None:
    app = create_app(offline_settings(db_path), agent=ScriptedAgent("scripted", mode))
    with TestClient(app) as c:
        events = chat(c, {"message": "anything"})
        assert [e.event for e in events] == ["meta", "token", "error"]
        err = events[-1].data
        assert err["error"] == message
        assert "secret" not in json.dumps(err) and "Traceback" not in json.dumps(err)
        if mode == "refuse":
            assert err["field"] == "model" and err["suggestions"] == ["llama-2-7b"]
            # the id handed out in `meta` stays valid for a retry
            cid = events[0].data["conversation_id"]
            assert c.get(f"/v1/conversations/{cid}").status_code == 200


# ---- bad input: 4xx with a clear message, never a 500 ---------------------------------------------------
def test_empty_and_oversized_messages(client: TestClient) -> None:
    for message in ("", "   \n "):
        r = client.post("/v1/chat", json={"message": message})
        assert r.status_code == 422
        assert r.json()["field"] == "message" and r.json()["error"].startswith("message is empty")
    r = client.post("/v1/chat", json={"message": "x" * 301})
    assert r.status_code == 422
    assert r.json()["error"] == "message is 301 characters; the limit is 300"
    assert r.json()["accepted"] == "1 to 300 characters"


def test_unknown_conversation_id(client: TestClient) -> None:
    r = client.post("/v1/chat", json={"message": QUESTION, "conversation_id": "no-such-id"})
    assert r.status_code == 404
    assert r.json()["error"] == "unknown conversation_id 'no-such-id': omit it to start a new conversation"
    assert client.get("/v1/conversations/no-such-id").status_code == 404
    assert client.delete("/v1/conversations/no-such-id").status_code == 404


def test_malformed_json_and_wrong_fields(client: TestClient) -> None:
    r = client.post("/v1/chat", content=b'{"message": "hi",', headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"].startswith("malformed JSON in the request body")
    assert r.json()["field"] == "body"

    r = client.post("/v1/chat", json={"question": "hi"})
    assert r.status_code == 422
    assert "message: Field required" in r.json()["error"]
    assert "question: Extra inputs are not permitted" in r.json()["error"]

    r = client.post("/v1/chat", json={"message": "hi", "language": "fr"})
    assert r.status_code == 422
    assert r.json()["field"] == "language" and r.json()["accepted"] == "'en' or 'zh'"

    r = client.post("/v1/chat", json=["not", "an", "object"])
    assert r.status_code == 422


def test_unknown_route_and_method(client: TestClient) -> None:
    r = client.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"] == "no such endpoint: GET /v1/nothing-here (see /docs)"
    r = client.get("/v1/chat")
    assert r.status_code == 405 and r.json()["error"] == "method GET is not allowed on /v1/chat (see /docs)"


def test_unexpected_exception_is_a_clean_500(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(offline_settings(db_path))
    with TestClient(app, raise_server_exceptions=False) as c:

        async def broken(*args: object) -> None:
            raise RuntimeError("secret internal detail")

        monkeypatch.setattr("service.api.chat.conversation_page", broken)  # the read of GET /v1/conversations
        r = c.get("/v1/conversations/abc")
    assert r.status_code == 500
    assert (
        r.json()["error"] == "internal error while handling the request; the details are in the service log"
    )
    assert "secret" not in r.text and "Traceback" not in r.text


# ---- estimator, catalogs ------------------------------------------------------------------------------
def test_estimate_endpoint_equals_the_tool(client: TestClient) -> None:
    body = {"model": "llama-2-7b", "task": "lora", "gpu": "4090", "batch_size": 4, "seq_len": 1024}
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200
    assert r.json() == json.loads(estimate(Scenario.model_validate(body)).model_dump_json())


def test_estimate_endpoint_bad_scenarios(client: TestClient) -> None:
    r = client.post("/v1/estimate", json={"model": "llama-2-7b", "task": "inference", "gpu": "rtx-9090"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "gpu" and body["suggestions"], body
    assert "rtx-9090" in body["error"]

    r = client.post("/v1/estimate", json={"model": "llama-2-7b", "task": "sing", "gpu": "4090"})
    assert r.status_code == 422 and r.json()["field"] == "task"
    assert "inference" in r.json()["accepted"]

    r = client.post("/v1/estimate", json={"model": "llama-2-7b", "batch_size": 0, "gpu": "4090"})
    assert r.status_code == 422 and r.json()["field"] == "batch_size"


def test_catalogs(client: TestClient) -> None:
    models = {m["id"]: m for m in client.get("/v1/catalog/models").json()}
    assert models["llama-2-7b"]["published_params"] == 6_738_415_616
    gpus = {g["id"]: g for g in client.get("/v1/gpus").json()}
    assert gpus["a100-80gb"]["memory_bytes"] == 85_899_345_920  # 80 GiB: nvidia-smi's 81920 MiB
    assert "4090" in json.dumps(gpus)


def test_openai_models_list_keeps_openai_semantics(client: TestClient) -> None:
    r = client.get("/v1/models").json()
    assert r["object"] == "list" and [m["id"] for m in r["data"]] == ["vramwise"]
    assert client.get("/v1/models/vramwise").json()["id"] == "vramwise"
    r = client.get("/v1/models/gpt-4o")
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


# ---- health, docs, the page ---------------------------------------------------------------------------
def test_health_and_readiness(db_path: Path) -> None:
    app = create_app(offline_settings(db_path))
    with TestClient(app) as c:
        assert c.get("/healthz").json() == {"status": "ok", "agent": "offline", "version": "0.1.0"}
        assert c.get("/readyz").json() == {"status": "ready", "store": "ok"}
        c.portal.call(app.state.store.close)  # the database goes away
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json() == {
            "status": "unavailable",
            "store": "unreachable",
            "reason": "the database refused a read (conversation store is not open)",
        }


def test_openapi_documents_every_endpoint(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for path, method in [
        ("/v1/chat", "post"),
        ("/v1/chat/completions", "post"),
        ("/v1/estimate", "post"),
        ("/v1/display", "post"),
        ("/v1/models", "get"),
        ("/v1/catalog/models", "get"),
        ("/v1/gpus", "get"),
        ("/v1/conversations/{conversation_id}", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
    ]:
        assert method in paths[path], path
    assert "text/event-stream" in paths["/v1/chat"]["post"]["responses"]["200"]["content"]
    assert paths["/v1/estimate"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Estimate"
    }
    assert client.get("/docs").status_code == 200


def test_web_page_is_served_without_external_resources(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js">' in page.text
    for asset in ("/static/app.js", "/static/style.css", "/static/i18n.json"):
        r = client.get(asset)
        assert r.status_code == 200, asset
        assert "http://" not in r.text.replace("http://www.w3.org/2000/svg", "") and "https://" not in r.text
    strings = client.get("/static/i18n.json").json()
    assert set(strings["en"]) == set(strings["zh"])


# ---- LLM mode: the real LLM agent over HTTP against a fake OpenAI-compatible endpoint ------------------
def test_llm_mode_streams_the_llm_answer_with_the_tools_estimate(db_path: Path) -> None:
    from tests.fakes.openai_server import FakeOpenAI, Reply

    stated = {"model": "llama-2-7b", "task": "inference", "gpu": "4090", "batch_size": 1, "seq_len": 4096}
    expected = estimate(Scenario.model_validate(stated))
    text = (
        f"Llama-2-7B inference at 4096 tokens needs {expected.per_gpu.total_bytes / GIB:.2f} GiB on the card."
    )
    script = [Reply(tool_calls=[("estimate_memory", stated)]), Reply(content=text)]
    with FakeOpenAI(script) as fake:
        settings = offline_settings(
            db_path, agent="auto", openai_base_url=fake.base_url, openai_api_key="test"
        )
        with TestClient(create_app(settings)) as c:
            events = chat(c, {"message": "How much memory for Llama-2-7B inference at 4k context on a 4090?"})
            assert c.get("/healthz").json()["agent"] == "llm"
    assert events[0].event == "meta" and events[0].data["agent"] == "llm"
    assert events[-1].event == "done"
    done = events[-1].data
    assert done["agent"] == "llm"
    assert done["answer"] == text
    assert by_name(events, "estimate")[0].data["per_gpu"]["total_bytes"] == expected.per_gpu.total_bytes
    assert by_name(events, "display")[0].data["language"] == "en" == done["display"]["language"]
    assert [c["name"] for c in done["display"]["components"]] == [c.name for c in expected.components]
    assert fake.requests[0]["model"] == settings.llm_model
    assert "estimate_memory" in json.dumps(fake.requests[0]["tools"])


# ---- where the offline agent runs ------------------------------------------------------------------------
def test_offline_agent_on_a_thread_gives_the_same_answer(db_path: Path, tmp_path: Path) -> None:
    """`agent_processes=0`: the offline agent answers on a background thread instead of processes."""
    with TestClient(create_app(offline_settings(db_path))) as c:
        in_workers = by_name(chat(c, {"message": QUESTION}), "done")[0].data
    with TestClient(create_app(offline_settings(tmp_path / "other.sqlite3", agent_processes=0))) as c:
        assert type(c.app.state.agent).__name__ == "ThreadedAgent"
        on_thread = by_name(chat(c, {"message": QUESTION}), "done")[0].data
    assert on_thread["answer"] == in_workers["answer"]
    assert on_thread["estimate"] == in_workers["estimate"]


def test_a_dead_worker_is_replaced_and_the_question_answered(db_path: Path) -> None:
    app = create_app(offline_settings(db_path, agent_processes=2))
    with TestClient(app) as c:
        pool = app.state.agent
        before = pool.worker_pids()
        assert len(before) == 2
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        events = chat(c, {"message": QUESTION})
        assert [e.event for e in events][-1] == "done"
        assert set(pool.worker_pids()).isdisjoint(before)


# ---- the store: grouped reads and writes keep every turn, in order -----------------------------------------
# a file database is read directly on the loop (stdlib sqlite3), an in-memory one through the async engine:
# both must give the same states
@pytest.mark.parametrize("where", ["file", "memory"])
async def test_store_groups_concurrent_reads_and_writes(tmp_path: Path, where: str) -> None:
    from service.agent.events import Answer
    from service.store import MAX_STATE_TURNS, ConversationStore

    url = f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}" if where == "file" else "sqlite+aiosqlite://"
    store = ConversationStore(url)
    await store.open()
    try:
        on_4090 = Scenario(model="llama-2-7b", task="inference", gpu="4090")
        on_a100 = on_4090.merged(gpu="a100-80gb")

        def answer(text: str, scenario: Scenario | None, language: Language = "en") -> Answer:
            return Answer(question="q", language=language, scenario=scenario, answer=text)

        # 100 conversations x 3 turns, each round written concurrently (grouped into few commits)
        for k, (scenario, lang) in enumerate([(on_4090, "en"), (on_a100, "zh"), (None, "en")]):
            await asyncio.gather(
                *(
                    store.append_turn(f"c{i}", f"q{k}", answer(f"a{k}-{i}", scenario, lang))
                    for i in range(100)
                )
            )
        states = await asyncio.gather(
            *(store.load_state(f"c{i}") for i in range(100)), store.load_state("nope")
        )
        assert states[-1] is None
        for i, state in enumerate(states[:-1]):
            assert state is not None and state.conversation_id == f"c{i}"
            assert [t.content for t in state.turns] == ["q0", f"a0-{i}", "q1", f"a1-{i}", "q2", f"a2-{i}"]
            assert state.scenario == on_a100  # the last answer without a scenario keeps the previous one
            assert state.language == "en"

        # a long conversation: the agent gets the last MAX_STATE_TURNS turns, oldest first
        for k in range(MAX_STATE_TURNS + 5):
            await store.append_turn("long", f"q{k}", answer(f"a{k}", on_4090))
        long = await store.load_state("long")
        assert long is not None
        assert [t.content for t in long.turns[::2]] == [f"q{k}" for k in range(5, MAX_STATE_TURNS + 5)]
        stored = await store.get("long")
        assert stored is not None and len(stored.turns) == MAX_STATE_TURNS + 5
    finally:
        await store.close()


async def test_store_direct_read_failing_falls_back_to_the_async_engine(tmp_path: Path) -> None:
    """A direct SQLite read that raises (here: its connection is gone) is served by the async engine."""
    from service.agent.events import Answer
    from service.store import ConversationStore

    store = ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}")
    await store.open()
    try:
        on_4090 = Scenario(model="llama-2-7b", task="inference", gpu="4090")
        await store.append_turn(
            "c1", "q0", Answer(question="q0", language="zh", scenario=on_4090, answer="a0")
        )
        direct = await store.load_state("c1")
        assert store._direct is not None  # a file database is read directly
        store._direct.close()  # every direct read now raises sqlite3.ProgrammingError
        fallback, unknown = await asyncio.gather(store.load_state("c1"), store.load_state("nope"))
        assert direct is not None and fallback == direct
        assert fallback.scenario == on_4090 and fallback.language == "zh"
        assert [t.content for t in fallback.turns] == ["q0", "a0"]
        assert unknown is None
    finally:
        await store.close()


async def test_store_groups_a_burst_of_follow_up_reads_arriving_over_several_ms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Follow-ups arriving one per 2 ms (a burst still being parsed) wait for one grouped read, released
    together, instead of the first ones starting their streams while the rest are still arriving.
    The quiet window is widened to 50 ms here so that a loaded CI machine stalling the loop for a few ms
    cannot split the burst; a second read would then come >= 50 ms after the first."""
    from service import store as store_module
    from service.agent.events import Answer
    from service.store import ConversationStore

    monkeypatch.setattr(store_module, "READ_QUIET_S", 0.05)
    monkeypatch.setattr(store_module, "READ_GATHER_S", 2.0)
    READ_GATHER_S = store_module.READ_GATHER_S

    store = ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}")
    await store.open()
    try:
        on_4090 = Scenario(model="llama-2-7b", task="inference", gpu="4090")
        await asyncio.gather(
            *(
                store.append_turn(
                    f"c{i}", "q", Answer(question="q", language="en", scenario=on_4090, answer="a")
                )
                for i in range(20)
            )
        )
        loop = asyncio.get_running_loop()
        done_at: dict[str, float] = {}

        async def follow_up(i: int) -> None:
            await asyncio.sleep(i * 0.002)  # arrivals spread over 38 ms: released as read, spread >= 38 ms
            state = await store.load_state(f"c{i}")
            assert state is not None and state.scenario == on_4090
            done_at[f"c{i}"] = loop.time()

        start = loop.time()
        await asyncio.gather(*(follow_up(i) for i in range(20)))
        assert len(done_at) == 20
        # one read: all answered within a few ms of each other, and no later than the gathering bound
        assert max(done_at.values()) - min(done_at.values()) < 0.02
        assert max(done_at.values()) - start < READ_GATHER_S + 0.2
    finally:
        await store.close()


async def test_ready_batches_group_what_is_ready_and_keep_order() -> None:
    from service.api.streaming import ready_batches

    async def source() -> AsyncIterator[int]:
        yield 1
        yield 2
        yield 3  # three at once: one batch
        await asyncio.sleep(0.05)
        yield 4  # later: a batch of its own
        await asyncio.sleep(0.05)
        raise ValueError("source failed")

    batches: list[list[int]] = []
    with pytest.raises(ValueError, match="source failed"):
        async for batch in ready_batches(source()):
            batches.append(batch)
    assert batches == [[1, 2, 3], [4]]


def test_routes_added_to_the_app_are_what_include_router_gives(db_path: Path) -> None:
    """create_app puts each module router's routes in the app's own list (service/app.py `add_routes`): the
    OpenAPI document, the paths and the methods are the same as with FastAPI's include_router."""
    from fastapi import FastAPI

    from service.api import catalog, chat, coach, estimate, health, interview, openai_compat, web
    from service.api.schemas import declare_message_bounds
    from service.slack import router as slack_router

    app = create_app(offline_settings(db_path))
    routers = [
        *(m.router for m in (chat, openai_compat, estimate, catalog, health, coach, interview, web)),
        slack_router,
    ]
    included = FastAPI(title=app.title, summary=app.summary, description=app.description, version=app.version)
    for router in routers:
        included.include_router(router)
    module_routes = [r for router in routers for r in router.routes]
    served = {id(r) for r in module_routes}
    assert [r for r in app.router.routes if id(r) in served] == module_routes  # all of them, in order
    # create_app's document also states the question's configured bounds (service/api/operating.py)
    expected_doc = declare_message_bounds(included.openapi(), app.state.settings.max_message_chars)
    assert app.openapi()["paths"] == expected_doc["paths"]
    assert app.openapi()["components"] == expected_doc["components"]


def test_objects_alive_at_startup_are_out_of_the_collectors_reach_while_serving(db_path: Path) -> None:
    """service/app.py `tune_gc_for_serving`: a full collection no longer walks the import-time objects while
    the service runs (gc.freeze), young collections come less often; as it was once the service stops."""
    import gc

    from service.app import GC_YOUNG_THRESHOLD

    gc.unfreeze()
    before = gc.get_threshold()
    with TestClient(create_app(offline_settings(db_path))) as client:
        assert client.get("/healthz").status_code == 200
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the modules, schemas and catalogs the service runs on
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
