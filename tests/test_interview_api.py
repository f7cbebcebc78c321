"""The mock interview over HTTP on a real uvicorn, with scripted candidates in English and Chinese:
all right (no follow-ups, a top scorecard, deeper questions at level 2), all wrong (two follow-ups on
every point, then the next point), and mixed (the seed's "weights only" training answer and the GQA trap
probed and then answered). Every expected figure is checked against POST /v1/estimate of the question's
own scenario, and the answers are written from that response, never from the service's database."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from service.app import create_app
from service.coach.grading import concept_points
from tests.interview_support import NO, YES, figure
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tools.catalog.models import find_model

__all__ = ["reset_sse_exit_flag"]

ARC = [
    "weights_precision",
    "rule_16x",
    "activations",
    "gradient_checkpointing",
    "kv_cache",
    "serving",
    "lora",
    "moe",
    "ppo",
    "zero",
]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    db = tmp_path_factory.mktemp("interview") / "db.sqlite3"
    with live_server(create_app(offline_settings(db, agent_processes=0))) as base:
        yield base


def tool_figure(client: httpx.Client, question: dict[str, Any]) -> dict[str, Any]:
    """The expected answer of a question from POST /v1/estimate of its scenario."""
    quantity = question["quantity"]
    if quantity == "concept":
        return {}
    est = client.post("/v1/estimate", json=question["scenario"])
    assert est.status_code == 200, est.text
    e = est.json()
    if quantity.startswith("component:"):
        names = quantity.removeprefix("component:").split("+")
        return {"bytes": sum(c["bytes"] for c in e["components"] if c["name"] in names)}
    if quantity == "per_gpu.total_bytes":
        return {"bytes": e["per_gpu"]["total_bytes"]}
    if quantity == "fits":
        return {"fits": e["fits"]}
    field = quantity.removeprefix("serving.")
    value = e["serving"][field]
    return {"bytes": value} if field.endswith("_bytes_per_token") else {"count": value}


def right(question: dict[str, Any], tool: dict[str, Any], language: str) -> str:
    if question["quantity"] == "concept":
        points = concept_points("gradient_checkpointing", language)
        return ("; " if language == "en" else "；").join(label for label, _ in points.values())
    if "fits" in tool:
        return YES[language] if tool["fits"] else NO[language]
    if "count" in tool:
        return f"about {tool['count']} sequences" if language == "en" else f"大概能放 {tool['count']} 条"
    if (
        question["topic"] == "rule_16x" and not question["follow_up"]
    ):  # a figure with its reasoning, the last figure is the answer
        params = tool["bytes"] / 16 / 1e9
        if language == "en":
            return (
                f"{figure(tool['bytes'], language)}: {params:.1f}B x 16 bytes a parameter (2 for the weights)"
            )
        return f"{figure(tool['bytes'], language)}，{params:.1f}B 参数，每个参数 16 字节（权重 2 字节）"
    return figure(tool["bytes"], language)


def wrong(question: dict[str, Any], tool: dict[str, Any], language: str) -> str:
    if question["quantity"] == "concept":
        return "no idea, it depends" if language == "en" else "不清楚，看情况吧"
    if "fits" in tool:
        return NO[language] if tool["fits"] else YES[language]
    if "count" in tool:
        return f"{tool['count'] * 3 + 1} sequences" if language == "en" else f"{tool['count'] * 3 + 1} 条"
    return figure(tool["bytes"] * 3, language)


def run(client: httpx.Client, language: str, level: int | None, candidate) -> tuple[dict, list]:  # type: ignore[no-untyped-def]
    """Play an interview, `candidate(question, tool figure, language, client)` answering; every graded
    figure equals /v1/estimate's. Returns (start, [(question, answer response)])."""
    body: dict[str, Any] = {"language": language}
    if level is not None:
        body["level"] = level
    start = client.post("/v1/coach/interviews", json=body)
    assert start.status_code == 200, start.text
    started = start.json()
    question, log = started["question"], []
    while question is not None:
        tool = tool_figure(client, question)
        text = candidate(question, tool, language, client)
        r = client.post(f"/v1/coach/interviews/{started['interview_id']}/answers", json={"answer": text})
        assert r.status_code == 200, r.text
        a = r.json()
        assert a["grade"]["correct"] is not None, (question, text, a)
        if a["grade"]["expected"] is not None and tool:  # the tool's figure, as /v1/estimate gives it
            assert a["grade"]["expected"] == tool, (question, a["grade"])
        log.append((question, a))
        assert len(log) < 40
        question = a["next"]
    # every question's figure, follow-ups included (told once the interview is over): /v1/estimate's
    record = client.get(f"/v1/coach/interviews/{started['interview_id']}").json()
    assert record["finished"] and len(record["turns"]) == len(log)
    for turn in record["turns"]:
        tool = tool_figure(client, turn)
        assert turn["expected"] == (tool or turn["expected"]) and turn["expected"] is not None, turn
    return started, log


def points(log: list) -> dict[str, list]:
    by_point: dict[str, list] = {}
    for q, a in log:
        by_point.setdefault(q["topic"], []).append((q, a))
    return by_point


@pytest.mark.parametrize("language", ["en", "zh"])
def test_all_right(url: str, language: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        started, log = run(client, language, None, lambda q, t, lang, _client: right(q, t, lang))
        assert started["level"] == 2 and started["step"] == 1 and not started["question"]["follow_up"]
        steps = [q["step"] for q, _ in log]
        assert steps == list(range(1, 13))  # 10 points and the two deeper ones, in 12 questions
        assert [q["topic"] for q, _ in log] == [
            "weights_precision", "quantization", *ARC[1:], "zero3"
        ]  # fmt: skip
        assert not any(q["follow_up"] for q, _ in log)
        assert all(a["grade"]["correct"] for _, a in log)
        card = log[-1][1]["scorecard"]
        assert card["level"] == "senior" and card["score"] == 12 and card["points"] == 12
        assert all(t["grade"] == "right" and t["correct"] and t["questions"] == 1 for t in card["topics"])
        assert len(card["study_next"]) == 2 and [s["kb"] for s in card["study"]] == [
            "zero_stages",
            "zero2_vs_zero3",
        ]
        stored = client.get(f"/v1/coach/interviews/{started['interview_id']}").json()
        assert stored["finished"] and stored["scorecard"] == card and len(stored["turns"]) == 12
        assert stored["model"] == started["model"]
        # the figures of the scorecard are the tool's, with the formula's numbers
        kv = next(t for t in card["topics"] if t["topic"] == "kv_cache")
        assert kv["formula"].startswith("2 x L x g x d x B = 2 x ")
        again = client.post(f"/v1/coach/interviews/{started['interview_id']}/answers", json={"answer": "1"})
        assert again.status_code == 409 and again.json()["field"] == "interview_id"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_all_wrong_gets_two_follow_ups_on_every_point(url: str, language: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        _, log = run(client, language, 1, lambda q, t, lang, _client: wrong(q, t, lang))
        by_point = points(log)
        assert list(by_point) == ARC  # level 1 and nothing right: no deeper question
        for point, asked in by_point.items():
            assert [q["follow_up"] for q, _ in asked] == [False, True, True], point
            assert all(a["grade"]["correct"] is False for _, a in asked)
            # while the point is probed its figure is not told; it is when the point closes
            assert [a["grade"]["expected"] is None for _, a in asked] == [True, True, False]
        assert len(log) == 30
        card = log[-1][1]["scorecard"]
        assert card["level"] == "not_ready" and card["score"] == 0
        assert all(t["grade"] == "wrong" and t["questions"] == 3 for t in card["topics"])
        assert card["study_next"] == ["weights_precision", "rule_16x"]
        # the follow-ups probe from the difference: a fit answered wrongly asks the per-GPU total
        lora = by_point["lora"]
        assert lora[1][0]["quantity"] == "per_gpu.total_bytes"
        assert ("per-GPU total" if language == "en" else "每张卡的显存总量") in lora[1][0]["text"]
        serving = by_point["serving"]
        assert serving[1][0]["quantity"] == "serving.kv_bytes_per_token"
        weights = by_point["weights_precision"]
        assert ("3.0x" if language == "en" else "3.0 倍") in weights[1][0]["text"]
        assert "P_local x 2 B" in weights[2][0]["text"]


def mixed(question: dict[str, Any], tool: dict[str, Any], language: str, client: httpx.Client) -> str:
    """Weights right; training states with the weights only ("7B x 2 bytes = 14 GB"), then the rest
    right; the KV cache by the multi-head formula, then right; MoE and serving wrong throughout."""
    topic, follow = question["topic"], question["follow_up"]
    if topic == "rule_16x" and not follow:
        weights = tool_figure(client, {**question, "quantity": "component:weights"})
        return ("7B x 2 bytes = " if language == "en" else "7B 乘 2 字节，就是") + figure(
            weights["bytes"], language
        )
    if topic == "kv_cache" and not follow:  # 2 x L x h x B: the query heads, not the KV heads
        arch = find_model(question["scenario"]["model"]).architecture
        return figure(tool["bytes"] * arch.num_attention_heads // arch.num_key_value_heads, language)
    if topic in ("moe", "serving"):
        return wrong(question, tool, language)
    return right(question, tool, language)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_mixed_candidate(url: str, language: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        started, log = run(client, language, 2, mixed)
        by_point = points(log)
        # right first time on the weights: one level deeper (int4); ZeRO-2 right: ZeRO-3
        assert list(by_point)[:2] == ["weights_precision", "quantization"] and "zero3" in by_point
        states = by_point["rule_16x"]
        assert [q["follow_up"] for q, _ in states] == [False, True]
        probe = states[1][0]
        assert probe["quantity"] == "component:gradients+master_weights+optimizer_states"
        said = "covers weights" if language == "en" else "只算了权重"
        assert said in probe["text"]
        kv = by_point["kv_cache"]
        assert [q["follow_up"] for q, _ in kv] == [False, True]
        assert ("multi-head formula" if language == "en" else "多头注意力的公式") in kv[1][0]["text"]
        assert kv[1][0]["quantity"] == "serving.kv_bytes_per_token"
        assert [len(by_point[p]) for p in ("moe", "serving")] == [3, 3]
        card = log[-1][1]["scorecard"]
        grades = {t["topic"]: t["grade"] for t in card["topics"]}
        assert grades["rule_16x"] == grades["kv_cache"] == "partial"
        assert grades["moe"] == grades["serving"] == "wrong" and grades["lora"] == "right"
        assert card["score"] == 12 - 2 - 1  # 12 points, two wrong, two half
        assert card["level"] == "mid" and card["study_next"] == ["serving", "moe"]  # 9 of 12: 75%
        md = client.get(f"/v1/coach/interviews/{started['interview_id']}/markdown")
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        text = md.text
        assert text.startswith("# ") and "| " in text and "moe_active.md" in text
        assert ("right after follow-ups" if language == "en" else "追问后答对") in text
        assert (
            text.count("The tool's figure:" if language == "en" else "工具的数：") == 11
        )  # each figure topic


def test_errors_and_ownership(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = offline_settings(tmp_path / "keys.sqlite3", agent_processes=0, api_keys="key-a,key-b")
    with live_server(create_app(settings)) as base, httpx.Client(base_url=base, timeout=60) as client:
        a = {"Authorization": "Bearer key-a"}
        b = {"Authorization": "Bearer key-b"}
        bad = client.post("/v1/coach/interviews", json={"language": "en", "level": 7}, headers=a)
        assert bad.status_code == 400 and bad.json()["accepted"] == "1, 2, 3"
        lang = client.post("/v1/coach/interviews", json={"language": "fr"}, headers=a)
        assert lang.status_code == 422
        started = client.post("/v1/coach/interviews", json={"language": "zh"}, headers=a).json()
        iid = started["interview_id"]
        assert client.get(f"/v1/coach/interviews/{iid}", headers=b).status_code == 404
        other = client.post(f"/v1/coach/interviews/{iid}/answers", json={"answer": "14 GB"}, headers=b)
        assert other.status_code == 404 and "same API key" in other.json()["accepted"]
        # nothing readable: the same question again, ungraded
        r = client.post(f"/v1/coach/interviews/{iid}/answers", json={"answer": "嗯……"}, headers=a).json()
        assert r["grade"]["correct"] is None and r["next"]["step"] == 1 and r["scorecard"] is None
        hint = client.post(f"/v1/coach/interviews/{iid}/answers", json={"answer": "提示"}, headers=a).json()
        assert hint["grade"]["correct"] is None and hint["feedback"].startswith("面试没有提示")
        empty = client.post(f"/v1/coach/interviews/{iid}/answers", json={"answer": " "}, headers=a)
        assert empty.status_code == 400 and empty.json()["field"] == "answer"
        mine = client.get(f"/v1/coach/interviews/{iid}", headers=a).json()
        assert mine["language"] == "zh" and len(mine["turns"]) == 1 and mine["turns"][0]["answer"] is None
        assert client.get("/v1/coach/interviews/nope", headers=a).status_code == 404
