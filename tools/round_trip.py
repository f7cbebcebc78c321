"""An Estimate's scenario, posted back as is, gives the same Estimate.

The resolved scenario (Estimate.scenario) holds every value the job was estimated with, stated or filled,
and `filled` names the fields a default filled (tools/resolve.py). Read as stated, a filled value can mean
another job: a filled `mixed` recipe is DeepSpeed's stated FP16_Optimizer (tools/components/savers.py), a
model given by its parameter count is named by its size label (`13B`), which read as a name is the typical
model of that size. `as_asked` turns such a scenario back into the one the user asked: a field named in
`filled` whose value is still the default the estimator fills for the rest of the scenario is reset to
not stated; a value that differs (a what-if control changed it) is read as stated.
"""

from __future__ import annotations

from typing import Any

from tools.scenario import FILLABLE_FIELDS, Scenario


def with_filled(scenario: Scenario, changes: dict[str, Any]) -> Scenario:
    """`scenario` with the defaults `changes` set (not validated: the resolve stages chose them) and named in
    `filled`, beside those it names already. A stated value a stage replaced (a stated ZeRO stage 0 with
    optimizer offload is stage 2) is listed too: posted back, it is the default again, not a stated 2."""
    known = set(scenario.filled or ()) | {n for n, v in changes.items() if getattr(scenario, n) != v}
    return scenario.updated({**changes, "filled": [n for n in FILLABLE_FIELDS if n in known]})


def as_asked(scenario: Scenario) -> Scenario:
    """`scenario` without the defaults its `filled` names (each still at the value the estimator would fill
    again); `filled` itself is dropped. A scenario without `filled` is returned as it is."""
    if scenario.filled is None:
        return scenario
    try:
        return _without_defaults(scenario, set(scenario.filled))
    except ValueError:  # without the listed values the job is not valid: every value is read as stated
        return scenario.merged(filled=None)


def _without_defaults(scenario: Scenario, names: set[str]) -> Scenario:
    asked = scenario.merged(filled=None, **dict.fromkeys(names))
    # each pass keeps as stated the listed fields whose value is not the default of the scenario without them;
    # a field kept can change another's default, hence the passes (at most one per listed field)
    for _ in range(len(names) + 1):
        filled_again = _filled_again(asked)
        stated = {n for n in names if getattr(filled_again, n) != getattr(scenario, n)}
        if not stated:
            return asked
        names -= stated
        asked = asked.merged(**{n: getattr(scenario, n) for n in stated})
    return asked


def _filled_again(asked: Scenario) -> Scenario:
    """The scenario with every default the estimator fills: resolve's, then an RL job's (tools/rl.py)."""
    from tools.resolve import RL_TASKS, resolve  # both read scenarios through this module

    rs = resolve(asked)
    if rs.task in RL_TASKS:
        from tools.rl import fill_rl_defaults

        fill_rl_defaults(rs)
    return rs.scenario
