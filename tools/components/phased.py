"""Phased components: one named tensor group with its bytes at each phase of a step.

A component family (tools/components/*.py) answers one question for itself: which bytes it holds at
each phase, with the formula, the substituted figures and the source. The footprint composes them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from tools.notes import Note
from tools.result import Component, constructed
from tools.rules.parallel import Stage

TRAIN_PHASES = ("end_of_forward", "backward", "optimizer_step")
GENERATE_PHASES = ("prefill", "decode")
FORWARD_PHASES = ("forward",)
FWD_BWD = ("end_of_forward", "backward")

# (formula, substituted) made on demand: only a shown component needs them (the planner sums bytes)
Texts = Callable[[], tuple[str, str]]
Entry = tuple[int, Texts]  # (bytes, texts)
At = dict[str, Entry]  # phase -> entry; an absent phase = not resident


class PhasedComponent(NamedTuple):
    """One named tensor group with its bytes at each phase (absent phase = not resident). An immutable
    value (a named tuple: a footprint makes dozens per planner candidate; `_replace` for a changed copy)."""

    name: str
    label: str  # a label code (tools/labels.py LABEL_CODES); `label_values` fill it
    source: str
    at: At
    model_role: str | None = None
    note_code: str | None = None  # tools/labels.py NOTE_CODES
    label_values: tuple[tuple[str, object], ...] = ()

    def bytes_at(self, phase: str) -> int:
        entry = self.at.get(phase)
        return entry[0] if entry else 0

    def component_at(self, phase: str, built: dict[Entry, Component] | None = None) -> Component | None:
        """The Component resident at `phase` (None when it holds no bytes then). `built`: Components
        made so far from this part's entries, so that phases with the same entry share one (components
        are never mutated)."""
        entry = self.at.get(phase)
        if not entry or entry[0] <= 0:
            return None
        if built is None:
            return self._component(entry)
        got = built.get(entry)
        if got is None:
            got = built[entry] = self._component(entry)
        return got

    def _component(self, entry: Entry) -> Component:
        formula, substituted = entry[1]()
        return constructed(
            Component,
            name=self.name,
            bytes=int(entry[0]),
            kind="tensor",
            formula=formula,
            substituted=substituted,
            source=self.source,
            label=None,
            label_code=self.label,
            label_values=dict(self.label_values),
            model_role=self.model_role,
            note_code=self.note_code,
            note=None,
        )


class ModelFootprint(NamedTuple):
    """One model's components on its most loaded GPU, phase by phase, with the notes they raised."""

    phases: tuple[str, ...]
    parts: tuple[PhasedComponent, ...]
    gpu_role: tuple[dict[str, object], ...]  # Layout.gpu_role parts
    notes: tuple[Note, ...] = ()
    stage: Stage | None = None

    def bytes_at(self, phase: str) -> int:
        return sum(p.bytes_at(phase) for p in self.parts)

    def components_at(self, phase: str) -> list[Component]:
        return [c for c in (p.component_at(phase) for p in self.parts) if c is not None]

    def components_by_phase(self) -> dict[str, list[Component]]:
        """`components_at` of every phase, a part's phases with the same entry sharing one Component."""
        built: list[dict[Entry, Component]] = [{} for _ in self.parts]
        return {
            ph: [
                c
                for c in (p.component_at(ph, memo) for p, memo in zip(self.parts, built, strict=True))
                if c is not None
            ]
            for ph in self.phases
        }

    def phase_bytes(self) -> dict[str, int]:
        """`bytes_at` of every phase, in step order, from one pass over the parts."""
        totals = dict.fromkeys(self.phases, 0)
        for part in self.parts:
            for phase, entry in part.at.items():
                if entry and phase in totals:
                    totals[phase] += entry[0]
        return totals

    def peak_phase(self) -> str:
        totals = self.phase_bytes()
        return max(totals, key=totals.__getitem__)  # first of equal maxima (step order)

    @property
    def peak_bytes(self) -> int:
        return max(self.phase_bytes().values())


def same(phases: tuple[str, ...], value: int, texts: Texts) -> At:
    """The same entry at every phase of `phases` (a tensor alive through them all)."""
    return dict.fromkeys(phases, (value, texts))


def derived(entry: Entry, value: int, formula_tail: str, subst_tail: Callable[[str], str]) -> Entry:
    """`entry` rescaled to `value`: its formula + `formula_tail`, `subst_tail(its substituted)`."""
    texts = entry[1]

    def more() -> tuple[str, str]:
        formula, subst = texts()
        return formula + formula_tail, subst_tail(subst)

    return value, more


@lru_cache(maxsize=1024)
def cite(*sources: str) -> str:
    """Join source strings naming each reference once ("ZeRO paper sec. 3.1" and "ZeRO (Rajbhandari
    et al. 2020) sec. 3.1" are the same reference). Memoised: a pure function of a few dozen
    constant source strings, called for every component of every estimate (the planner's too)."""
    out: list[str] = []
    for src in sources:
        for part in src.split("; "):
            ref = part.strip().replace("ZeRO paper", "ZeRO (Rajbhandari et al. 2020)")
            if ref and ref not in out:
                out.append(ref)
    return "; ".join(out)


def phased(
    name: str,
    label: str,
    source: str,
    at: At,
    role: str | None,
    note_code: str | None = None,
    **label_values: object,
) -> PhasedComponent | None:
    """The component (`label`: its label code, filled by `label_values`), or None when it holds no
    bytes at any phase (nothing to show)."""
    for entry in at.values():
        if entry[0] > 0:
            return PhasedComponent(
                name, label, cite(source), at, role, note_code, tuple(label_values.items())
            )
    return None


def footprint(
    phases: tuple[str, ...],
    parts: list[PhasedComponent | None],
    gpu_role: tuple[dict[str, object], ...],
    notes: list[Note],
    stage: Stage,
) -> ModelFootprint:
    """A ModelFootprint of the components that hold bytes, in the order given."""
    kept = tuple(p for p in parts if p is not None)
    return ModelFootprint(phases, kept, gpu_role, tuple(notes), stage)
