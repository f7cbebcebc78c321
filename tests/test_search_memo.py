"""tools.search_memo: a call is answered from the memo only when every read it made gives the same value."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tools.estimator import estimate
from tools.scenario import Scenario
from tools.search_memo import memo_in_search, search_scope


@dataclass
class Inner:
    a: object = 1
    b: object = 2


@dataclass
class Outer:
    x: object = 10
    y: object = 20
    flag: bool = False
    scenario: Inner = field(default_factory=Inner)
    items: list = field(default_factory=list)


calls: list[object] = []


@memo_in_search
def reads(o: Outer, *, k: int = 0) -> tuple[object, ...]:
    calls.append(o)
    if o.flag:  # which fields are read depends on a value read before
        return (o.y, k)
    return (o.x, o.scenario.a, k)


@memo_in_search
def reads_list(o: Outer) -> int:
    calls.append(o)
    return len(o.items)


def test_equal_reads_hit_and_an_unread_field_does_not_matter() -> None:
    calls.clear()
    with search_scope():
        assert reads(Outer()) == (10, 1, 0)
        assert reads(Outer(y=99, scenario=Inner(b=7))) == (10, 1, 0)  # y and scenario.b are not read
        assert len(calls) == 1
        assert reads(Outer(x=11)) == (11, 1, 0)  # a read differs: computed
        assert reads(Outer(scenario=Inner(a=5))) == (10, 5, 0)  # a nested field read differs
        assert reads(Outer(), k=1) == (10, 1, 1)  # another keyword argument: another call
        assert len(calls) == 4


def test_a_read_that_changes_the_course_of_reads() -> None:
    calls.clear()
    with search_scope():
        assert reads(Outer(flag=True, y=3)) == (3, 0)
        assert reads(Outer(flag=True, y=3, x=1)) == (3, 0)  # x is not read on this course
        assert reads(Outer(flag=False, y=3)) == (10, 1, 0)
        assert reads(Outer(flag=True, y=4)) == (4, 0)
        assert len(calls) == 3


def test_values_of_another_type_are_other_values() -> None:
    calls.clear()
    with search_scope():
        assert reads(Outer(x=1)) == (1, 1, 0)
        assert reads(Outer(x=1.0))[0].__class__ is float  # 1 == 1.0, but prints differently
        assert reads(Outer(x=True))[0] is True
        assert len(calls) == 3


def test_unhashable_values_key_by_identity() -> None:
    calls.clear()
    shared = [1, 2]
    with search_scope():
        assert reads_list(Outer(items=shared)) == 2
        assert reads_list(Outer(items=shared)) == 2
        assert reads_list(Outer(items=[1, 2])) == 2  # an equal but other list: computed again
        assert len(calls) == 2


def test_no_memo_outside_a_scope_nor_across_scopes() -> None:
    calls.clear()
    reads(Outer())
    reads(Outer())
    with search_scope():
        reads(Outer())
    with search_scope():
        reads(Outer())
    assert len(calls) == 4


def test_a_memoised_call_cannot_change_its_input() -> None:
    @memo_in_search
    def writes(o: Outer) -> None:
        o.x = 3

    with search_scope(), pytest.raises(TypeError, match="may not set 'x'"):
        writes(Outer())


def test_a_use_other_than_reading_attributes_is_refused() -> None:
    @memo_in_search
    def compares(o: Outer) -> bool:
        return o.scenario == Inner()

    with search_scope(), pytest.raises(TypeError, match="by attribute only"):
        compares(Outer())


def test_rl_estimate_is_the_same_inside_a_search_scope() -> None:
    """PPO shares its frozen forwards through the memo: the estimate inside a scope shared with other
    estimates is the estimate made alone."""
    base = {"model": "llama-2-7b", "task": "ppo", "gpu": "a100-80gb", "num_gpus": 1, "seq_len": 2048}
    variants = [{"batch_size": 4}, {"batch_size": 4, "optimizer": "adamw_8bit"}, {"batch_size": 2}]
    alone = [estimate(Scenario(**base, **v), plan=False).model_dump_json() for v in variants]
    with search_scope():
        shared = [estimate(Scenario(**base, **v), plan=False).model_dump_json() for v in variants]
    assert shared == alone
    ppo = estimate(Scenario(**base, batch_size=4), plan=False)
    assert ppo.per_gpu.total_bytes == 297_715_023_872  # as before the memo (golden corpus)
    # the reference's and the reward model's weights: one shared forward footprint, each part with its role
    roles = {c.model_role for c in ppo.components if c.name == "weights"}
    assert roles == {"actor", "critic", "reference", "reward"}
