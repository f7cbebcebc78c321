"""The interview's words: every text exists in English and Chinese (prompts/<lang>/coach/interview.toml,
the web page's interview-i18n.json), and no question of the arc holds its expected figure, on every model
an interview may draw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.agent.prompt_files import load_toml
from service.coach.expected import estimate_for, expected_value
from service.coach.interview.arc import ARC, DEEPER, MODELS, MOE_MODELS, Setting, point_spec
from service.coach.interview.text import question_text

ROOT = Path(__file__).resolve().parent.parent


def _keys(table: dict, prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for k, v in table.items():
        keys |= _keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
    return keys


def test_every_text_in_both_languages() -> None:
    en, zh = load_toml("en", "coach/interview.toml"), load_toml("zh", "coach/interview.toml")
    assert _keys(en) == _keys(zh) and len(_keys(en)) > 60
    assert set(en["title"]) == set(ARC) | set(DEEPER.values()) == set(en["ask"])
    web = json.loads((ROOT / "service/web/interview-i18n.json").read_text(encoding="utf-8"))
    assert set(web["en"]) == set(web["zh"])


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_question_holds_its_expected_figure(model: str, language: str) -> None:
    for moe in MOE_MODELS:
        setting = Setting(model=model, moe_model=moe)
        for point in (*ARC, *DEEPER.values()):
            spec = point_spec(point, setting, 2)
            if spec.quantity == "concept":
                continue
            est = estimate_for(spec.scenario, spec.quantity)
            text = question_text(spec, est, language)
            value = expected_value(est, spec.quantity)
            if "bytes" in value:
                b = value["bytes"]
                said = {f"{b / 2**30:.2f}", f"{b / 10**9:.2f}", f"{b / 2**10:.2f}", f"{b / 1000:.2f}", str(b)}
                assert not [s for s in said if s in text], (point, text)
            elif "count" in value:
                assert str(value["count"]) not in text, (point, text)
