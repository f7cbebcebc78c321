"""The `usage` of an OpenAI-compatible chat completion, counted honestly: in Unicode characters (code points)
of the messages sent and of the answer, not in tokens. The offline agent has no tokenizer, and an LLM's own
token counts cover its system prompt and tool calls, not this exchange; `unit` says which count it is
(docs/reference.md, "OpenAI-compatible usage")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field


class Usage(BaseModel):
    """OpenAI's field names (SDKs read them); the values are characters, as `unit` states."""

    prompt_tokens: int = Field(ge=0, description="characters of the request's messages (all roles)")
    completion_tokens: int = Field(ge=0, description="characters of the answer")
    total_tokens: int = Field(ge=0, description="prompt_tokens + completion_tokens")
    unit: Literal["characters"] = Field(default="characters", description="what the counts count (VRAMwise)")


class StreamOptions(BaseModel):
    include_usage: bool = Field(default=False, description="a last chunk with `usage` and no choices")


def usage_of(prompts: Iterable[str], answer: str) -> Usage:
    prompt = sum(len(text) for text in prompts)
    return Usage(prompt_tokens=prompt, completion_tokens=len(answer), total_tokens=prompt + len(answer))
