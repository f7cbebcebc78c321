"""Dependencies injected into the routers (`Depends`): everything lives on the app, nothing global.

They are `async def` although they only read an attribute: FastAPI runs a plain `def` dependency in
its thread pool, a thread hand-off per dependency per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.agent.base import Agent
from service.api.turns import TurnRunner
from service.settings import Settings
from service.store import ConversationStore


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_store(request: Request) -> ConversationStore:
    return request.app.state.store


async def get_agent(request: Request) -> Agent:
    return request.app.state.agent


async def get_runner(request: Request) -> TurnRunner:
    return request.app.state.runner


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[ConversationStore, Depends(get_store)]
AgentDep = Annotated[Agent, Depends(get_agent)]
RunnerDep = Annotated[TurnRunner, Depends(get_runner)]
