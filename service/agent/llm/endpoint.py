"""The chat model for an OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen/DashScope, vLLM, Ollama).

Only settings differ between providers: base URL, key, model name. Each request gets a fresh
ChatOpenAI with its own HTTP clients, closed after the request: langchain-openai otherwise caches
one async client per base URL, which breaks across event loops ("Event loop is closed").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import openai
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI

from service.agent.llm.wire import NormalisingTransport
from service.settings import Settings

# local servers (vLLM, Ollama) accept any key, but the SDK refuses to start without one
_PLACEHOLDER_KEY = "not-needed"


@dataclass
class ChatModelHandle:
    """A chat model for one request, and how to release what it holds."""

    model: BaseChatModel
    aclose: Callable[[], Awaitable[None]]


async def _nothing_to_close() -> None:
    return None


def injected(model: BaseChatModel) -> Callable[[], ChatModelHandle]:
    """A factory that hands out an injected model (tests, custom integrations)."""
    return lambda: ChatModelHandle(model=model, aclose=_nothing_to_close)


def openai_compatible(settings: Settings) -> Callable[[], ChatModelHandle]:
    """A factory of per-request ChatOpenAI models for the configured endpoint."""

    def make() -> ChatModelHandle:
        # one transport per request: the dialects of compatible servers, one retry, an overall deadline
        transport = NormalisingTransport(settings.llm_timeout_s)
        async_client = openai.DefaultAsyncHttpxClient(timeout=settings.llm_timeout_s, transport=transport)
        sync_client = openai.DefaultHttpxClient(timeout=settings.llm_timeout_s)
        model = ChatOpenAI(
            model=settings.llm_model,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key or _PLACEHOLDER_KEY,
            temperature=settings.llm_temperature,
            streaming=True,
            use_responses_api=False,  # /chat/completions: the one API every compatible endpoint serves
            max_retries=0,  # the transport retries once within the deadline; then the offline agent
            timeout=settings.llm_timeout_s,
            http_async_client=async_client,
            http_client=sync_client,
        )

        async def aclose() -> None:
            await async_client.aclose()
            sync_client.close()

        return ChatModelHandle(model=model, aclose=aclose)

    return make
