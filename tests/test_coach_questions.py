"""Coach questions: for every topic, difficulty and language, the expected figure of a generated
question equals an independent estimate() of the scenario the question states, the text states that
scenario in the question's language, and neither the text nor the hint gives the figure away."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest

from service.coach.coach import Coach
from service.coach.store import CoachStore
from service.coach.text import hint_text
from service.coach.topics import DIFFICULTIES, TOPICS, generate
from tools.estimator import estimate
from tools.scenario import Scenario

SEEDS = range(3)
CJK = re.compile(r"[\u4e00-\u9fff]")


def independent_expected(scenario: dict, quantity: str) -> dict:
    """The asked quantity read straight off estimate(Scenario(**scenario)), without the coach's code."""
    e = estimate(Scenario(**scenario))
    if quantity == "per_gpu.total_bytes":
        return {"bytes": e.per_gpu.total_bytes}
    if quantity == "fits":
        return {"fits": e.fits}
    if quantity == "min_gpus":
        return {"count": e.min_gpus}
    if quantity == "serving.kv_bytes_per_token":
        return {"bytes": e.serving.kv_bytes_per_token}
    if quantity == "serving.max_concurrent_sequences":
        return {"count": e.serving.max_concurrent_sequences}
    assert quantity.startswith("component:"), quantity
    names = quantity.split(":", 1)[1].split("+")
    return {"bytes": sum(c.bytes for c in e.components if c.name in names)}


def figure_strings(expected: dict) -> list[str]:
    """Patterns of an expected figure written out: GiB/GB/MiB/MB with 2, 1 or 0 decimals and a unit,
    the raw bytes, a count of GPUs or sequences."""
    if "bytes" in expected:
        b = expected["bytes"]
        out = [re.escape(f"{b:,}"), re.escape(str(b))]
        for unit in (2**30, 10**9, 2**20, 10**6):
            if b / unit >= 1:
                for digits in (2, 1, 0):
                    out.append(
                        r"(?<![\d.,])" + re.escape(f"{b / unit:.{digits}f}") + r"\s*(?:GiB|GB|MiB|MB|G)\b"
                    )
        return out
    if "count" in expected and expected["count"] is not None:
        return [rf"\b{expected['count']}\s*(?:GPU|x |张|sequences|条)"]
    return []


@pytest.fixture(scope="module")
def questions(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, int, object, dict]]:
    db = tmp_path_factory.mktemp("coach") / "coach.sqlite3"

    async def run() -> list:
        store = CoachStore(f"sqlite+aiosqlite:///{db}")
        await store.open()
        coach = Coach(store)
        out = []
        for language in ("en", "zh"):
            for topic in TOPICS:
                for d in DIFFICULTIES:
                    for _ in SEEDS:
                        q = await coach.ask(language, topic, d)
                        row = await store.get_session(q.session_id)
                        out.append((language, topic, d, q, row["questions"][-1]))
        await store.close()
        return out

    return asyncio.run(run())


def test_every_topic_difficulty_and_language_is_generated(questions) -> None:  # type: ignore[no-untyped-def]
    seen = {(lang, topic, d) for lang, topic, d, _, _ in questions}
    assert seen == {(lang, t, d) for lang in ("en", "zh") for t in TOPICS for d in DIFFICULTIES}
    quantities = {q.quantity for *_, q, _ in questions}
    for needed in ("per_gpu.total_bytes", "fits", "min_gpus", "concept", "component:kv_cache"):
        assert needed in quantities


def test_expected_figures_equal_an_independent_estimate(questions) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for _lang, _topic, _d, q, row in questions:
        if q.quantity == "concept":
            assert q.scenario is None and row["expected"]["key_points"]
            continue
        assert q.scenario == row["spec"]["scenario"]
        assert row["expected"] == independent_expected(q.scenario, q.quantity), (q.topic, q.scenario)
        checked += 1
    assert checked >= 2 * 15 * 3 * len(SEEDS) - 2 * 3 * len(SEEDS)


def test_text_states_the_scenario_in_its_language(questions) -> None:  # type: ignore[no-untyped-def]
    from tools.catalog.models import find_model

    for lang, _topic, d, q, _row in questions:
        assert bool(CJK.search(q.text)) == (lang == "zh"), q.text
        assert f"{d}/3" in q.text
        if q.scenario is None:
            continue
        sc = q.scenario
        assert find_model(sc["model"]).name in q.text
        assert f" {sc['seq_len']} " in q.text and f"batch {sc['batch_size']}" in q.text.replace(
            "micro-batch", "batch"
        )
        if sc.get("lora_rank"):
            assert f"rank {sc['lora_rank']}" in q.text
        if sc.get("zero_stage"):
            assert f"{sc['zero_stage']}" in q.text and "ZeRO" in q.text


def test_question_text_never_holds_the_expected_figure(questions) -> None:  # type: ignore[no-untyped-def]
    for _lang, topic, _d, q, row in questions:
        if topic == "no_effect":  # states the unchanged baseline by design: the trap is to think it moves
            continue
        for s in figure_strings(row["expected"]):
            assert not re.search(s, q.text), (topic, s, q.text)


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("topic", TOPICS)
def test_hints_never_hold_the_expected_figure(topic: str, language: str, questions) -> None:  # type: ignore[no-untyped-def]
    hint = hint_text(topic, language)
    assert bool(CJK.search(hint)) == (language == "zh")
    for _lang, t, _d, _q, row in questions:
        if t != topic:
            continue
        for s in figure_strings(row["expected"]):
            assert not re.search(s, hint), (topic, s, hint)


def test_generation_is_reproducible_per_seed() -> None:
    for topic in TOPICS:
        a = generate(topic, 2, random.Random("s:3"))
        b = generate(topic, 2, random.Random("s:3"))
        assert a == b


def test_session_file_is_not_left_in_the_repository() -> None:
    assert not (Path(__file__).resolve().parent.parent / "coach.sqlite3").exists()
