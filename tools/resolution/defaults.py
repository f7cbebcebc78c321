"""What the resolve stages fill: the changed fields, one Assumption per default, and the notes."""

from __future__ import annotations

from typing import Any

from tools.assumptions import Said, made
from tools.notes import Note, note
from tools.result import Assumption

DEFAULT_GPU = "a100-80gb"
DEFAULT_SAFETY_MARGIN = 0.10
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vllm/config/cache.py CacheConfig.gpu_memory_utilization
MAX_TOKENS_PER_MICROBATCH = 1 << 31  # beyond this no real job fits anywhere: treat as a typo


class Filled:
    """Collects filled fields and their assumptions (as records: tools/assumptions.py `Said`), and the notes
    (warnings that do not stop the estimate)."""

    def __init__(self) -> None:
        self.changes: dict[str, Any] = {}
        self.said: list[Said] = []
        self.notes: list[Note] = []

    def fill(self, name: str, value: Any, code: str, /, **values: object) -> Any:
        """Set `name` = `value`, recorded as an assumption said by `code` (tools/assumptions.py)."""
        self.changes[name] = value
        self.said.append((name, value, code, values))
        return value

    def assume(self, name: str, value: object, code: str, /, **values: object) -> None:
        """Record an assumption about `name` that sets no field (how a name was read, image tokens)."""
        self.said.append((name, value, code, values))

    @property
    def assumptions(self) -> list[Assumption]:
        """The recorded assumptions as Assumption objects (made on each call)."""
        return made(self.said)

    def note(self, code: str, /, **values: object) -> None:
        self.notes.append(note(code, **values))
