"""Dependencies injected into the routers (`Depends`): everything lives on the app, nothing global."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.agent.base import Agent
from service.api.turns import TurnRunner
from service.settings import Settings
from service.store import ConversationStore


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_store(request: Request) -> ConversationStore:
    return request.app.state.store


def get_agent(request: Request) -> Agent:
    return request.app.state.agent


def get_runner(request: Request) -> TurnRunner:
    return request.app.state.runner


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[ConversationStore, Depends(get_store)]
AgentDep = Annotated[Agent, Depends(get_agent)]
RunnerDep = Annotated[TurnRunner, Depends(get_runner)]
