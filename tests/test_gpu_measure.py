"""benchmarks/gpu_measure.py without a GPU: the dry run (cases + estimates, no torch), the skip rules,
the output files, and the real training/LoRA/inference programs on CPU with a tiny architecture."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="gpu_measure's programs need the [trace] extra")

from benchmarks import gpu_measure
from benchmarks.gpu_measure import COLUMNS, Case, plan_cases, run, write_outputs
from tools.scenario import Scenario
from tools.units import GiB

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
}


def _tiny(case_id: str, **fields: object) -> Case:
    base = {"architecture": TINY, "gpu": "h200", "num_gpus": 1, "batch_size": 2, "seq_len": 32}
    return Case(case_id, Scenario.model_validate({**base, **fields}))


def test_dry_run_lists_every_case_with_estimates_and_never_imports_torch(tmp_path: Path) -> None:
    out = tmp_path / "cases.csv"
    code = (
        "import sys; from benchmarks.gpu_measure import main; "
        f"rc = main(['--dry-run', '--out', {str(out)!r}]); "
        "assert 'torch' not in sys.modules, 'the dry run imported torch'; sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["case_id"] for r in rows] == [c.case_id for c in gpu_measure.default_cases()]
    assert tuple(rows[0]) == COLUMNS
    dry = [r for r in rows if r["status"] == "dry-run"]
    assert len(dry) >= 10
    for r in dry:
        assert int(r["est_tensor_peak_bytes"]) > 0
        assert int(r["est_total_bytes"]) >= int(r["est_tensor_peak_bytes"])
        assert r["allocated_peak_bytes"] == "" and r["nvml_peak_bytes"] == ""
    assert out.with_suffix(".md").read_text().startswith("# GPU memory: measured vs estimated")
    assert "| case | status |" in proc.stdout


def test_cases_the_card_cannot_take_are_skipped_with_the_reason() -> None:
    cases = [
        _tiny("two-gpus", task="full_finetune", precision_recipe="bf16", num_gpus=2, zero_stage=3),
        _tiny("qlora", task="qlora", lora_rank=8),
        _tiny("sgd", task="full_finetune", precision_recipe="bf16", optimizer="sgd"),
        _tiny("fits", task="full_finetune", precision_recipe="bf16"),
        Case(
            "llama-70b-full",
            Scenario(model="llama-3.1-70b", task="full_finetune", gpu="h200", batch_size=1, seq_len=1024),
        ),
    ]
    planned = {
        case.case_id: final for case, _est, _plan, final in plan_cases(cases, card_bytes=int(141 * GiB))
    }
    assert planned["two-gpus"].reason.startswith("not run on one card: num_gpus:")
    assert planned["qlora"].reason.startswith("not run on one card: task: qlora cannot be traced")
    assert planned["sgd"].reason.startswith("not run on one card: optimizer:")
    assert planned["fits"] is None  # it will run
    assert planned["llama-70b-full"].status == "skipped"
    assert "does not fit this card (141.0 GiB)" in planned["llama-70b-full"].reason


def test_time_budget_skips_cases_not_started(tmp_path: Path) -> None:
    results, env = run(
        [_tiny("tiny-full", task="full_finetune", precision_recipe="bf16")],
        dry_run=False,
        max_minutes=0,
        device="cpu",
    )
    assert env["mode"] == "cpu"
    assert [(m.status, m.reason) for m in results] == [("skipped", "--max-minutes 0 reached")]


def test_programs_run_for_real_on_cpu_and_outputs_are_written(tmp_path: Path) -> None:
    """The exact code the GPU run executes (build, LoRA, training steps, generation), on CPU tensors."""
    cases = [
        _tiny("tiny-full-amp", task="full_finetune", precision_recipe="amp", gradient_checkpointing=False),
        _tiny(
            "tiny-full-bf16-gc", task="full_finetune", precision_recipe="bf16", gradient_checkpointing=True
        ),
        _tiny(
            "tiny-lora-gc",
            task="lora",
            weight_dtype="bf16",
            lora_rank=4,
            lora_targets=["q_proj", "v_proj"],
            gradient_checkpointing=True,
        ),
        _tiny("tiny-lora-all", task="lora", weight_dtype="bf16", lora_rank=4, lora_targets=["all-linear"]),
        _tiny("tiny-infer", task="inference", weight_dtype="bf16", max_new_tokens=3),
    ]
    results, env = run(cases, dry_run=False, max_minutes=5, device="cpu")
    assert [m.status for m in results] == ["measured"] * len(cases), [m.reason for m in results]
    for m in results:
        assert m.reason == "CPU run: program checked, no CUDA memory figures"
        assert m.allocated_peak_bytes is None and m.est_tensor_peak_bytes > 0
        assert m.seconds is not None
    csv_path, md_path = write_outputs(results, env, tmp_path / "gpu.csv")
    with csv_path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["case_id"] for r in rows] == [c.case_id for c in cases]
    assert "| tiny-lora-gc | measured |" in md_path.read_text()


def test_errors_are_percent_of_the_measured_figure() -> None:
    m = gpu_measure.Measurement(
        "x",
        Scenario(model="llama-3.1-8b", task="inference"),
        "measured",
        est_tensor_peak_bytes=110,
        est_total_bytes=90,
        allocated_peak_bytes=100,
        nvml_peak_bytes=120,
    )
    row = m.row()
    assert row["error_allocated_pct"] == pytest.approx(10.0)
    assert row["error_nvml_pct"] == pytest.approx(-25.0)
