"""Planner suggestions are data (codes and values); their words are prompts/<lang>/suggestions.toml, said
at the service's edge (service/agent/suggestion_text.py): English `change`/`rationale` in the JSON, the
answer's language in answers (Chinese composed from scenario_changes by render.change_text)."""

from __future__ import annotations

import re

import pytest

from service.agent.assumption_text import PLACEHOLDER, with_english_text
from service.agent.prompt_files import load_toml
from service.agent.render import change_text, render_answer
from service.agent.suggestion_text import change_words, english_suggestion, rationale_words
from tests.golden.make_corpus import read_corpus
from tools.estimator import estimate
from tools.planner import CHANGE_CODES, LAYOUT_CODES, MOVE_CODES
from tools.result import Suggestion
from tools.scenario import Scenario

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_code_has_a_template_using_only_its_values(language: str) -> None:
    words = load_toml(language, "suggestions.toml")
    for table, codes, extra in (
        ("move", MOVE_CODES, set()),
        ("layout", LAYOUT_CODES, set()),
        ("change", CHANGE_CODES, {"moves", "layout"}),
    ):
        assert set(words[table]) - {f"{c}.1" for c in codes} == set(codes), table
        for key, template in words[table].items():
            code = key.removesuffix(".1")
            assert set(PLACEHOLDER.findall(template)) <= set(codes[code]) | extra, (table, key, template)
    assert sorted(words["fidelity"]) == ["0", "1", "2", "3"] and set(words["gpus"]) == {"1", "n"}
    assert set(PLACEHOLDER.findall(words["rationale"]["line"])) == {
        "gpus",
        "fidelity",
        "rank",
        "factor",
        "gib",
    }
    if language == "zh":  # said in Chinese, not the English copied over
        en = load_toml("en", "suggestions.toml")
        for code in MOVE_CODES:
            assert CJK.search(words["move"][code]) or code in ("kv_fp8",), code
        for code in ("fewer_gpus", "more_gpus", "moves_on_gpus"):
            assert words["change"][code] != en["change"][code] and CJK.search(words["change"][code])
        assert all(CJK.search(t) for t in words["fidelity"].values())


def test_the_planner_gives_codes_and_the_edge_english_words() -> None:
    e = estimate(Scenario(model="llama-3.1-8b", task="full_finetune", gpu="4090", seq_len=2048, batch_size=4))
    assert e.suggestions and not e.fits
    for sg in e.suggestions:  # no prose out of tools/
        assert sg.change is None and sg.rationale is None and sg.change_code in CHANGE_CODES
        assert sg.fidelity_rank is not None and sg.step_time_factor is not None
        for part in sg.moves:
            assert part["code"] in MOVE_CODES and set(part["values"]) == set(MOVE_CODES[part["code"]])
    shown = with_english_text(e).suggestions
    assert [sg.change for sg in shown] == [change_words(sg, "en") for sg in e.suggestions]
    assert all(sg.rationale and sg.rationale.endswith(" GiB per GPU") for sg in shown)
    first = shown[0]
    gib = f"{first.total_bytes / 2**30:.1f}"
    assert first.rationale == rationale_words(e.suggestions[0], "en")
    assert first.rationale.startswith("a single GPU; ") and first.rationale.endswith(f"; {gib} GiB per GPU")
    zh = rationale_words(e.suggestions[0], "zh") or ""
    assert zh.startswith("1 张 GPU；") and zh.endswith(f"每卡 {gib} GiB") and "GPU;" not in zh


def test_fewer_gpus_reads_in_both_languages() -> None:
    sg = Suggestion.model_construct(
        change=None,
        scenario_changes={"num_gpus": 1},
        total_bytes=2**30,
        fits=True,
        num_gpus=1,
        rationale=None,
        change_code="fewer_gpus",
        change_values={"gpus": 1, "asked": 1024},
        moves=[],
        layout_parts=[{"code": "same_settings", "values": {}}],
        fidelity_rank=0,
        step_time_factor=1.0,
    )
    assert change_words(sg, "en") == "a single GPU is enough instead of the 1024 asked for (same settings)"
    assert change_words(sg, "zh") == "1 张 GPU 就够了，不必用所要的 1024 张（设置不变）"
    assert english_suggestion(sg).rationale == (
        "a single GPU; same result as the original job (fidelity rank 0); step time x1.00 (estimated); "
        "1.0 GiB per GPU"
    )


def test_a_stored_suggestion_keeps_its_words() -> None:
    old = Suggestion.model_validate(
        {"change": "use QLoRA", "scenario_changes": {}, "total_bytes": 1, "fits": True, "num_gpus": 1}
    )
    assert change_words(old, "zh") == "use QLoRA" and english_suggestion(old) == old
    assert change_text(old, "zh") == "use QLoRA" and rationale_words(old, "en") is None


def test_chinese_answers_show_the_suggestions_in_chinese() -> None:
    """A sample of jobs that do not fit: the Chinese answer lists each suggestion composed in Chinese
    (render.change_text, the one Chinese path), never the English change."""
    sample = [
        Scenario(model="llama-3.1-8b", task="full_finetune", gpu="4090", seq_len=2048, batch_size=4),
        Scenario(model="llama-3-70b", task="qlora", gpu="4090", seq_len=2048),
        Scenario(model="qwen2.5-7b", task="inference", gpu="4090", batch_size=16, seq_len=4096),
    ]
    for scenario in sample:
        e = estimate(scenario)
        assert e.suggestions, scenario
        text = render_answer(e, "zh")
        for sg in e.suggestions:
            zh, en = change_text(sg, "zh", e.scenario), change_words(sg, "en")
            assert zh in text and CJK.search(zh) and en not in text, (zh, en)


def test_every_corpus_suggestion_reads_from_its_codes() -> None:
    """All corpus suggestions: the English rebuilt from the codes is the JSON's change and rationale."""
    count = 0
    for entry in read_corpus():
        for data in entry.get("estimate", {}).get("suggestions", []):
            sg = Suggestion.model_validate(data)
            bare = sg.model_copy(update={"change": None, "rationale": None})
            assert change_words(bare, "en") == sg.change and rationale_words(bare, "en") == sg.rationale
            assert "${" not in change_words(bare, "zh") + (rationale_words(bare, "zh") or "")
            count += 1
    assert (
        count == 2038
    )  # issue 24: serving engines judged by total <= usable; cheap fixes drop more-GPU ones


def test_every_lever_gives_a_listed_code_with_its_values() -> None:
    """Each lever's move, on jobs where it applies, is a MOVE_CODES code with exactly its values; together
    they give every code (so no listed code is dead and none is missing)."""
    from tools.planner import INFERENCE_LADDER, MEMORY_LADDER, SINGLE_LEVERS, UseLora

    jobs = [
        Scenario(model="llama-3.1-8b", task="full_finetune", gpu="a100-80gb", num_gpus=8, batch_size=4),
        Scenario(
            model="llama-3.1-8b",
            task="full_finetune",
            gpu="4090",
            batch_size=4,
            seq_len=4096,
            gradient_checkpointing=True,
        ),
        Scenario(model="llama-3.1-8b", task="inference", gpu="a100-80gb", num_gpus=4, batch_size=16),
    ]
    seen: set[str] = set()
    for job in jobs:
        s = estimate(job, plan=False).scenario
        for lever in (*SINGLE_LEVERS, *MEMORY_LADDER, *INFERENCE_LADDER, UseLora()):
            move = lever.move(s)
            if move is None:
                continue
            assert move.code in MOVE_CODES and set(move.values) == set(MOVE_CODES[move.code]), move
            seen.add(move.code)
    assert seen == set(MOVE_CODES)
