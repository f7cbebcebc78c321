"""docs/reference.md lists every name the project promises: a new field, route, command or setting
that is not documented there fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.agent.events import Answer
from service.app import create_app
from service.cli import _parser
from service.settings import Settings
from tools.result import Estimate
from tools.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
CODE_SPANS = set(re.findall(r"`([^`]+)`", REFERENCE))
WORDS = {w for span in CODE_SPANS for w in re.split(r"[\s,/()\[\]{}|=.]+", span) if w}


@pytest.mark.parametrize(
    ("model", "name"),
    [(m, f) for m in (Scenario, Estimate, Answer) for f in m.model_fields],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_every_field_is_documented(model: type, name: str) -> None:
    assert name in WORDS, f"{model.__name__}.{name} is not in docs/reference.md"


def test_every_route_is_documented() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    paths = set(app.openapi()["paths"])
    documented = " ".join(CODE_SPANS)
    missing = sorted(p for p in paths if p not in documented)
    assert not missing, f"routes missing from docs/reference.md: {missing}"


def test_every_command_and_option_is_documented() -> None:
    parser = _parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    for name, cmd in sub.choices.items():
        assert f"vramwise {name}" in REFERENCE, name
        for action in cmd._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert flag in REFERENCE, f"vramwise {name} {flag}"


def test_every_setting_is_documented() -> None:
    prefix = Settings.model_config.get("env_prefix", "")
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = list(getattr(alias, "choices", [])) if alias is not None else [f"{prefix}{name}".upper()]
        assert any(n in WORDS for n in names), f"setting {name} ({names}) is not in docs/reference.md"
