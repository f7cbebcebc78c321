"""Checks `vramwise serve` makes before it listens, each answered with one line naming the setting (exit
code 2) instead of a traceback from deep inside the start-up: the settings can be read, the database URL
is one the service can use, an SQLite file can be written (a read-only or immutable file: SQLite maps its
shared-memory file and an immutable one killed the process with SIGBUS), and the store opens."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import SettingsError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from service.settings import Settings

DATABASE_ACCEPTED = (
    "accepted: sqlite+aiosqlite:///path/to/file.sqlite3 or postgresql+asyncpg://user:password@host/db"
)
STORE_OPEN_TIMEOUT_S = 30.0


def settings_problem(exc: ValidationError | SettingsError) -> str:
    """One line for settings that cannot be read, naming the environment variable."""
    if isinstance(exc, SettingsError):
        field = str(exc).split('"')[1] if '"' in str(exc) else "settings"
        return f"VRAMWISE_{field.upper()}: cannot be read ({str(exc).splitlines()[0]})"
    first = exc.errors()[0]
    field = (".".join(map(str, first["loc"])) or "settings").upper()
    named = (
        field if field.startswith(("VRAMWISE_", "OPENAI_", "SLACK_", "DATABASE_")) else f"VRAMWISE_{field}"
    )
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{named}: {message}"


def database_problem(url: str) -> str | None:
    """Why the store at `url` cannot be used, in one line, or None."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"VRAMWISE_DATABASE_URL: cannot be read as a database URL; {DATABASE_ACCEPTED}"
    backend, driver = parsed.get_backend_name(), parsed.get_driver_name()
    if backend not in ("sqlite", "postgresql"):  # the driver itself is tried by the open below
        return f"VRAMWISE_DATABASE_URL: the driver {backend}+{driver} is not supported; {DATABASE_ACCEPTED}"
    if backend == "sqlite" and parsed.database not in (None, "", ":memory:"):
        problem = _sqlite_file_problem(Path(str(parsed.database)))
        if problem:
            return f"VRAMWISE_DATABASE_URL: {problem}"
    try:
        asyncio.run(asyncio.wait_for(_open_and_close(url), STORE_OPEN_TIMEOUT_S))
    except TimeoutError:
        return f"VRAMWISE_DATABASE_URL: the database did not answer within {STORE_OPEN_TIMEOUT_S:.0f} s"
    except Exception as exc:  # any driver's error: one line, no traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return f"VRAMWISE_DATABASE_URL: the store cannot be opened ({first})"
    return None


def _sqlite_file_problem(path: Path) -> str | None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return (
            f"the folder of the SQLite file ({folder}) does not exist; create it or point the URL elsewhere"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable (SQLite keeps its journal beside the file)"
    if path.exists():
        try:
            os.close(os.open(path, os.O_RDWR))
        except OSError as exc:
            return f"the SQLite file {path} cannot be opened for writing ({exc.strerror}; read-only or immutable)"
    return None


async def _open_and_close(url: str) -> None:
    from service.coach.store import CoachStore
    from service.store import ConversationStore

    store, coach = ConversationStore(url), CoachStore(url)
    try:
        await store.open()
        await coach.open()
    finally:
        await coach.close()
        await store.close()


def load_settings(overrides: dict[str, object]) -> tuple[Settings | None, str | None]:
    """The settings, or the one line that says which one cannot be read."""
    try:
        return Settings(**overrides), None
    except (ValidationError, SettingsError) as exc:
        return None, settings_problem(exc)
