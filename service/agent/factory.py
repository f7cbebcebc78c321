"""`build_agent(settings)`: the one place that decides which brain answers.

The LLM agent (with the offline agent as its fallback) when an OpenAI-compatible endpoint is
configured and the offline agent is not forced; otherwise the offline agent. LangChain is only
imported when the LLM agent is built, so the offline path stays light.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from service.agent.base import Agent
from service.settings import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

logger = logging.getLogger("vramwise.agent")


def build_agent(
    settings: Settings,
    *,
    force_offline: bool = False,
    chat_model: BaseChatModel | None = None,
    callbacks: Callable[[], list[Any]] | None = None,
) -> Agent:
    """The agent for these settings. `chat_model` injects a chat model (tests: a scripted fake); `callbacks`
    makes each request's LangChain callback handlers for the LLM agent (service/observability/llm.py)."""
    from service.agent.offline import OfflineAgent

    offline = OfflineAgent()
    if force_offline or settings.agent == "offline":
        return offline
    if chat_model is None and not settings.llm_configured:
        if settings.agent == "llm":
            logger.warning("VRAMWISE_AGENT=llm but no OPENAI_API_KEY/OPENAI_BASE_URL is set: offline agent")
        return offline

    from service.agent.llm.agent import LLMAgent
    from service.agent.llm.endpoint import injected, openai_compatible

    factory = injected(chat_model) if chat_model is not None else openai_compatible(settings)
    return LLMAgent(factory, fallback=offline, callbacks=callbacks)
