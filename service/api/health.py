"""Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the store answers a real read, its
file is still there and writable; the reason when not)."""

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
    response_model_exclude_none=True,
    responses={503: {"model": Readiness, "description": "the store is not reachable"}},
)
async def readyz(request: Request, store: StoreDep) -> Readiness | JSONResponse:
    # a real look at the store (service/store_health.py): the file is still there and writable, a read of
    # the conversations table answers; the app's watch does the same every second
    health = getattr(request.app.state, "store_health", None)
    problem = await health.check() if health is not None else (None if await store.ping() else "unreachable")
    if problem is None:
        return Readiness(status="ready", store="ok")
    body = Readiness(status="unavailable", store="unreachable", reason=problem)
    return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "5"})
