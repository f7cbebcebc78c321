"""tools.call_memo: a call is answered from the memo only for the same, unchanged input and equal arguments."""

from __future__ import annotations

from dataclasses import dataclass, field

import tools.rl as rl
from tools.call_memo import memo_args, memo_same_input, memo_scope
from tools.estimator import estimate
from tools.scenario import Scenario


@dataclass
class Job:
    x: object = 10
    items: list = field(default_factory=list)


calls: list[object] = []


@memo_same_input
def figure(job: Job, *, k: object = 0) -> tuple[object, object]:
    calls.append(job)
    return (job.x, k)


def test_the_same_input_and_arguments_hit() -> None:
    calls.clear()
    job = Job()
    with memo_scope():
        assert figure(job, k=1) == (10, 1)
        assert figure(job, k=1) == (10, 1)
        assert len(calls) == 1
        assert figure(job, k=2) == (10, 2)  # other arguments
        assert figure(Job(), k=1) == (10, 1)  # an equal but other input: computed again
        assert len(calls) == 3


def test_values_of_another_type_are_other_arguments() -> None:
    calls.clear()
    job = Job()
    with memo_scope():
        assert figure(job, k=1)[1].__class__ is int
        assert figure(job, k=1.0)[1].__class__ is float  # 1 == 1.0, but prints differently
        assert figure(job, k=True)[1] is True
        assert figure(job, k=(1, 2)) == (10, (1, 2))
        assert figure(job, k=(1.0, 2)) == (10, (1.0, 2))
        assert len(calls) == 5


def test_unhashable_arguments_key_by_identity() -> None:
    calls.clear()
    job, shared = Job(), [1]
    with memo_scope():
        figure(job, k=shared)
        figure(job, k=shared)
        figure(job, k=[1])
        assert len(calls) == 2


def test_a_reassigned_attribute_is_seen() -> None:
    calls.clear()
    job = Job()
    with memo_scope():
        assert figure(job) == (10, 0)
        job.x = 11
        assert figure(job) == (11, 0)
        assert len(calls) == 2


def test_no_memo_outside_a_scope_nor_across_scopes() -> None:
    calls.clear()
    job = Job()
    figure(job)
    figure(job)
    with memo_scope():
        figure(job)
    with memo_scope():
        figure(job)
    assert len(calls) == 4


def test_ppo_computes_each_distinct_footprint_once(monkeypatch) -> None:
    """Full fine-tuning PPO with the critic and reward defaulting to the policy: six footprints composed
    (actor and critic steps, rollout, critic, reference and reward forwards), three computed."""
    made: list[str] = []
    real = rl.model_footprint

    def counted(rs, **kwargs):
        made.append(kwargs["mode"])
        return real(rs, **kwargs)

    monkeypatch.setattr(rl, "_model_footprint", memo_same_input(counted))
    sc = Scenario(model="llama-2-7b", task="ppo", gpu="a100-80gb", num_gpus=1, seq_len=2048, batch_size=4)
    ppo = estimate(sc, plan=False)
    assert sorted(made) == ["forward", "generate", "train"]
    assert ppo.per_gpu.total_bytes == 297_715_023_872  # as before the memo (golden corpus)
    weights = {c.model_role: c.bytes for c in ppo.components if c.name == "weights"}
    assert weights == dict.fromkeys(("actor", "critic", "reference", "reward"), 13_476_831_232)


@memo_args
def scaled(x: object, *, by: object = 1) -> tuple[object, object]:
    calls.append(x)
    return (x, by)


def test_memo_args_keys_on_values_and_their_types() -> None:
    calls.clear()
    with memo_scope():
        assert scaled(2, by=1) == (2, 1)
        assert scaled(2, by=1) == (2, 1)
        assert len(calls) == 1
        assert scaled(2, by=1.0)[1].__class__ is float  # equal value, another type: another call
        assert scaled(2, by=True)[1] is True
        assert scaled(2.0, by=1)[0].__class__ is float
        assert len(calls) == 4


def test_memo_args_unhashable_arguments_by_identity() -> None:
    calls.clear()
    shared: list[int] = [1]
    with memo_scope():
        scaled(shared)
        scaled(shared)
        scaled([1])  # equal, but another object
        assert len(calls) == 2


def test_memo_args_outside_a_scope_calls_every_time() -> None:
    calls.clear()
    scaled(3)
    scaled(3)
    assert len(calls) == 2


def test_a_nested_scope_shares_the_outer_memo() -> None:
    calls.clear()
    with memo_scope():
        scaled(5)
        with memo_scope():
            scaled(5)  # the planner's search scope is kept by an RL estimate's own scope inside it
        assert len(calls) == 1
    with memo_scope():
        scaled(5)  # a new scope: a fresh memo
    assert len(calls) == 2
