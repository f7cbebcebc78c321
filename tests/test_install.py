"""The package as a user installs it: a wheel, and the Docker image's `pip install`, outside the checkout.

Three installs, each into a fresh virtual environment, each run from a folder outside the source tree:

- the wheel (`pip wheel .`), which is what `pip install vramwise` gives;
- the Docker image's content: the files the Dockerfile's `COPY` lines name, copied into a bare build
  context, then the Dockerfile's own `pip install` command run on it (no Docker engine here, so the
  image's filesystem is rebuilt the way its `RUN` line builds it);
- an editable install of a copy of the checkout (`pip install -e .`, what `make install` runs): a path
  entry with the packages' bytecode written by the build.

The project's dependencies come from the test environment (a `.pth` line onto its site-packages, which
does not process that folder's own `.pth` files, so the editable checkout never leaks in); only the
package under test is installed fresh. Each of the first two then answers a question in English and
Chinese, runs an estimate, and serves one `/v1/chat` stream on loopback; the editable one runs an estimate.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import site
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
PACKAGES = ("tools", "service", "prompts")
QUESTION_EN = "Can I fully fine-tune Llama-3-8B on one A100?"
QUESTION_ZH = "一张4090能用QLoRA微调Qwen2.5-14B吗?"

pytestmark = pytest.mark.slow


def _runtime_files() -> set[str]:
    """Every non-Python file the packages carry in the source tree (what the program reads at run time)."""
    tracked = subprocess.run(
        ["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {f for f in tracked if not f.endswith(".py") and "/__pycache__/" not in f}


def _clean_env(venv: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VRAMWISE_", "OPENAI_", "PYTHON", "VIRTUAL_ENV", "DATABASE_URL"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VRAMWISE_AGENT"] = "offline"
    env["VRAMWISE_AGENT_PROCESSES"] = "0"
    return env


def _fresh_venv(where: Path) -> Path:
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # dependencies from the test environment, after the fresh site-packages on sys.path
    (purelib / "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


def _pip(venv: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    # the test environment's pip, installing into the fresh venv's prefix
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _run(venv: Path, cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "vramwise"), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=_clean_env(venv),
        timeout=180,
        check=False,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tools_file(venv: Path, cwd: Path, imports: str = "tools") -> str:
    """Where the venv's python, run in `cwd`, imports `tools` from (after `import {imports}`)."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {imports}; print(tools.__file__)"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_clean_env(venv),
        check=True,
    ).stdout.strip()


def _check_installed(venv: Path, cwd: Path) -> None:
    """The installed package (not the checkout) answers, estimates and serves."""
    where = _tools_file(venv, cwd, "tools, service, prompts")
    assert str(venv) in where and str(ROOT) not in where, where

    en = _run(venv, cwd, "ask", QUESTION_EN, "--json")
    assert en.returncode == 0, en.stderr[-3000:]
    answer = json.loads(en.stdout)
    assert answer["language"] == "en" and answer["estimate"]["per_gpu"]["total_bytes"] > 0
    assert "GiB" in answer["answer"]

    zh = _run(venv, cwd, "ask", QUESTION_ZH)
    assert zh.returncode == 0, zh.stderr[-3000:]
    assert "GiB" in zh.stdout and re.search(r"[\u4e00-\u9fff]", zh.stdout)

    scenario = {"model": "llama-2-7b", "task": "inference", "gpu": "4090", "batch_size": 1, "seq_len": 4096}
    est = _run(venv, cwd, "estimate", "--scenario", "-", "--json", stdin=json.dumps(scenario))
    assert est.returncode == 0, est.stderr[-3000:]
    estimate = json.loads(est.stdout)
    weights = next(c for c in estimate["components"] if c["name"] == "weights")
    assert weights["bytes"] == 6_738_415_616 * 2  # Llama-2-7B's exact parameter count, fp16

    port = _free_port()
    env = {**_clean_env(venv), "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{cwd / 'store.sqlite3'}"}
    server = subprocess.Popen(
        [str(venv / "bin" / "vramwise"), "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, server.stderr.read()[-3000:] if server.stderr else ""
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.2)
        req = urllib.request.Request(
            f"{base}/v1/chat",
            data=json.dumps({"message": QUESTION_EN}).encode(),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read().decode()
        events = re.findall(r"^event: (\w+)", body, flags=re.M)
        assert events[0] == "meta" and events[-1] == "done", events
        assert "token" in events and "estimate" in events
        with urllib.request.urlopen(f"{base}/", timeout=10) as r:  # the web page's assets shipped too
            assert b"<html" in r.read().lower()
    finally:
        server.terminate()
        server.wait(timeout=20)


def _source_copy(where: Path) -> Path:
    """The files git knows (tracked, or new and not ignored), as a clean checkout has them: an in-tree
    build would leave build/ behind, whose stale copies could hide a file missing from the package data."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    src = where / "src"
    for name in files:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    return src


def test_wheel_ships_every_runtime_file_and_answers(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    source = _source_copy(tmp_path)
    _pip_wheel = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert _pip_wheel.returncode == 0, _pip_wheel.stdout[-3000:] + _pip_wheel.stderr[-3000:]
    (wheel,) = dist.glob("vramwise-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_runtime_files() - shipped)
    assert not missing, f"files the program reads at run time but the wheel leaves out: {missing}"

    venv = _fresh_venv(tmp_path)
    _pip(venv, "install", "--no-deps", "--no-compile", str(wheel), cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _check_installed(venv, elsewhere)


def _dockerfile_copies() -> list[tuple[str, str]]:
    copies = []
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            *sources, dest = shlex.split(line)[1:]
            copies.extend((s, dest) for s in sources)
    return copies


def _dockerfile_pip_install() -> list[str]:
    (run,) = [
        line.removeprefix("RUN ").strip()
        for line in DOCKERFILE.read_text().splitlines()
        if line.startswith("RUN pip install")
    ]
    return shlex.split(run)[2:]  # after "pip install"


def test_docker_image_content_answers(tmp_path: Path) -> None:
    """The image's /app as the Dockerfile builds it, installed the way its RUN line installs it."""
    app = tmp_path / "app"
    app.mkdir()
    copies = _dockerfile_copies()
    assert copies, "the Dockerfile copies nothing"
    for source, dest in copies:
        src = ROOT / source
        into_folder = dest.endswith("/") or dest == "."
        target = app / src.name if into_folder else app / dest.removeprefix("./")
        if src.is_dir():
            shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, target)
    args = _dockerfile_pip_install()
    assert args and args[-1].startswith("."), args
    # The Dockerfile installs with its extras from the index; here the dependencies come from the test
    # environment, so only the package itself is built and installed, from the same build context.
    venv = _fresh_venv(tmp_path)
    _pip(venv, "install", "--no-deps", "--no-build-isolation", "--no-compile", ".", cwd=app)
    data = tmp_path / "data"  # the image's WORKDIR /data, outside the installed tree
    data.mkdir()
    _check_installed(venv, data)


def test_editable_install_is_a_path_entry_with_bytecode(tmp_path: Path) -> None:
    """`pip install -e .` as a developer runs it where PYTHONDONTWRITEBYTECODE is set: the checkout is a
    plain sys.path entry (no import-hook finder imported at every interpreter start) and every module of
    the packages has the bytecode the build wrote (build_hooks.py), so no process compiles them."""
    source = _source_copy(tmp_path)
    venv = _fresh_venv(tmp_path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    _pip(venv, "install", "--no-deps", "--no-build-isolation", "-e", str(source), cwd=tmp_path, env=env)
    (purelib,) = (venv / "lib").glob("python*/site-packages")
    (pth,) = purelib.glob("__editable__*.pth")
    assert pth.read_text().strip() == str(source)
    assert not list(purelib.glob("__editable__*finder*.py"))
    modules = [m for package in PACKAGES for m in (source / package).rglob("*.py")]
    assert len(modules) > 100
    uncompiled = [str(m) for m in modules if not Path(importlib.util.cache_from_source(str(m))).is_file()]
    assert not uncompiled, uncompiled[:5]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    scenario = {"model": "llama-2-7b", "task": "inference", "gpu": "4090", "kv_dtype": "fp16"}
    est = _run(
        venv, elsewhere, "estimate", "--scenario", "-", "--json", "--no-plan", stdin=json.dumps(scenario)
    )
    assert est.returncode == 0, est.stderr[-3000:]
    assert json.loads(est.stdout)["serving"]["kv_bytes_per_token"] == 524_288
    assert _tools_file(venv, elsewhere) == str(source / "tools" / "__init__.py")
