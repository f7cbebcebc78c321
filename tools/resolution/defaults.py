"""What the resolve stages fill: the changed fields, one Assumption per default, and the notes."""

from __future__ import annotations

from typing import Any

from tools.assumptions import assumption
from tools.notes import Note, note
from tools.result import Assumption

DEFAULT_GPU = "a100-80gb"
DEFAULT_SAFETY_MARGIN = 0.10
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vllm/config/cache.py CacheConfig.gpu_memory_utilization
MAX_TOKENS_PER_MICROBATCH = 1 << 31  # beyond this no real job fits anywhere: treat as a typo


class Filled:
    """Collects filled fields and their assumptions, and the notes (warnings that do not stop the estimate)."""

    def __init__(self) -> None:
        self.changes: dict[str, Any] = {}
        self.assumptions: list[Assumption] = []
        self.notes: list[Note] = []

    def fill(self, name: str, value: Any, code: str, /, **values: object) -> Any:
        """Set `name` = `value`, recorded as an assumption said by `code` (tools/assumptions.py)."""
        self.changes[name] = value
        self.assumptions.append(assumption(name, value, code, **values))
        return value

    def note(self, code: str, /, **values: object) -> None:
        self.notes.append(note(code, **values))
