"""A verdict-only cut-off: the planner asks whether a candidate fits, and needs its exact total only when it
does (tools/planner.py compares fitting candidates; one that does not fit is dropped whatever its total).

Inside `cutoff(rejects)`, a footprint checks a lower bound of its peak as soon as it has one
(`check(lower_bound)`): the parts that stay resident whatever comes after them (tools/footprint.py
train_footprint: weights, master weights, optimizer states and gradients; no memory saver lowers them).
When `rejects(lower_bound)` says that even that bound cannot fit, `OverLimit` stops the footprint there.
Outside a cut-off every footprint runs to the end, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_REJECTS: ContextVar[Callable[[int], bool] | None] = ContextVar("cutoff", default=None)


class OverLimit(Exception):
    """A footprint's lower bound (`bound`, tensor bytes on its GPU) already rules out a fit. `resident`: the
    bound is of resident state alone, the same whatever the step's tokens, recompute and loss
    (tools.planner.RESIDENT_BLIND)."""

    def __init__(self, bound: int, resident: bool = True) -> None:
        super().__init__(bound)
        self.bound = bound
        self.resident = resident


@contextmanager
def cutoff(rejects: Callable[[int], bool]) -> Iterator[None]:
    """Footprints made inside the block stop (OverLimit) once `rejects(lower bound of their tensor peak)`."""
    token = _REJECTS.set(rejects)
    try:
        yield
    finally:
        _REJECTS.reset(token)


def check(lower_bound: int, *, resident: bool = True) -> None:
    """Raise OverLimit when a cut-off is on and rejects `lower_bound` (tensor bytes the peak is at least);
    `resident=False` when the bound also depends on the step's activations (OverLimit.resident)."""
    rejects = _REJECTS.get()
    if rejects is not None and rejects(lower_bound):
        raise OverLimit(lower_bound, resident)
