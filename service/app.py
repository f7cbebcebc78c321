"""The HTTP service: `create_app(settings)` builds a FastAPI app with everything it needs.

No module-level state: the settings, the conversation store, the agent and the turn runner
live on `app.state` and reach the routers through `Depends` (service/api/deps.py). The
lifespan starts the agent's workers (the offline agent's processes, service/api/agent_pool.py),
opens the store (creating its tables), and on shutdown closes both.

Routers: chat (SSE), openai_compat (/v1/chat/completions, /v1/models), estimate, catalog,
health, web (the chat page at `/`, static files at `/static`), slack (`POST /slack/events`, 404 unless
configured; service/slack). OpenAPI docs at `/docs`.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from service.agent.base import Agent
from service.api import catalog, chat, coach, estimate, health, interview, openai_compat, web
from service.api.agent_pool import ProcessPoolAgent
from service.api.agent_thread import ThreadedAgent
from service.api.docs import install_docs
from service.api.errors import install_error_handlers
from service.api.operating import install_operating_guards
from service.api.turns import TurnRunner
from service.coach.coach import Coach
from service.coach.interview.session import Interviewer
from service.coach.interview.store import InterviewStore
from service.coach.store import CoachStore
from service.conversation_pages import TurnCap
from service.observability import Observability
from service.settings import Settings
from service.slack import SlackChannel
from service.slack import router as slack_router
from service.store import ConversationStore
from service.store_health import StoreHealth, StoreWriteGuard

if TYPE_CHECKING:  # langchain is imported only when an LLM is configured
    from service.coach.interview.judge import ConceptJudge

log = logging.getLogger(__name__)

DESCRIPTION = """
How much GPU memory does this need? A deterministic, cited estimator with a chat agent
(English and Chinese).

- `POST /v1/chat`: ask a question; the answer streams as Server-Sent Events.
- `POST /v1/chat/completions`: OpenAI-compatible (model `vramwise`), for SDKs and chat front ends.
- `POST /v1/estimate`: run the estimator on a Scenario (no LLM).
- `GET /v1/models` is OpenAI's models list (`vramwise`); the catalog of LLMs the estimator knows
  is `GET /v1/catalog/models`, the GPUs `GET /v1/gpus`.
- Errors: 4xx with `{error, field, accepted, suggestions}` (OpenAI routes: `{error: {message, ...}}`).
"""


def create_app(settings: Settings | None = None, *, agent: Agent | None = None) -> FastAPI:
    """Build the app. `agent` overrides the configured one (tests); otherwise `build_agent(settings)`."""
    settings = settings or Settings()
    observability = Observability.from_settings(settings)
    served, replay = _serving_agents(settings, agent, observability.llm_callbacks())
    lifecycle = [served] if replay is served else [served, replay]
    store = ConversationStore(settings.database_url)
    coach_store = CoachStore(settings.database_url)
    interview_store = InterviewStore(settings.database_url)
    turn_cap = TurnCap(store, settings.max_turns)  # VRAMWISE_MAX_TURNS (service/conversation_pages.py)
    runner = TurnRunner(
        agent=served,
        store=store,
        max_message_chars=settings.max_message_chars,
        replay_agent=replay,
        observer=observability.answers,
        turn_cap=turn_cap,
    )
    slack = SlackChannel.from_settings(settings, runner)  # None unless both Slack settings are set
    store_health = StoreHealth(store)  # a lost or read-only store: logged, 503 on writes, /readyz 503

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        collector = tune_gc_for_serving()  # before the workers fork: they inherit it
        try:
            for a in lifecycle:  # worker processes fork first, while the process has no other threads
                await a.start()
            await store.open()
            await coach_store.open()
            await interview_store.open()
            await store_health.start()
            turn_cap.open()
            if slack is not None:
                await slack.start()
            log.info("vramwise ready: agent=%s", served.name)
            try:
                yield
            finally:
                if slack is not None:
                    await slack.stop()
                await interview_store.close()
                await store_health.stop()
                turn_cap.close()
                await coach_store.close()
                await store.close()
        finally:
            for a in lifecycle:
                await a.stop()
            collector.restore()  # an app started and stopped in a longer process (tests): as it was

    app = FastAPI(
        title="VRAMwise",
        summary="The GPU-memory assistant",
        description=DESCRIPTION,
        version=_version(),
        lifespan=lifespan,
        telemetry=observability.fastapi_telemetry(),  # request spans when OTLP export is configured
        docs_url=None,  # served by install_docs: local Swagger UI when installed (offline)
        redoc_url=None,  # ReDoc only loads from a CDN
    )
    app.state.settings = settings
    app.state.store = store
    app.state.agent = served
    app.state.runner = runner
    app.state.coach = Coach(coach_store)
    app.state.interviewer = Interviewer(interview_store, judge=_concept_judge(settings))
    app.state.slack = slack
    app.state.store_health = store_health
    if slack is not None:
        slack.coach = app.state.coach
        slack.interviewer = app.state.interviewer

    app.add_middleware(StoreWriteGuard, health=store_health)  # innermost: after keys and limits
    install_operating_guards(app, settings, store)  # body checks, API keys, rate limits (before CORS)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"], allow_headers=["*"]
        )
    install_error_handlers(app)
    for router in (
        *(m.router for m in (chat, openai_compat, estimate, catalog, health, coach, interview, web)),
        slack_router,
    ):
        add_routes(app, router)
    app.mount("/static", StaticFiles(directory=web.WEB_DIR), name="static")
    install_docs(app)
    observability.install(app, served)  # outermost: request ids, metrics, access lines, GET /metrics
    return app


GC_YOUNG_THRESHOLD = 7000  # allocations between young collections while serving (CPython's default: 700)


@dataclass(frozen=True)
class _Collector:
    """The garbage collector's thresholds before the service tuned it (restored when it stops)."""

    thresholds: tuple[int, int, int]

    def restore(self) -> None:
        gc.unfreeze()  # the startup objects are collectable again
        gc.set_threshold(*self.thresholds)


def tune_gc_for_serving() -> _Collector:
    """Two settings of the cyclic garbage collector for a process that serves (benchmarks/README.md, "Chat
    load"; each measured with benchmarks/load_chat.py):

    - What is alive when the service starts (the imported modules, pydantic's schemas, the catalogs: ~150k
      objects) is moved out of the collector's reach (gc.freeze, after a collection so that no garbage is
      kept): every full collection walked them all, under a steady chat load one every ~400 streams taking
      ~100 ms of the serving loop (~0.25 ms per stream). Freed by reference counting as before.
    - Young collections every GC_YOUNG_THRESHOLD allocations, not 700: the 200 streams in flight kept
      surviving young collections, so each of the frequent middle-generation collections walked them all
      (~28 -> ~11 ms of collections per 400 streams)."""
    previous = _Collector(gc.get_threshold())
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *previous.thresholds[1:])
    return previous


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """`app.include_router(router)` for a router included as it is (no prefix, tags, dependencies or
    responses added at inclusion: its routes already carry the router's own), with its routes in the
    app's list: FastAPI 0.165 keeps an included router as one lazy entry that each request walks (the
    router's version, its effective routes, its match again in `handle`), ~60 us a request on the shared
    box, on every chat stream. tests/test_api.py checks the OpenAPI document is include_router's."""
    app.router.routes.extend(router.routes)


def _serving_agents(
    settings: Settings, agent: Agent | None, llm_callbacks: Callable[[], list] | None = None
) -> tuple[ThreadedAgent | ProcessPoolAgent, ThreadedAgent | ProcessPoolAgent]:
    """The agent that answers, and the offline one that re-parses OpenAI-style histories.

    The offline agent is CPU-bound: it answers in worker processes (`agent_processes`, default one
    per core; 0 = a background thread). The LLM agent waits on the network: a background thread.
    """
    from service.agent.factory import build_agent

    if agent is not None:  # injected (tests)
        served = ThreadedAgent(agent)
        return served, served
    settings_data = settings.model_dump()
    built = build_agent(settings, callbacks=llm_callbacks)
    if built.name == "offline":
        offline: ThreadedAgent | ProcessPoolAgent = (
            ThreadedAgent(built)
            if settings.agent_processes == 0
            else ProcessPoolAgent(settings_data, workers=settings.agent_processes)
        )
        return offline, offline
    return ThreadedAgent(built), ThreadedAgent(build_agent(settings, force_offline=True), "vramwise-replay")


def _concept_judge(settings: Settings) -> ConceptJudge | None:
    """With an LLM configured (and the agent not held offline): the interview's second reader of
    explanations (service/coach/interview/judge.py)."""
    if not settings.llm_configured or settings.agent == "offline":
        return None
    from service.agent.llm.endpoint import openai_compatible
    from service.coach.interview.judge import ConceptJudge

    return ConceptJudge(openai_compatible(settings))


def _version() -> str:
    from service.api.health import _version as package_version

    return package_version()
