"""service/agent/offline/patterns.py: the parser's regexes with a literal pre-check find exactly what the
plain regexes find (every pattern of the offline parser, on the realistic-question suite and on shuffled
words of it), and the required literals are read right from a pattern's structure."""

from __future__ import annotations

import random
import re

import pytest

from service.agent.offline import (
    architecture_fields,
    asks,
    field_common,
    gpu_counts,
    lora_fields,
    mentions,
    model_names,
    numbers,
    offload_fields,
    parallel_fields,
    parse_rules,
    parser,
    patterns,
    precision_fields,
    rl_fields,
    shape_fields,
    task_fields,
    training_fields,
)
from service.agent.offline.parser import normalise
from tests.parser_suite import CONCEPTS, ESTIMATES


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"abc", {"abc"}),
        (r"(?<![a-z])lora(?![a-z])", {"lora"}),
        (r"\d+\s*epochs?|(?:训练|跑)?\d+(?:epoch|轮)", {"epoch", "轮"}),
        (r"ab?c", {"a"}),  # the optional b breaks the run: a and c are each required, the longer is kept
        (r"x(?:abc|de)y", {"abc", "de"}),
        (r"[为是]设", {"设"}),
        (r"[为是]", {"为", "是"}),
        (r"(?:ab)+", {"ab"}),
        (r"(?:ab)*c", {"c"}),
        (r"a|\d+", None),  # an alternative with no literal: nothing is required
        (r"\s+", None),
        (r"[^a]b", {"b"}),
        (r"(?i)lora", None),  # case-insensitive: left to the regex
        (r".*", None),
    ],
)
def test_required_literals(pattern: str, literals: set[str] | None) -> None:
    found = patterns.required_literals(pattern)
    assert (None if found is None else set(found)) == literals


def _questions() -> list[str]:
    texts = [q for q, *_ in ESTIMATES] + [q for q, _ in CONCEPTS]
    words = " ".join(texts).split()
    rnd = random.Random(11)
    texts += [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 12))) for _ in range(3000)]
    return [normalise(t) for t in texts]


def _prefiltered() -> list[patterns.Prefiltered]:
    found: list[patterns.Prefiltered] = []

    def walk(value: object) -> None:
        if isinstance(value, patterns.Prefiltered):
            found.append(value)
        elif isinstance(value, tuple | list):
            for v in value:
                walk(v)
        elif hasattr(value, "pattern") and isinstance(getattr(value, "pattern", None), patterns.Prefiltered):
            found.append(value.pattern)  # type: ignore[attr-defined]

    modules = (asks, mentions, numbers, parser, field_common, task_fields, precision_fields, lora_fields)
    modules += (
        shape_fields,
        parallel_fields,
        training_fields,
        architecture_fields,
        offload_fields,
        rl_fields,
    )
    modules += (gpu_counts, model_names, parse_rules)
    for module in modules:
        for value in vars(module).values():
            walk(value)
    return found


def _same(a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.span() == b.span() and a.groups() == b.groups()


def test_prefiltered_patterns_find_what_the_plain_ones_find() -> None:
    compiled = _prefiltered()
    assert len(compiled) > 60  # nearly every pattern of the parser has required literals
    questions = _questions()
    skipped = 0
    for p in compiled:
        plain = re.compile(p.pattern)
        for q in questions:
            fast = p.search(q)
            assert _same(fast, plain.search(q)), (p.pattern, q)
            skipped += fast is None
            assert [m.span() for m in p.finditer(q)] == [m.span() for m in plain.finditer(q)]
            assert p.sub("#", q) == plain.sub("#", q)
            assert _same(p.match(q), plain.match(q)) and _same(p.fullmatch(q), plain.fullmatch(q))
    assert skipped > len(compiled) * len(questions) // 2  # most searches never reach the regex
