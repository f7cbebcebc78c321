"""An inverse question or a comparison answered: the search (tools/inverse.py) or the options
(tools/compare.py) run on the stated job, the Answer's `asked` filled, and the estimate the answer shows.

The answer's estimate is the job the asked figure is about: the scenario at the edge (max/min; the job as
stated when nothing fits) or the winning option (compare), so the verdict, the biggest parts, the fewest GPUs
and the fixes under the asked figure all speak of that job and never contradict it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from service.agent.asked import Asked, AskedOption, EstimatedScenario, TriedFormat
from service.agent.offline.inquiry import Inquiry, read_inquiry
from tools import inverse
from tools.compare import estimate_options, winner
from tools.estimator import estimate
from tools.result import Estimate
from tools.scenario import Scenario

SEARCHES: dict[str, Callable[[Scenario], inverse.Edge]] = {
    "batch": inverse.max_batch,
    "context": inverse.max_context,
    "params": inverse.max_params,
    "format": inverse.best_format,
    "gpus": inverse.fewest_gpus,
    "lora_rank": inverse.max_lora_rank,
    "completion": inverse.max_completion,
    "generations": inverse.max_generations,
}
log = logging.getLogger(__name__)
PLACEHOLDER_PARAMS = 1_000_000_000  # "the largest model" names no model: the search needs none


def _estimated(s: Scenario | None) -> EstimatedScenario | None:
    if s is None:
        return None
    return EstimatedScenario(scenario=s, estimate=estimate(s, plan=False))


def answer_edge(inquiry: Inquiry, stated: Scenario) -> tuple[Asked, Scenario]:
    """The edge of an inverse question, as `asked`, and the job the answer's estimate is about."""
    edge = SEARCHES[inquiry.search or "batch"](stated)
    asked = Asked(
        kind=edge.kind,  # type: ignore[arg-type]
        field=edge.field,
        value=edge.value,
        at=_estimated(edge.at),
        beyond=_estimated(edge.beyond),
        capped_by=edge.capped_by,
    )
    for label, job in (("under", edge.under), ("over", edge.over)):
        got = _estimated(job)
        if got is not None:
            asked.catalog.append(AskedOption(label=label, **dict(got)))
    asked.formats = [
        TriedFormat(name=n, bits_per_weight=b, fits=f) for n, b, f in edge.details.get("formats", [])
    ]
    if edge.field == "num_gpus" and "fix" in edge.details:
        asked.as_configured = edge.details.get("as_configured")
        asked.fix = edge.details["fix"]
    return asked, edge.at or stated


def answer_comparison(inquiry: Inquiry, stated: Scenario) -> tuple[Asked, Scenario]:
    """Every option estimated on the same job, as `asked`, and the winner's job."""
    base = stated.merged(**_cleared(inquiry, stated))
    options = estimate_options(base, inquiry.options)
    best = winner(options, inquiry.compared)
    asked = Asked(
        kind="compare",
        field=inquiry.compared,
        value=options[best].label,
        options=[AskedOption(label=o.label, scenario=o.scenario, estimate=o.estimate) for o in options],
        winner=best,
    )
    return asked, options[best].scenario


def _cleared(inquiry: Inquiry, stated: Scenario) -> dict[str, Any]:
    """The compared field's stated value is the options' to set: the job keeps everything else."""
    keys = {k for _, changes in inquiry.options for k in changes}
    return {
        k: None for k in keys if k in Scenario.model_fields and k not in ("model", "gpu", "task", "params")
    }


def subject_for(inquiry: Inquiry | None, stated: dict[str, Any]) -> dict[str, Any]:
    """A question about the largest model names none: the search gives it sizes itself."""
    if (
        inquiry is not None
        and inquiry.search == "params"
        and not {"model", "params", "architecture"} & set(stated)
    ):
        return {**stated, "params": PLACEHOLDER_PARAMS}
    return stated


def answer_inquiry(inquiry: Inquiry, stated: Scenario) -> tuple[Asked, Scenario]:
    """`asked` for the inquiry and the job the answer's estimate is about."""
    if inquiry.kind == "compare":
        return answer_comparison(inquiry, stated)
    return answer_edge(inquiry, stated)


def asked_of_answer(
    question: str, scenario: Scenario, estimate: Estimate, lang: str
) -> tuple[Asked | None, Estimate, str | None]:
    """For an agent that estimated the stated job itself (the LLM agent's tool call): what the question asks,
    answered as the offline agent answers it, the estimate of the job the asked figure is about, and the
    summary's first line; (None, `estimate`, None) for a forward question or when the search cannot run."""
    from service.agent.asked_text import asked_lines
    from service.agent.offline.parser import normalise
    from service.hub import estimate_any_model

    inquiry = read_inquiry(normalise(question))
    if inquiry is None:
        return None, estimate, None
    try:
        asked, target = answer_inquiry(inquiry, scenario)
        lead, _ = asked_lines(asked, lang)
        return asked, estimate_any_model(target, plan=True), lead
    except Exception:  # a search or text defect: the answer stays the plain one, logged
        log.exception("inquiry %s not answered for %s", inquiry, scenario.stated())
        return None, estimate, None
