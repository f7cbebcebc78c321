"""Resolved Hub look-ups, kept so that an `org/name` costs the Hub a request once per TTL, and bounded so
that a Hub that does not answer cannot slow other requests.

- Kept: a resolved repo (its config.json, its safetensors counts per dtype and the commit) in memory and on
  disk beside the Hub cache (`<HF_HUB_CACHE>/vramwise-resolved/<org>--<name>.json`), for
  `VRAMWISE_HUB_CACHE_TTL_S` (default one day; 0 = not kept). Each estimate naming a repo made 4-5 Hub
  requests, cached names included (huggingface_hub revalidates every file with a HEAD).
- Bounded: at most `VRAMWISE_HUB_MAX_LOOKUPS` look-ups at once (default 4) in each serving process; one
  more is refused at once (it waits at most BUSY_WAIT_S) with a clear error (hub_busy). A look-up's
  thread holds its slot until it really ends (even after its caller stopped waiting), so a Hub that never
  answers strands at most that many threads (it stranded ~32 and delayed ordinary estimates by 9.6 s).

The memory side is one `ResolvedRepos` per process (`RESOLVED`): the offline agent's worker processes
each keep their own, and the disk side is shared by all of them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 86_400.0
DEFAULT_MAX_LOOKUPS = 4
BUSY_WAIT_S = 0.05  # a look-up beyond the slots is refused at once: it must not hold a request thread
MEMORY_ENTRIES = 512  # repos kept in memory (the oldest look-up is dropped beyond it)


@dataclass(frozen=True)
class Resolved:
    """What a look-up found, enough to rebuild the model without the Hub."""

    revision: str | None
    config: dict[str, Any]
    params_by_dtype: dict[str, int]
    fetched_at: float


def _disk_path(cache_dir: Path, repo_id: str) -> Path:
    return cache_dir / "vramwise-resolved" / (repo_id.replace("/", "--") + ".json")


@dataclass
class ResolvedRepos:
    """Resolved repos in memory (per process) and on disk, and the slots of the look-ups in flight."""

    max_lookups: int = DEFAULT_MAX_LOOKUPS
    _memory: dict[tuple[str, str, str], Resolved] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.BoundedSemaphore | None = None

    def get(self, endpoint: str, cache_dir: Path, repo_id: str, ttl_s: float) -> Resolved | None:
        """A resolved repo younger than `ttl_s`: from memory, else from disk (then kept in memory)."""
        if ttl_s <= 0:
            return None
        key = (endpoint, str(cache_dir), repo_id)
        now = time.time()
        with self._lock:
            found = self._memory.get(key)
        if found is not None and now - found.fetched_at < ttl_s:
            return found
        try:
            raw = json.loads(_disk_path(cache_dir, repo_id).read_text(encoding="utf-8"))
            if raw.get("endpoint") != endpoint or not isinstance(raw.get("config"), dict):
                return None
            found = Resolved(
                revision=raw.get("revision"),
                config=raw["config"],
                params_by_dtype={str(k): int(v) for k, v in (raw.get("params_by_dtype") or {}).items()},
                fetched_at=float(raw["fetched_at"]),
            )
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            return None
        if now - found.fetched_at >= ttl_s:
            return None
        self._remember(key, found)
        return found

    def put(self, endpoint: str, cache_dir: Path, repo_id: str, resolved: Resolved) -> None:
        self._remember((endpoint, str(cache_dir), repo_id), resolved)
        path = _disk_path(cache_dir, repo_id)
        body = {
            "endpoint": endpoint,
            "revision": resolved.revision,
            "config": resolved.config,
            "params_by_dtype": resolved.params_by_dtype,
            "fetched_at": resolved.fetched_at,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{threading.get_ident()}.tmp")
            partial.write_text(json.dumps(body), encoding="utf-8")
            partial.replace(path)  # atomic: another process never reads half a file
        except OSError as exc:
            log.warning("could not keep the Hub look-up of %s on disk: %s", repo_id, exc.strerror)

    def _remember(self, key: tuple[str, str, str], resolved: Resolved) -> None:
        with self._lock:
            self._memory.pop(key, None)
            self._memory[key] = resolved
            while len(self._memory) > MEMORY_ENTRIES:
                self._memory.pop(next(iter(self._memory)))

    def slot(self, max_lookups: int) -> threading.BoundedSemaphore | None:
        """One look-up slot (waiting at most BUSY_WAIT_S), to be released by the look-up; None when busy."""
        with self._lock:
            if self._slots is None or self.max_lookups != max_lookups:
                self.max_lookups = max_lookups
                self._slots = threading.BoundedSemaphore(max_lookups)
            slots = self._slots
        return slots if slots.acquire(timeout=BUSY_WAIT_S) else None


RESOLVED = ResolvedRepos()
