"""The estimator's measured error bound, as data for answers to cite ("typically within N% of measured";
the sentence is each channel's, service/agent/render.py accuracy_text).

The figures come from `tools/accuracy_summary.json`, written by the accuracy benchmark
(`python -m benchmarks.accuracy.run --write-summary`): the estimator's tensor peak against the
traced peak of the real transformers model on the benchmark matrix (docs/accuracy.md).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

SUMMARY_JSON = Path(__file__).with_name("accuracy_summary.json")


class AccuracyBound(BaseModel):
    """Absolute relative error of `per_gpu.tensor_peak_bytes` against traced truth, in percent."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    median_abs_error_pct: float
    p90_abs_error_pct: float
    worst_abs_error_pct: float
    held_out_median_abs_error_pct: float | None = None
    held_out_p90_abs_error_pct: float | None = None
    underestimates_beyond_5pct: int = 0
    published_median_abs_error_pct: float | None = None  # vs published GPU runs (litgpt: other model code)
    published_cases: int = 0
    cases: int
    truth: str = ""
    date: str
    command: str = ""

    @property
    def typical_pct(self) -> int:
        """The N of "typically within N%": the p90 absolute error, rounded up to a whole percent."""
        return max(1, math.ceil(self.p90_abs_error_pct))


@lru_cache(maxsize=1)
def accuracy_bound() -> AccuracyBound:
    return AccuracyBound.model_validate(json.loads(SUMMARY_JSON.read_text(encoding="utf-8")))
