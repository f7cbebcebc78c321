"""service/agent/fill_text.py: `fill` and `fill_plain` (split once per template, each piece filled
once) give the text of their definition (regex passes: every [[part]] filled or left out, then the whole
text filled) for every template of prompts/ and for the edge cases of `$`, `${name}` and `[[ ]]`, with
values that are missing, empty, or themselves look like placeholders."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from service.agent.assumption_text import code_text
from service.agent.fill_text import PLACEHOLDER, fill, fill_plain, value_text
from tests.prompt_support import prompt_templates

_OPTIONAL = re.compile(r"\[\[(.*?)\]\]")
EDGE_CASES = [
    "",
    "plain",
    "${a}",
    "${a}${b}",
    "$",
    "${",
    "${a",
    "$a",
    "x[[ ${a}]]",
    "[[${a}]][[${b}]]",
    "[[${a} and ${b}]] ${c}",
    "[[no placeholder]]",
    "$[[x]]{a}",
    "${a[[x]]}",
    "[[${a]]}",
    "[[$]]{a}",
    "[[ ${a}\n]]",
    "[[a]] $ [[${b}]]",
    "${unknown}[[ ${a}]]",
    "模型 ${a}[[，${b}]]",
]


def _plain_definition(template: str, said: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: said.get(m.group(1), m.group(0)), template)


def _definition(template: str, values: dict[str, Any], joiner: str = ", ") -> str:
    said = {k: value_text(k, v, joiner) for k, v in values.items()}

    def optional(m: re.Match[str]) -> str:
        names = PLACEHOLDER.findall(m.group(1))
        return _plain_definition(m.group(1), said) if all(said.get(n) for n in names) else ""

    return _plain_definition(_OPTIONAL.sub(optional, template), said)


TEMPLATES = prompt_templates(EDGE_CASES)


def test_the_prompt_files_have_optional_parts() -> None:
    assert sum("[[" in t for t in TEMPLATES) > 10


@pytest.mark.parametrize("seed", range(4))
def test_same_text_as_the_definition(seed: int) -> None:
    rnd = random.Random(seed)
    for text in TEMPLATES:
        names = [*PLACEHOLDER.findall(text), "a", "b", "c"]
        choices: list[Any] = ["1", "", "值", 7, 12_345, 0.5, None, [1, 2], "${a}", "$", "x$", True, "{b}"]
        values = {n: rnd.choice(choices) for n in names if rnd.random() < 0.75}
        assert fill(text, values) == _definition(text, values), (text, values)
        assert fill(text, values, "、") == _definition(text, values, "、"), (text, values)
        said = {k: value_text(k, v) for k, v in values.items()}
        assert fill_plain(text, said) == _plain_definition(text, said), (text, said)


def test_equal_values_of_other_types_are_said_their_own_way() -> None:
    # fill remembers its texts: 1, 1.0 and True are equal (and hash alike), yet each is said as written
    for _ in range(2):
        assert fill("${a}", {"a": 1000}) == "1,000"
        assert fill("${a}", {"a": 1000.0}) == "1000"
        assert fill("${a}", {"a": 1}) == "1"
        assert fill("${a}", {"a": True}) == "True"
        assert fill("${a}", {"a": [1000, 2]}) == "1,000, 2"
        assert fill("${a}", {"a": 0.0}) == "0"
        assert fill("${a}", {"a": -0.0}) == "-0"


def test_remembered_texts_keep_the_types_of_equal_values() -> None:
    # the assumption and label texts are remembered the same way as fill (service.agent.fill_text.remembered)
    for _ in range(2):
        as_int, as_float = (
            code_text("rl_lora_rank", {"method": "GRPO", "rank": r}, "en") for r in (1000, 1000.0)
        )
        assert as_int is not None and as_int.endswith("r=1,000")
        assert as_float is not None and as_float.endswith("r=1000")
        listed = code_text("rl_lora_rank", {"method": "GRPO", "rank": [8, 16]}, "en")
        assert listed is not None and listed.endswith("r=8, 16")
