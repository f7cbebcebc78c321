"""tools/copies.py: `copy_with` is `model_copy(update=...)` for every part of real Estimates (fields,
fields set, extra and private state, JSON), never the same object, and leaves the original as it was."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, PrivateAttr

from tools.copies import copy_with
from tools.estimator import estimate
from tools.scenario import Scenario

SCENARIOS = [
    {"model": "llama-2-7b", "task": "lora", "gpu": "4090"},
    {"model": "qwen2.5-7b", "task": "inference", "gpu": "a100-80gb", "seq_len": 8192},
    {"model": "qwen2.5-7b", "task": "grpo", "gpu": "h100", "num_gpus": 8},
]


def _state(model: BaseModel) -> tuple[object, ...]:
    return (
        type(model),
        dict(model.__dict__),
        list(model.__dict__),
        set(model.__pydantic_fields_set__),
        model.__pydantic_extra__,
        model.__pydantic_private__,
        model.model_dump_json(),
    )


def _parts(scenario: dict[str, object]) -> list[tuple[BaseModel, dict[str, object]]]:
    e = estimate(Scenario.model_validate(scenario))
    parts: list[tuple[BaseModel, dict[str, object]]] = [
        (e, {"components": [], "assumptions": list(e.assumptions)}),
        (e.per_gpu, {"gpu_role": "single GPU"}),
        (e.gpu, {"alias_note": "read as"}),
    ]
    parts += [(c, {"label": "weights", "note": None}) for c in e.components]
    parts += [(a, {"reason": "a reason"}) for a in e.assumptions]
    parts += [(s, {"change": "a change", "rationale": "why"}) for s in e.suggestions]
    return parts


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_copy_with_is_model_copy(scenario: dict[str, object]) -> None:
    parts = _parts(scenario)
    assert len(parts) > 10
    for model, update in parts:
        before = _state(model)
        copied = copy_with(model, update)
        assert copied is not model
        assert _state(copied) == _state(model.model_copy(update=update))
        assert _state(model) == before
        copied.__pydantic_fields_set__.add("x")  # its own set, not the original's
        assert "x" not in model.__pydantic_fields_set__


def test_a_model_with_private_state_goes_through_model_copy() -> None:
    class Private(BaseModel):
        a: int
        _seen: list[int] = PrivateAttr(default_factory=list)

    m = Private(a=1)
    m._seen.append(1)
    copied = copy_with(m, {"a": 2})
    assert copied.a == 2 and copied._seen == [1] and m.a == 1


def test_the_fields_set_grow_by_the_update_as_model_copy_does() -> None:
    class Plain(BaseModel):
        a: int
        b: str = "x"

    m = Plain(a=1)
    assert _state(copy_with(m, {"b": "y"})) == _state(m.model_copy(update={"b": "y"}))
    assert copy_with(m, {"b": "y"}).model_dump(exclude_unset=True) == {"a": 1, "b": "y"}
