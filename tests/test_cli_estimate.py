"""`vramwise estimate`: the real console script in a subprocess, plus its light import path."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main

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


# What `vramwise estimate` must not load (process start to result is a benchmark target, 300 ms): the
# service's frameworks, stores and agents (the agent package's text modules, which fill the JSON's
# English sentences, are light), the Hub client, and -- for a training job -- the serving engines'
# models and the Hub look-up's thread pool.
HEAVY = (
    "torch",
    "transformers",
    "langchain",
    "langchain_core",
    "openai",
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "httpx",
    "huggingface_hub",
    "service.api",
    "service.agent.llm",
    "service.agent.offline",
    "service.agent.factory",
    "service.settings",
    "service.store",
    "difflib",  # near-name suggestions, only for a name the catalog does not know
)
TRAINING_ONLY_SKIPS = ("tools.serving", "concurrent.futures")

# the console script's main() in a fresh interpreter, then what it loaded and how many catalog entries
# it validated
_PROBE = """
import contextlib, io, json, sys
from service.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(sys.argv[1:])
from tools.catalog import models
from tools import result
built = sorted(
    n for n, c in vars(result).items()
    if getattr(c, "__module__", "") == result.__name__ and getattr(c, "__pydantic_complete__", False)
)
print(json.dumps({"rc": rc, "estimate": json.loads(out.getvalue()), "modules": sorted(sys.modules),
                  "validated_models": models._spec.cache_info().currsize, "built_result_models": built}))
"""


def _probe(tmp_path: Path, scenario: dict) -> dict:
    f = tmp_path / "s.json"
    f.write_text(json.dumps(scenario))
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, "estimate", "--scenario", str(f), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_estimate_path_does_not_import_heavy_modules(tmp_path: Path) -> None:
    from service.hub import estimate_any_model
    from tools.scenario import Scenario

    scenario = {
        "model": "llama-3-8b",
        "task": "full_finetune",
        "gpu": "4090",
        "batch_size": 8,
        "seq_len": 4096,
    }
    got = _probe(tmp_path, scenario)
    assert got["rc"] == 0
    # the same Estimate as in-process, planner suggestions included (it does not fit one 4090)
    assert got["estimate"] == json.loads(
        estimate_any_model(Scenario.model_validate(scenario)).model_dump_json()
    )
    assert got["estimate"]["fits"] is False and got["estimate"]["suggestions"]
    assert "tools.planner" in got["modules"] and "pydantic" in got["modules"]
    assert _loaded(got["modules"], HEAVY + TRAINING_ONLY_SKIPS) == []
    assert got["validated_models"] == 1  # the catalog validates the entry it uses, not all of them
    # the result models are made with model_construct: only the Estimate, serialised, builds its schema
    assert got["built_result_models"] == ["Estimate"]


def test_in_process_main_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    """The estimate's collector settings end with it: a caller that goes on running keeps its collector
    (the objects are frozen only when the interpreter exits)."""
    import gc

    f = tmp_path / "s.json"
    f.write_text(json.dumps({"model": "llama-2-7b", "task": "inference", "gpu": "4090"}))
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["estimate", "--scenario", str(f), "--json", "--no-plan"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_import_check_sees_a_loaded_module(tmp_path: Path) -> None:
    got = _probe(tmp_path, {"model": "llama-2-7b", "task": "inference", "gpu": "4090", "engine": "vllm"})
    assert got["estimate"]["per_gpu"]["peak_phase"] == "serving"
    assert _loaded(got["modules"], HEAVY + TRAINING_ONLY_SKIPS) == ["tools.serving"]
