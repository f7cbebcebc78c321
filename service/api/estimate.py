"""`POST /v1/estimate`: a Scenario in, an Estimate out. Deterministic, no LLM."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from service.api.schemas import ERROR_RESPONSES
from tools.result import Estimate
from tools.scenario import Scenario

router = APIRouter(tags=["estimator"])


@router.post(
    "/v1/estimate",
    summary="Run the estimator on a scenario (no LLM)",
    response_model=Estimate,
    responses={code: ERROR_RESPONSES[code] for code in (400, 413, 415, 422)},
)
async def estimate_scenario(scenario: Scenario, request: Request) -> Estimate:
    from service.hub import estimate_any_model  # catalog first; `org/name` ids the catalog lacks: the Hub

    # CPU-bound (planner candidates) and Hub I/O: keep the event loop free for streams
    result = await run_in_threadpool(estimate_any_model, scenario)
    observability = getattr(request.app.state, "observability", None)
    if observability is not None:  # a Hub look-up, for the operator's metrics (service/observability)
        observability.count_estimate(result)
    return result
