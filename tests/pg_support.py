"""A real, throwaway PostgreSQL server on 127.0.0.1 for the tests (Debian's `postgresql` package).

`postgres_server` (session-scoped) runs `initdb` into a temp dir, starts the server with `pg_ctl` on a
free loopback port (unix socket inside the temp dir, password auth over TCP), and stops and removes it
at the end. Tests ask it for fresh databases (`new_database()` -> a `postgresql+asyncpg://` URL) and may
stop/start it (readiness while the database is down). PostgreSQL refuses to run as root: as root the
server binaries run as the `postgres` OS user (`runuser`). When the binaries are missing the tests skip
and name the package to install.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL_HINT = (
    "apt-get install -y postgresql (Debian/Ubuntu: the server binaries in /usr/lib/postgresql/*/bin)"
)
BIN_GLOB = "/usr/lib/postgresql/*/bin"
NEEDED = ("initdb", "pg_ctl", "postgres", "createdb")
SUPERUSER = "vramwise"
START_TIMEOUT_S = 60
# throwaway cluster: durability settings off (postgresql.org/docs/current/non-durability.html)
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    "-c max_connections=60 -c shared_buffers=16MB -c dynamic_shared_memory_type=mmap"
)


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin dir that has every binary we need, or None."""
    candidates = []
    for d in glob.glob(BIN_GLOB):
        path = Path(d)
        if all((path / name).is_file() for name in NEEDED):
            try:
                major = int(path.parent.name)
            except ValueError:
                major = 0
            candidates.append((major, path))
    return max(candidates)[1] if candidates else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One initdb'd cluster in `root`; `start()`/`stop()` may be called again (the data stays)."""

    def __init__(self, bin_dir: Path, root: Path, run_as: str | None) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.log = root / "server.log"
        self.run_as = run_as
        self.password = secrets.token_urlsafe(16)
        self.port = 0
        self._databases = 0

    # ---- running the server binaries (as `postgres` when we are root) ------------------------------
    def _run(
        self, name: str, *args: str, timeout: float = START_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / name), *args]
        if self.run_as is not None:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            log_tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr.strip()}\n{log_tail}")
        return done

    def init(self) -> None:
        self.sockets.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.run_as is not None:
            user = pwd.getpwnam(self.run_as)
            for p in (self.root, self.sockets, pwfile):
                os.chown(p, user.pw_uid, user.pw_gid)
        pwfile.chmod(0o600)
        self._run(
            "initdb",
            "-D", str(self.data),
            "-U", SUPERUSER,
            "--pwfile", str(pwfile),
            "--auth-local=trust",  # the socket lives in our 0700 temp dir
            "--auth-host=scram-sha-256",  # TCP clients (the service under test) need the password
            "-E", "UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip
        pwfile.unlink()

    def start(self) -> None:
        """Start on a free port the first time; on the same port after a `stop()` (URLs stay valid)."""
        restart = self.port != 0
        last: Exception | None = None
        for _ in range(1 if restart else 3):  # a probed free port may be taken before the server binds it
            if not restart:
                self.port = free_port()
            options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} {SERVER_OPTIONS}"
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT_S),
                    "-o", options, "start",
                )  # fmt: skip
                return
            except RuntimeError as exc:
                last = exc
        raise RuntimeError(f"PostgreSQL did not start: {last}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def is_running(self) -> bool:
        cmd = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"]
        if self.run_as is not None:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0

    def new_database(self) -> str:
        """A fresh, empty database; returns its SQLAlchemy async URL (asyncpg over TCP)."""
        self._databases += 1
        name = f"vramwise_test_{self._databases}"
        self._run("createdb", "-h", str(self.sockets), "-p", str(self.port), "-U", SUPERUSER, name)
        return self.url(name)

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running throwaway PostgreSQL on 127.0.0.1 (skips when the server is not installed)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(f"PostgreSQL server binaries not found ({BIN_GLOB}/initdb); install: {INSTALL_HINT}")
    run_as: str | None = None
    if os.geteuid() == 0:  # "initdb: cannot be run as root"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip(
                f"running as root and there is no 'postgres' OS user to run the server; {INSTALL_HINT}"
            )
        if shutil.which("runuser") is None:
            pytest.skip("running as root without `runuser` to start PostgreSQL as the 'postgres' user")
        run_as = "postgres"
    root = Path(tempfile.mkdtemp(prefix="vramwise-pg-"))
    server = PostgresServer(bin_dir, root, run_as)
    try:
        server.init()
        server.start()
        yield server
    finally:
        if server.is_running():
            with contextlib.suppress(RuntimeError):
                server._run("pg_ctl", "-D", str(server.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
