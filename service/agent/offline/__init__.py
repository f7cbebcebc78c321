"""The offline agent: a deterministic English/Chinese parser plus templated, cited answers.

It is the embedded default when no LLM endpoint is configured, and the LLM agent's fallback.
`from service.agent.offline import OfflineAgent` (imported lazily so the parser loads alone).
"""

from __future__ import annotations

from typing import Any

__all__ = ["OfflineAgent"]


def __getattr__(name: str) -> Any:
    if name == "OfflineAgent":
        from service.agent.offline.agent import OfflineAgent

        return OfflineAgent
    raise AttributeError(name)
