"""A scripted fake chat model whose tool calls go through the real agent code.

`GenericFakeChatModel` has no `bind_tools` and its streaming drops tool calls (STACK.md); this
one returns itself from `bind_tools` and streams text word by word and tool calls as
`tool_call_chunks` (arguments split across chunks, like a real endpoint), so `create_agent`,
the ToolNode, the tools and the estimator all run for real.

A script step is one of:
- `say("text")`: a text answer (streamed in small chunks);
- `call("tool", {...args...})` / `call_raw("tool", '{"broken json')`: a tool call;
- a callable `(messages) -> step` deciding from what the model was sent (follow-ups);
- an Exception instance: raised as if the endpoint failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field


class Step:
    def __init__(self, text: str = "", tool_calls: list[tuple[str, str]] | None = None) -> None:
        self.text = text
        self.tool_calls = tool_calls or []  # (name, raw JSON arguments)


def say(text: str) -> Step:
    return Step(text=text)


def call(tool: str, args: dict[str, Any], *, text: str = "") -> Step:
    return Step(text=text, tool_calls=[(tool, json.dumps(args, ensure_ascii=False))])


def call_raw(tool: str, raw_args: str) -> Step:
    return Step(tool_calls=[(tool, raw_args)])


_WORDS = re.compile(r"\S+\s*|\s+")


def _pieces(text: str) -> list[str]:
    """Small chunks, like a real token stream: a word (with its trailing space) at a time."""
    return _WORDS.findall(text)


class ScriptedChatModel(BaseChatModel):
    """Plays `script` one step per model call; records every call's messages in `calls`."""

    script: list[Any] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)
    position: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound_tools = list(tools)
        return self

    # ---- script ------------------------------------------------------------------------------

    def _next_step(self, messages: list[BaseMessage]) -> Step:
        self.calls.append(list(messages))
        if self.position >= len(self.script):
            raise AssertionError(f"script exhausted after {self.position} model calls")
        step = self.script[self.position]
        self.position += 1
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, Step):
            step = step(messages)
        assert isinstance(step, Step), step
        return step

    def _chunks(self, step: Step) -> Iterator[AIMessageChunk]:
        msg_id = f"fake-{self.position}"
        for piece in _pieces(step.text):
            yield AIMessageChunk(content=piece, id=msg_id)
        for index, (name, raw) in enumerate(step.tool_calls):
            call_id = f"call_{self.position}_{index}"
            half = len(raw) // 2  # arguments arrive in two deltas, like a real stream
            yield AIMessageChunk(
                content="",
                id=msg_id,
                tool_call_chunks=[{"name": name, "args": raw[:half], "id": call_id, "index": index}],
            )
            yield AIMessageChunk(
                content="",
                id=msg_id,
                tool_call_chunks=[{"name": None, "args": raw[half:], "id": None, "index": index}],
            )
        if not step.text and not step.tool_calls:
            yield AIMessageChunk(content="", id=msg_id)

    # ---- BaseChatModel ------------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        merged: AIMessageChunk | None = None
        for chunk in self._chunks(self._next_step(messages)):
            merged = chunk if merged is None else merged + chunk
        assert merged is not None
        message = AIMessage(
            content=merged.content,
            id=merged.id,
            tool_calls=merged.tool_calls,
            invalid_tool_calls=merged.invalid_tool_calls,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._next_step(messages)):
            gen = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                run_manager.on_llm_new_token(chunk.content, chunk=gen)
            yield gen

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._next_step(messages)):
            gen = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                await run_manager.on_llm_new_token(chunk.content, chunk=gen)
            yield gen


def scripted(*steps: Step | BaseException | Callable[[list[BaseMessage]], Step]) -> ScriptedChatModel:
    return ScriptedChatModel(script=list(steps))


def last_tool_output(messages: list[BaseMessage]) -> dict[str, Any]:
    """The JSON the last tool returned, as the model saw it (for scripts that quote the tool)."""
    for message in reversed(messages):
        if message.type == "tool":
            return json.loads(str(message.content))
    raise AssertionError("no tool message in the conversation")
