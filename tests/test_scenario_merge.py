"""Scenario.merged_checked: the scenario merged() gives, validating only the changed fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tools.scenario import Scenario

BASE = Scenario(model="llama-3-8b", task="full_finetune", gpu="4090", num_gpus=1, batch_size=8, seq_len=4096)
CHANGES = [
    {},
    {"gradient_checkpointing": True, "recompute": "full"},
    {"batch_size": 1, "gradient_accumulation_steps": 8},
    {"task": "lora", "lora_rank": 16, "lora_targets": ["all-linear"]},
    {"weight_dtype": "nf4", "quant_method": "bnb", "double_quant": True, "task": "qlora"},
    {"num_gpus": 8, "tp": 8, "sequence_parallel": True, "zero_stage": 3},
    {"seq_len": 2048.0},  # coerced to an int by the field's own validation
]


@pytest.mark.parametrize("changes", CHANGES)
def test_same_scenario_as_merged(changes: dict) -> None:
    known: dict = {}
    for _ in range(2):  # the second time from the values validated the first time
        got = BASE.merged_checked(known, **changes)
        assert got == BASE.merged(**changes)
        assert got.model_dump_json() == BASE.merged(**changes).model_dump_json()


def test_known_values_are_not_shared_lists() -> None:
    known: dict = {}
    a = BASE.merged_checked(known, lora_targets=["q_proj"])
    b = BASE.merged_checked(known, lora_targets=["q_proj"])
    assert a.lora_targets == b.lora_targets == ["q_proj"]
    assert a.lora_targets is not b.lora_targets


@pytest.mark.parametrize(
    "changes",
    [
        {"batch_size": True},  # a boolean is no batch size
        {"zero_stage": 4},
        {"weight_dtype": "exl2", "task": "inference"},  # the scenario-level check: exl2 needs weight_bits
        {"no_such_field": 1},
    ],
)
def test_errors_worded_as_merged(changes: dict) -> None:
    with pytest.raises(ValidationError) as want:
        BASE.merged(**changes)
    with pytest.raises(ValidationError) as got:
        BASE.merged_checked({}, **changes)

    def said(err: ValidationError) -> list[tuple]:
        return [(e["type"], e["loc"], e["msg"]) for e in err.errors()]

    assert said(got.value) == said(want.value)


def test_scenario_level_checks_run_when_every_value_is_known() -> None:
    known: dict = {}
    BASE.merged_checked(known, weight_dtype="exl2", weight_bits=4.65, task="inference")
    with pytest.raises(ValidationError, match="exl2 needs weight_bits"):
        BASE.merged_checked(known, weight_dtype="exl2", task="inference")


@pytest.mark.parametrize("changes", CHANGES)
def test_updated_is_model_copy_with_update(changes: dict) -> None:
    got, want = BASE.updated(changes), BASE.model_copy(update=changes)
    assert got.__dict__ == want.__dict__
    assert got.model_fields_set == want.model_fields_set
    assert got.__pydantic_extra__ == want.__pydantic_extra__
    assert got.__pydantic_private__ == want.__pydantic_private__
    assert BASE.updated(changes) is not BASE  # a copy: the base is unchanged
    assert BASE.model_fields_set == {"model", "task", "gpu", "num_gpus", "batch_size", "seq_len"}
