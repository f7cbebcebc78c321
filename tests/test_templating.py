"""service/agent/templating.py: the cached `Template.safe_substitute` gives string.Template's result for every
template text of prompts/ and for the edge cases of `$` (escaped, invalid, braced, unknown names)."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from service.agent.templating import Template
from tests.prompt_support import prompt_templates

EDGE_CASES = [
    "",
    "$",
    "$$",
    "$$$",
    "$$x",
    "a $ b",
    "${",
    "${x",
    "${x}",
    "${ x}",
    "$1",
    "$x1y",
    "$x-y",
    "${x}${y}$z",
    "$X",
    "100%",
    "$x$",
    "trailing $",
    "{x} ${x}",
    "模型 ${model} 需要 $total",
]


TEMPLATES = prompt_templates(EDGE_CASES)


def test_the_prompt_files_have_templates() -> None:
    assert len(TEMPLATES) > 200


@pytest.mark.parametrize("seed", range(4))
def test_same_text_as_string_template(seed: int) -> None:
    rnd = random.Random(seed)
    for text in TEMPLATES:
        names = [m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)]
        names = [n for n in names if n] + ["x", "y", "z", "model", "total"]
        mapping: dict[str, Any] = {
            n: rnd.choice(["1", "$x", "", "值", 7, 0.5, None]) for n in names if rnd.random() < 0.7
        }
        assert Template(text).safe_substitute(mapping) == string.Template(text).safe_substitute(mapping), text
        assert Template(text).safe_substitute() == string.Template(text).safe_substitute(), text
        kws = {n: "kw" for n in names[:2]}
        assert Template(text).safe_substitute(mapping, **kws) == string.Template(text).safe_substitute(
            mapping, **kws
        )
        assert Template(text).safe_substitute(**mapping) == string.Template(text).safe_substitute(**mapping)
