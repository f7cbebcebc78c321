"""`vramwise estimate`: the real console script in a subprocess, plus its light import path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VRAMWISE = shutil.which("vramwise") or str(Path(sys.executable).with_name("vramwise"))


def run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [VRAMWISE, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_json_output_from_file(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"model": "llama-2-7b", "task": "inference", "gpu": "4090", "kv_dtype": "fp16"}))
    r = run(["estimate", "--scenario", str(f), "--json", "--no-plan"])
    assert r.returncode == 0, r.stderr
    est = json.loads(r.stdout)
    weights = next(c for c in est["components"] if c["name"] == "weights")
    assert weights["bytes"] == 13_476_831_232
    assert est["per_gpu"]["total_bytes"] == sum(c["bytes"] for c in est["components"])
    assert est["gpu"]["memory_bytes"] > 0 and est["serving"]["kv_bytes_per_token"] == 524_288


def test_table_from_stdin_in_gib() -> None:
    r = run(["estimate", "--scenario", "-"], stdin='{"model": "llama-2-7b", "task": "qlora", "gpu": "4090"}')
    assert r.returncode == 0, r.stderr
    assert "GiB" in r.stdout and "FITS" in r.stdout and "quant_metadata" in r.stdout
    assert "assumptions:" in r.stdout


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ('{"model": "llama-2-7b",', "scenario"),  # bad JSON
        ('{"model": "llama-2-7b", "batchsize": 4}', "batchsize"),  # unknown field
        ('{"model": "llama-2-7b", "batch_size": -4}', "batch_size"),  # pydantic range
        ('{"model": "llama-2-7b", "task": "sft"}', "task"),  # not a literal
        ('{"model": "llama-2-7b", "tp": 3, "num_gpus": 3}', "tp"),  # ScenarioError
        ('{"model": "llama-2-7b", "task": "inference", "lora_rank": 8}', "lora_rank"),
        ('{"model": "no-such-model-xyz"}', "model"),
        ('{"model": "llama-2-7b", "gpu": "no-such-gpu"}', "gpu"),
        ("[1, 2]", "scenario"),
    ],
)
def test_bad_input_exit_2_one_line_naming_the_field(payload: str, field: str) -> None:
    r = run(["estimate", "--scenario", "-", "--no-plan"], stdin=payload)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(field), lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_missing_file_exit_2() -> None:
    r = run(["estimate", "--scenario", "/nonexistent/scenario.json"])
    assert r.returncode == 2 and r.stderr.startswith("scenario:")


def test_estimate_path_does_not_import_heavy_frameworks(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text('{"model": "llama-2-7b", "task": "lora", "gpu": "4090"}')
    code = (
        "import sys, io, contextlib\n"
        "from service.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    rc = main(['estimate', '--scenario', {str(f)!r}])\n"
        "heavy = [m for m in ('torch', 'langchain', 'langchain_core', 'fastapi', 'uvicorn', 'openai') if m in sys.modules]\n"
        "print(rc, heavy)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert r.stdout.strip() == "0 []", r.stdout + r.stderr
