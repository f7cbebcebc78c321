"""pytest plugin: record every Scenario the test suite sends to the estimator.

Used by `python -m tests.golden.make_corpus --harvest`, which runs the suite with
`-p tests.golden.harvest_plugin` and keeps the outermost `tools.estimator.estimate` /
`tools.resolve.resolve` calls (the planner's and no-effect checker's inner calls are not
recorded: they are reproduced by estimating the outer scenario). The scenarios go to the file
named by VRAMWISE_HARVEST_OUT, one JSON object per line.
"""

from __future__ import annotations

import functools
import json
import os
import threading

_depth = threading.local()
_lock = threading.Lock()
_seen: set[str] = set()


def _record(scenario) -> None:
    from tools.scenario import Scenario

    if not isinstance(scenario, Scenario):
        return
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    try:
        if Scenario.model_validate(data) != scenario:
            return
    except ValueError:
        return
    line = json.dumps(data, sort_keys=True, ensure_ascii=False)
    with _lock:
        if line in _seen:
            return
        _seen.add(line)
        with open(os.environ["VRAMWISE_HARVEST_OUT"], "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _wrap(fn):
    @functools.wraps(fn)
    def recorded(scenario, *args, **kwargs):
        depth = getattr(_depth, "n", 0)
        if depth == 0:
            _record(scenario)
        _depth.n = depth + 1
        try:
            return fn(scenario, *args, **kwargs)
        finally:
            _depth.n = depth

    return recorded


def pytest_configure(config) -> None:  # before any test module imports the estimator
    import tools.estimator
    import tools.resolve

    tools.resolve.resolve = _wrap(tools.resolve.resolve)
    tools.estimator.resolve = tools.resolve.resolve
    tools.estimator.estimate = _wrap(tools.estimator.estimate)
