"""Dependencies injected into the routers (`Depends`): everything lives on the app, nothing global.

They are `async def` although they only read an attribute: FastAPI runs a plain `def` dependency in
its thread pool, a thread hand-off per dependency per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from service.agent.base import Agent
from service.api.auth import get_owner
from service.api.turns import TurnRunner
from service.settings import Settings
from service.store import ConversationStore


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_store(request: Request) -> ConversationStore:
    return request.app.state.store


async def get_agent(request: Request) -> Agent:
    return request.app.state.agent


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[ConversationStore, Depends(get_store)]
AgentDep = Annotated[Agent, Depends(get_agent)]


@dataclass(frozen=True)
class ChatContext:
    """What a chat route needs: the turn runner (whose agent answers) and who asks (the API key's owner
    digest, None when keys are off). One dependency, not one each: FastAPI solves every dependency of a
    route again on each request (~20 us each on the shared 2-core box, on every chat stream)."""

    runner: TurnRunner
    owner: str | None


async def get_chat_context(request: Request) -> ChatContext:
    return ChatContext(runner=request.app.state.runner, owner=await get_owner(request))


ChatContextDep = Annotated[ChatContext, Depends(get_chat_context)]
