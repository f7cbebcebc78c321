"""`tools.result.constructed`: the instance `model_construct` builds, for the result models the estimator makes.

Every model in real Estimates (training with the planner, serving with an engine, RL) is rebuilt with
model_construct from its own fields and compared: the same fields in the same order, all marked as set,
no extra or private values, the same JSON. A field left out or one the model does not have is an error.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tools.estimator import estimate
from tools.result import Assumption, Component, Estimate, PhasePeak, constructed
from tools.scenario import Scenario

SCENARIOS: tuple[dict[str, Any], ...] = (
    {"model": "llama-3-8b", "task": "full_finetune", "gpu": "4090", "num_gpus": 1, "batch_size": 8},
    {"model": "llama-2-7b", "task": "lora", "gpu": "4090", "batch_size": 4, "seq_len": 2048},
    {"model": "llama-2-7b", "task": "inference", "gpu": "a100-80gb", "engine": "vllm", "batch_size": 8},
    {"model": "llama-2-7b", "task": "ppo", "gpu": "a100-80gb", "num_gpus": 1, "batch_size": 4},
)


def _models(obj: object) -> list[BaseModel]:
    """Every result model inside `obj` (the Estimate itself included), depth first; the scenario is
    validated by the estimator's caller, not made by `constructed`, and is left out."""
    out: list[BaseModel] = []
    if isinstance(obj, Scenario):
        return out
    if isinstance(obj, BaseModel):
        out.append(obj)
        for value in obj.__dict__.values():
            out += _models(value)
    elif isinstance(obj, list):
        for item in obj:
            out += _models(item)
    return out


@pytest.mark.parametrize("data", SCENARIOS, ids=lambda d: f"{d['task']}-{d['model']}")
def test_every_result_model_is_what_model_construct_builds(data: dict[str, Any]) -> None:
    est = estimate(Scenario.model_validate(data))
    models = _models(est)
    kinds = {type(m).__name__ for m in models}
    assert {"Estimate", "PerGpu", "GpuInfo", "Component", "PhasePeak", "Assumption"} <= kinds
    for m in models:
        cls = type(m)
        ref = cls.model_construct(**dict(m.__dict__))
        assert list(m.__dict__) == list(cls.model_fields), cls.__name__  # declaration order
        assert m.__dict__ == ref.__dict__
        assert m.model_fields_set == ref.model_fields_set == set(cls.model_fields)
        assert m.__pydantic_extra__ is None and m.__pydantic_private__ is None
    assert est.model_dump_json() == Estimate.model_construct(**dict(est.__dict__)).model_dump_json()


def test_constructed_orders_the_fields_as_declared() -> None:
    got = constructed(PhasePeak, tensor_bytes=12, phase="decode")
    assert list(got.__dict__) == ["phase", "tensor_bytes"]
    assert got == PhasePeak(phase="decode", tensor_bytes=12)
    assert got.model_dump_json() == '{"phase":"decode","tensor_bytes":12}'


def test_a_missing_or_unknown_field_is_an_error_not_a_default() -> None:
    with pytest.raises(KeyError, match="reason"):
        constructed(Assumption, field="seq_len", value=2048, code="seq_len.default", values={})
    with pytest.raises(TypeError, match="colour"):
        constructed(PhasePeak, phase="decode", tensor_bytes=1, colour="red")
    with pytest.raises(KeyError):
        constructed(Component, name="weights", bytes=1)
