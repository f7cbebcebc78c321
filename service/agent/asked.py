"""What the person asked, and what was read from a paste: the Answer's `asked` and `source`
(docs/reference.md, "What was asked").

Every channel renders an answer from these: the summary's first line is the asked figure (the edge of a
`max`/`min` search, the winner of a `compare`), never a verdict of another question.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tools.result import Estimate, Suggestion
from tools.scenario import Scenario

# fit: does this job fit; figure: one figure of it (the KV cache, the weights); max/min: an inverse question
# searched with the estimator; compare: several options of one job; concept: no job; diagnose: a pasted
# error or log read and reconciled with the job
AskedKind = Literal["fit", "figure", "max", "min", "compare", "concept", "diagnose"]


class EstimatedScenario(BaseModel):
    """One job as estimated: the scenario as posted to the estimator and its Estimate."""

    scenario: Scenario
    estimate: Estimate


class AskedOption(EstimatedScenario):
    """One option of a comparison, in the question's order."""

    label: str


class TriedFormat(BaseModel):
    """A weight format tried for "the best format that fits": its real bits per weight on the model."""

    name: str
    bits_per_weight: float
    fits: bool


class Asked(BaseModel):
    """What was asked. `field`/`value`/`at`/`beyond`/`capped_by` for `max`/`min`; `options` for `compare`;
    `observed` for `diagnose` (figures read from the paste, bytes or counts)."""

    kind: AskedKind = "fit"
    field: str | None = None  # the Scenario field searched: batch_size, seq_len, num_gpus, weight_dtype ...
    value: int | float | str | None = None  # the edge found
    at: EstimatedScenario | None = None  # the job at the edge (fits)
    beyond: EstimatedScenario | None = None  # one step past it (does not fit); null when capped_by says why
    capped_by: str | None = None  # what stops the search before memory does: model_window, ...
    options: list[AskedOption] = Field(default_factory=list)
    winner: int | None = None  # compare: the index of the winning option (tools/compare.py, the order used)
    # max params: the catalog models of the family just under (fits) and over (does not fit) the edge
    catalog: list[AskedOption] = Field(default_factory=list)
    # max weight_dtype: every format of the engine tried, highest precision first
    formats: list[TriedFormat] = Field(default_factory=list)
    as_configured: int | None = (
        None  # min num_gpus: the fewest with the job's own settings, when a fix needs fewer
    )
    fix: Suggestion | None = None  # min num_gpus: that fix (the planner's suggestion the edge job applies)
    observed: dict[str, int | list[int]] = Field(default_factory=dict)


class IgnoredKey(BaseModel):
    """A pasted key or flag that was not used, and why."""

    key: str
    why: str


class Source(BaseModel):
    """What was read from a pasted config, command line or log."""

    format: (
        str  # llamafactory-yaml, axolotl-yaml, deepspeed-json, vllm-cli, cuda-oom, ... (docs/reference.md)
    )
    used: dict[str, str] = Field(default_factory=dict)  # key or flag -> the Scenario field it became
    ignored: list[IgnoredKey] = Field(default_factory=list)
