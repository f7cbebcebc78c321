"""The estimator's measured error bound, for answers to cite ("typically within N% of measured").

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


def accuracy_note(language: str = "en") -> str:
    """One sentence for answers, with the figures of the committed benchmark."""
    b = accuracy_bound()
    if language == "zh":
        text = (
            f"在 {b.cases} 个实测（trace）用例上，张量峰值估计通常误差在 {b.typical_pct}% 以内"
            f"（中位数 {b.median_abs_error_pct:.1f}%，最差 {b.worst_abs_error_pct:.1f}%）。"
        )
        if b.published_median_abs_error_pct is not None:
            text += (
                f"与 {b.published_cases} 个公开的 GPU 实测（litgpt，模型实现不同）相比，中位误差 "
                f"{b.published_median_abs_error_pct:.1f}%。"
            )
        return text
    text = (
        f"Tensor-peak estimates are typically within {b.typical_pct}% of the measured (traced) peak "
        f"(median {b.median_abs_error_pct:.1f}%, worst {b.worst_abs_error_pct:.1f}% over {b.cases} traced cases)."
    )
    if b.published_median_abs_error_pct is not None:
        text += (
            f" Against {b.published_cases} published GPU runs (litgpt, a different model implementation) "
            f"the median error is {b.published_median_abs_error_pct:.1f}%."
        )
    return text
