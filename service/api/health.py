"""Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the store answers)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.api.deps import AgentDep, StoreDep
from service.api.schemas import Health, Readiness

router = APIRouter(tags=["health"])


def _version() -> str:
    try:
        return version("vramwise")
    except PackageNotFoundError:
        return "unknown"


@router.get("/healthz", summary="Liveness", response_model=Health)
async def healthz(request: Request, agent: AgentDep) -> Health:
    # the version create_app read once (importlib.metadata looks the package up on sys.path: ~0.5 ms a probe)
    return Health(status="ok", agent=agent.name, version=request.app.version)


@router.get(
    "/readyz",
    summary="Readiness: the conversation store is reachable",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "the store is not reachable"}},
)
async def readyz(store: StoreDep) -> Readiness | JSONResponse:
    if await store.ping():
        return Readiness(status="ready", store="ok")
    body = Readiness(status="unavailable", store="unreachable")
    return JSONResponse(body.model_dump(), status_code=503)
