"""What runs after each model step: tool calls that were cut off never reach the estimator.

A tool call's arguments are cut off when the reply ended on `finish_reason: "length"` (the
token limit), when the stream ended before its finish chunk (a ChatOpenAI reply always records
one), or when they are not JSON at all. LangChain's partial-JSON parser repairs a cut-off
`{"model": "llama-2-7b", "ta` into `{"model": "llama-2-7b"}`, a valid call for another job, so
such calls are moved to `invalid_tool_calls` (create_agent answers each with an "arguments were
malformed or truncated" tool message, langchain/agents/factory.py `_patch_invalid_tool_calls`)
and the model is asked again, once. A second cut-off ends the run with ToolCallCutOff: the
offline agent answers, after a notice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.messages import AIMessage, ToolMessage

from service.agent.llm.tools import ToolRecorder

CUT_OFF_RETRIES = 1  # the model is asked again once, then the offline parser answers
_COMPLETE = frozenset({"tool_calls", "stop", "function_call", "end_turn", "tool_use"})
_TRUNCATED = frozenset({"length", "max_tokens"})


class ToolCallCutOff(RuntimeError):
    """The model's tool-call arguments were cut off again after one more try."""


def cut_off(message: AIMessage) -> bool:
    """Whether the tool calls of `message` may be incomplete (see the module docstring)."""
    if not message.tool_calls and not message.invalid_tool_calls:
        return False
    if message.invalid_tool_calls:
        return True
    meta = message.response_metadata or {}
    finish = meta.get("finish_reason") or meta.get("stop_reason")
    if finish in _TRUNCATED:
        return True
    # a streamed ChatOpenAI reply records the finish chunk's reason; none: the stream stopped early
    return finish not in _COMPLETE and meta.get("model_provider") == "openai"


def _as_invalid(message: AIMessage) -> AIMessage:
    """`message` with its tool calls moved to `invalid_tool_calls`: none of them will run."""
    invalid = list(message.invalid_tool_calls)
    for call in message.tool_calls:
        invalid.append(
            {
                "type": "invalid_tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "args": json.dumps(call.get("args") or {}, ensure_ascii=False),
                "error": "cut off",
            }
        )
    return AIMessage(
        content=message.content,
        id=message.id,
        response_metadata=message.response_metadata,
        tool_calls=[],
        invalid_tool_calls=invalid,
    )


class ToolGuard(AgentMiddleware):
    """Counts failed tool calls per request and keeps cut-off calls from running.

    A model that cannot fix its arguments after 2 corrections raises ToolArgumentsExhausted (from
    the recorder); one whose arguments are cut off twice raises ToolCallCutOff. Either ends the
    run and sends the question to the offline agent.
    """

    def __init__(self, recorder: ToolRecorder) -> None:
        super().__init__()
        self.recorder = recorder
        self.cut_offs = 0

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1] if state["messages"] else None
        if not isinstance(last, AIMessage) or not cut_off(last):
            return None
        self.cut_offs += 1
        if self.cut_offs > CUT_OFF_RETRIES:
            raise ToolCallCutOff(f"tool-call arguments cut off {self.cut_offs} times")
        self.recorder.note_result(False, "tool-call arguments cut off or malformed")
        return {"jump_to": "model", "messages": [_as_invalid(last)]}

    async def awrap_tool_call(self, request: Any, handler: Callable[..., Any]) -> Any:
        result = await handler(request)
        if isinstance(result, ToolMessage):
            self.recorder.note_result(result.status != "error", str(result.content))
        return result
