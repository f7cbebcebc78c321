"""Comparisons: several options of one job ("LoRA vs QLoRA", "q4_k_m or q5_k_m", "ZeRO-2 vs ZeRO-3"), each
estimated on the same job, the winner by a declared order, and what each option changes, by component.

The winner (`winner`), in this order (the planner's cost model, tools/planner.py module docstring, without
the GPU bill: every option runs on the cards it states):
1. it fits (a job that does not run loses to one that does);
2. fidelity (comparing methods or weight formats): the fine-tuning method (full 0 < LoRA 1 < QLoRA 2, `tools.planner` FIDELITY_*) then the weights'
   real bits per weight, more first (tools/inverse.py `weight_bits`);
3. speed (comparing methods, formats, ZeRO stages or recompute): the step-time factor of the option's changes (tools/planner.py `step_time_factor`: recompute
   +33 %, ZeRO-3 +10 %, offload 1.5-2x, QLoRA's dequantisation 1.3x);
4. memory: the most headroom on its card (the smaller total on the same card).
When no option fits, the one closest to fitting (smallest total over its card's budget) wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.estimator import estimate
from tools.result import Estimate
from tools.scenario import Scenario

TASK_FIDELITY = {"full_finetune": 0, "pretrain": 0, "freeze": 0, "lora": 1, "qlora": 2}


@dataclass
class Option:
    """One option of a comparison: its label as asked, the changes it makes to the job, the stated job with
    them, and its Estimate."""

    label: str
    changes: dict[str, Any]
    scenario: Scenario
    estimate: Estimate


def estimate_options(stated: Scenario, options: list[tuple[str, dict[str, Any]]]) -> list[Option]:
    """Every option estimated on the same stated job (`changes` laid over it); the question's order kept.
    A ScenarioError or ValidationError of one option is raised (the option is not a valid job)."""
    out = []
    for label, changes in options:
        job = stated.merged(**changes)
        out.append(Option(label, dict(changes), job, estimate(job, plan=False)))
    return out


def _bits(option: Option) -> float:
    from tools.inverse import weight_bits

    return weight_bits(option.scenario) or 0.0


# which terms of the order a comparison of each field reads (a model or a card is no fidelity choice, and
# only the fine-tuning method, the weight format, the ZeRO stage and recompute change the step time)
FIDELITY_FIELDS = frozenset({"task", "weight_dtype"})
SPEED_FIELDS = frozenset({"task", "weight_dtype", "zero_stage", "gradient_checkpointing"})


def rank_key(option: Option, reference: Scenario, compared: str | None = None) -> tuple[tuple[str, Any], ...]:
    """The option's place in the winner order (module docstring), as (term, value) pairs: lower is better.
    `compared`: the field the options differ in (None: every term)."""
    from tools.planner import step_time_factor

    est = option.estimate
    if not est.fits:
        return (("fits", 1), ("closest", est.per_gpu.total_bytes - est.usable_bytes))
    key: list[tuple[str, Any]] = [("fits", 0)]
    if compared is None or compared in FIDELITY_FIELDS:
        key.append(("fidelity", TASK_FIDELITY.get(est.scenario.task or "", 0)))
        key.append(("fidelity", -round(_bits(option), 2)))
    if compared is None or compared in SPEED_FIELDS:
        try:
            slow = step_time_factor(reference, _resolved_changes(option, reference))
        except (ValueError, TypeError):
            slow = 1.0
        key.append(("speed", round(slow, 3)))
    key.append(("memory", -est.headroom_bytes))
    return tuple(key)


def _resolved_changes(option: Option, reference: Scenario) -> dict[str, Any]:
    """The resolved fields of the option that differ from the reference job's (what its changes led to)."""
    fields = ("recompute", "gradient_checkpointing", "zero_stage", "offload_optimizer", "offload_params")
    fields += ("tp", "pp", "batch_size", "weight_dtype", "cross_entropy", "activation_offloading")
    mine = option.estimate.scenario
    return {f: getattr(mine, f) for f in fields if getattr(mine, f) != getattr(reference, f)}


def winner(options: list[Option], compared: str | None = None) -> int:
    """The index of the winning option (module docstring): the first of the best when they tie."""
    reference = options[0].estimate.scenario
    keys = [rank_key(o, reference, compared) for o in options]
    return min(range(len(options)), key=lambda i: (keys[i], i))


def by_component(est: Estimate) -> dict[str, int]:
    """Bytes per component name (the parts a comparison table lines up)."""
    out: dict[str, int] = {}
    for c in est.components:
        out[c.name] = out.get(c.name, 0) + c.bytes
    return out


def difference(base: Option, other: Option) -> tuple[int, str | None]:
    """`other`'s per-GPU total less `base`'s (negative: it saves memory), and the component whose change is
    the largest part of that difference in the same direction (None when the totals are equal)."""
    delta = other.estimate.per_gpu.total_bytes - base.estimate.per_gpu.total_bytes
    if delta == 0:
        return 0, None
    mine, theirs = by_component(base.estimate), by_component(other.estimate)
    moves = {name: theirs.get(name, 0) - mine.get(name, 0) for name in {*mine, *theirs}}
    same_way = {n: d for n, d in moves.items() if d * delta > 0}
    if not same_way:
        return delta, None
    return delta, max(same_way, key=lambda n: abs(same_way[n]))
