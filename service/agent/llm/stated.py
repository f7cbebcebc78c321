"""The job that was asked: the question's own words win over the language model's reading of them.

The offline parser (service/agent/offline/parser.py) reads the fields a question states literally.
For the four that name the job (task, model, GPU, GPU count) the Scenario a model sends to the
tool is compared with that reading; where the model left a stated field out or wrote another
value, the question's value is used and the change is recorded, so the answer can say it. A
field the parser filled in itself (a card read from "a 24GB card", a bare size) is no statement
and is never forced; nor is a model value the question also names (a comparison of two GPUs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tools.errors import ScenarioError

JOB_FIELDS = ("task", "model", "gpu", "num_gpus")
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?\s*[bm]", re.IGNORECASE)
_SQUASH = re.compile(r"[\s\-_/.]+")


@dataclass(frozen=True)
class Overruled:
    """A job field where the question's words replaced the language model's."""

    field: str
    model_value: Any  # None: the model left it out
    question_value: Any


def question_job_fields(question: str) -> dict[str, Any]:
    """The job fields the question states in so many words (the offline parser's reading)."""
    from service.agent.offline.parser import parse_question

    parsed = parse_question(question)
    fields: dict[str, Any] = {}
    for name in JOB_FIELDS:
        value = parsed.scenario.get(name)
        if value is None or name in parsed.filled:
            continue
        if name == "model" and _BARE_SIZE.fullmatch(str(value)):
            continue  # "a 7B model": which 7B model is the model's choice to make
        fields[name] = value
    return fields


def _canonical(field: str, value: Any) -> Any:
    """The catalog id a model or GPU name stands for (itself when the catalog does not know it)."""
    if value is None or field not in ("model", "gpu"):
        return value
    from tools.catalog.gpus import find_gpu
    from tools.catalog.models import resolve_model

    try:
        if field == "gpu":
            return find_gpu(str(value))[0].id
        spec = resolve_model(str(value)).spec_or_none
        return spec.id if spec is not None else str(value).lower()
    except (ScenarioError, ValueError, KeyError):
        return str(value).lower()


def _squash(text: str) -> str:
    return _SQUASH.sub("", text.lower())


def side_with_question(
    stated: dict[str, Any], question_fields: dict[str, Any], question: str
) -> tuple[dict[str, Any], list[Overruled]]:
    """`stated` with the question's job fields where the model's reading differs, and what changed."""
    result = dict(stated)
    overruled: list[Overruled] = []
    for name, asked in question_fields.items():
        given = stated.get(name)
        if given is not None and _canonical(name, given) == _canonical(name, asked):
            continue
        if given is None and name == "num_gpus" and asked == 1:
            continue  # "one A100" left out: one GPU is what the estimator assumes anyway
        if name in ("model", "gpu") and given is not None and _squash(str(given)) in _squash(question):
            continue  # the question names this one too (a comparison): not a misreading
        result[name] = asked
        overruled.append(Overruled(field=name, model_value=given, question_value=asked))
    return result, overruled
