"""Issue 30, items 4, 5 and 9: `vramwise serve` with a setting it cannot use refuses to start with one line
naming the setting and exit code 2 (it used to start open with `VRAMWISE_API_KEYS=","`, print a 39-448-line
traceback for a bad CORS list or database URL, warn that it "raced another replica" on a read-only file,
and die of SIGBUS on an immutable one)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve_support import refused_start, serve_env


def _one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


@pytest.mark.parametrize("keys", [",", " ", " , ,"])
def test_api_keys_that_hold_no_key_refuse_to_start(tmp_path: Path, keys: str) -> None:
    code, output = refused_start(serve_env(tmp_path / "db.sqlite3", VRAMWISE_API_KEYS=keys))
    assert code == 2
    assert _one_line(output).startswith("serve: VRAMWISE_API_KEYS: holds no key")


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        ("VRAMWISE_CORS_ORIGINS", "[https://a.example", "serve: VRAMWISE_CORS_ORIGINS: not a JSON list"),
        (
            "VRAMWISE_DATABASE_URL",
            "not a url",
            "serve: VRAMWISE_DATABASE_URL: cannot be read as a database URL",
        ),
        ("VRAMWISE_DATABASE_URL", "mysql://u@h/db", "serve: VRAMWISE_DATABASE_URL: the driver mysql+"),
        ("VRAMWISE_MAX_CONNECTIONS", "0", "serve: VRAMWISE_MAX_CONNECTIONS: Input should be greater"),
        ("VRAMWISE_RATE_LIMIT", "lots", "serve: VRAMWISE_RATE_LIMIT: rate limit 'lots' is not understood"),
    ],
)
def test_unreadable_settings_are_one_line(tmp_path: Path, setting: str, value: str, expected: str) -> None:
    code, output = refused_start(serve_env(tmp_path / "db.sqlite3", **{setting: value}))
    assert code == 2
    assert _one_line(output).startswith(expected)


def test_a_missing_database_folder_is_one_line(tmp_path: Path) -> None:
    code, output = refused_start(serve_env(tmp_path / "nowhere" / "db.sqlite3"))
    assert code == 2
    assert "VRAMWISE_DATABASE_URL: the folder of the SQLite file" in _one_line(output)


@contextlib.contextmanager
def _immutable(path: Path) -> Iterator[None]:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this user or file system cannot make a file immutable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_immutable_database_file_is_one_line_not_sigbus(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    db.write_bytes(b"")
    with _immutable(db):
        code, output = refused_start(serve_env(db))
    assert code == 2, output
    assert "VRAMWISE_DATABASE_URL: the SQLite file" in _one_line(output)
    assert "cannot be opened for writing" in output
