"""GPU check: run the accuracy cases for real on a CUDA card and compare with the estimator.

The cases are the traced accuracy matrix (`benchmarks/accuracy/cases.py`). Each Scenario goes to the
estimator and, through the tracer's own mapping (`tools.trace.request.plan_from_scenario`), to the
same program the CPU tracer runs (`tools/trace/steps.py`), here on the GPU with random weights; the
real Hugging Face model is built from the catalog architecture directly on the device
(`tools/trace/build.py`):

- training (full_finetune / lora): `model(input_ids, labels=input_ids).loss`, backward,
  `torch.optim.AdamW(fused=True)` step, `zero_grad(set_to_none=True)`, two steps (optimizer states
  appear at step 1); recipes fp32, amp (fp32 weights + bf16 autocast; LoRA: bf16 base under bf16
  autocast), bf16 (pure bf16), mixed (DeepSpeed's FP16_Optimizer step over 16-bit weights); LoRA
  through PEFT (`lora_alpha = 2r`, the case's `lora_dropout`, LM-head / embedding targets); gradient
  checkpointing with `use_reentrant=False`; the memory savers of the case (torchtune chunked CE, Liger
  fused linear CE in PyTorch, optimizer in backward, activation offloading) and the DPO / GRPO update
  steps, all through the tracer's own program (`tools.trace.steps.train_program`, nothing recorded);
  activation offloading there keeps only the saved tensors' metadata off the device (no host copy
  is made; the device memory is what torchtune's offloading leaves there);
- inference: prefill with `logits_to_keep=1`, then greedy decode steps, under `torch.no_grad()`.

Measured per case, from a clean allocator (`empty_cache` + `reset_peak_memory_stats` before the
model is built, so weights are inside the peak):
- `torch.cuda.max_memory_allocated()`: compared with the estimate's `per_gpu.tensor_peak_bytes`;
- `torch.cuda.max_memory_reserved()`: the caching allocator's segments (allocated + cached slack);
- device memory used as NVML reports it (`pynvml`, else `nvidia-smi --query-gpu=memory.used`),
  sampled every few milliseconds in a background thread, minus what was in use before this process
  touched CUDA: the process's nvidia-smi footprint (CUDA context included), compared with
  `per_gpu.total_bytes`. Sampling can miss a spike shorter than the interval.

Cases the estimate says do not fit the card, and cases the tracer's plan refuses on one card
(several GPUs, ZeRO/TP/PP, QLoRA, PPO, optimizers other than AdamW), are recorded as skipped with
the reason; a CUDA out-of-memory error is recorded as a measured OOM. `--max-minutes`
caps the run: cases not started in time are recorded as skipped.

    python -m benchmarks.gpu_measure --out gpu_measure.csv             # on a CUDA machine
    python -m benchmarks.gpu_measure --dry-run --out /tmp/cases.csv    # anywhere: cases + estimates

Writes the table as CSV (`--out`) and Markdown (same path, `.md`), and prints the Markdown.
`--dry-run` never imports torch: it lists the cases with the estimator's figures.
Real runs need torch, transformers and peft (the [trace] extra) and, for `tools/`, pydantic only.
On an offline GPU box that already has torch/transformers/peft (Python 3.12), carry pydantic as
wheels and run from the repository root, inside the box's 10-minute command limit:

    pip download 'pydantic==2.14.*' --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 -d .whl                                   # here
    pip install --no-index --find-links .whl pydantic && \
        python3 -m benchmarks.gpu_measure --max-minutes 7 --out "$OUT/gpu_measure.csv"   # there
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.errors import ScenarioError
from tools.result import Estimate
from tools.scenario import Scenario
from tools.units import GiB

FIT_FRACTION = 0.97  # skip a case whose estimated total exceeds this share of the card (no OOM storms)
NVML_INTERVAL_S = 0.002
TRAIN_STEPS = 2  # tools/trace/steps.py: steps 1 and 2 (optimizer states appear at step 1)

COLUMNS = (
    "case_id",
    "model",
    "task",
    "recipe",
    "batch_size",
    "seq_len",
    "gradient_checkpointing",
    "attention",
    "lora_rank",
    "status",
    "reason",
    "est_tensor_peak_bytes",
    "est_total_bytes",
    "allocated_peak_bytes",
    "reserved_peak_bytes",
    "nvml_peak_bytes",
    "error_allocated_pct",
    "error_nvml_pct",
    "seconds",
)


# ----------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    case_id: str
    scenario: Scenario


def default_cases(gpu: str = "h200") -> list[Case]:
    """The traced accuracy matrix (benchmarks/accuracy/cases.py), priced for the card being measured."""
    from benchmarks.accuracy.cases import all_cases

    return [Case(c.id, Scenario.model_validate({**c.scenario, "gpu": gpu})) for c in all_cases()]


# ----------------------------------------------------------------------------- results
@dataclass
class Measurement:
    case_id: str
    scenario: Scenario
    status: str  # dry-run | measured | oom | skipped | error
    reason: str = ""
    est_tensor_peak_bytes: int | None = None
    est_total_bytes: int | None = None
    allocated_peak_bytes: int | None = None
    reserved_peak_bytes: int | None = None
    nvml_peak_bytes: int | None = None
    seconds: float | None = None

    @staticmethod
    def _error(estimate: int | None, truth: int | None) -> float | None:
        if estimate is None or not truth:
            return None
        return (estimate - truth) / truth * 100.0

    def row(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "case_id": self.case_id,
            "model": s.model or "(architecture)",
            "task": s.task,
            "recipe": s.precision_recipe if s.task != "inference" else s.weight_dtype,
            "batch_size": s.batch_size,
            "seq_len": s.seq_len,
            "gradient_checkpointing": s.gradient_checkpointing,
            "attention": s.attention,
            "lora_rank": s.lora_rank,
            "status": self.status,
            "reason": self.reason,
            "est_tensor_peak_bytes": self.est_tensor_peak_bytes,
            "est_total_bytes": self.est_total_bytes,
            "allocated_peak_bytes": self.allocated_peak_bytes,
            "reserved_peak_bytes": self.reserved_peak_bytes,
            "nvml_peak_bytes": self.nvml_peak_bytes,
            "error_allocated_pct": self._error(self.est_tensor_peak_bytes, self.allocated_peak_bytes),
            "error_nvml_pct": self._error(self.est_total_bytes, self.nvml_peak_bytes),
            "seconds": None if self.seconds is None else round(self.seconds, 2),
        }


def _from_estimate(case_id: str, est: Estimate, status: str, reason: str = "") -> Measurement:
    tensor = est.per_gpu.tensor_peak_bytes
    total = est.per_gpu.total_bytes
    if est.scenario.task in ("dpo", "grpo", "ppo"):
        # the program runs the reference scoring and the update, not the rollout (as the tracer)
        update = max(p.tensor_bytes for p in est.per_gpu.phases if p.phase != "rollout")
        total, tensor = total - tensor + update, update
    return Measurement(
        case_id,
        est.scenario,
        status,
        reason,
        est_tensor_peak_bytes=tensor,
        est_total_bytes=total,
    )


def _estimate(scenario: Scenario) -> Estimate:
    from tools.estimator import estimate

    return estimate(scenario, plan=False)


def _trace_plan(s: Scenario) -> Any:
    """The tracer's plan for this scenario (tools/trace/request.py): same job, same program on the GPU.
    Raises ScenarioError for what one card cannot run here (QLoRA, RL, parallelism, other optimizers)."""
    from tools.trace.request import plan_from_scenario

    return plan_from_scenario(s)


# ----------------------------------------------------------------------------- NVML
class DeviceMemorySampler:
    """Peak device memory in use (NVML / nvidia-smi), sampled in a background thread."""

    def __init__(self, index: int = 0, interval_s: float = NVML_INTERVAL_S) -> None:
        self.index = index
        self.interval_s = interval_s
        self.source = "none"
        self._read: Callable[[], int] | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._read = lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            self.source = "pynvml"
        except Exception:  # no pynvml / no NVML: fall back to the nvidia-smi binary
            if shutil.which("nvidia-smi"):
                self._read = self._nvidia_smi
                self.source = "nvidia-smi"
                self.interval_s = max(interval_s, 0.05)
        self.baseline = self.read()

    def _nvidia_smi(self) -> int:
        out = subprocess.run(
            ["nvidia-smi", f"--id={self.index}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        return int(float(out.strip().splitlines()[0]) * 2**20)  # MiB

    def read(self) -> int | None:
        return self._read() if self._read else None

    @contextmanager
    def peak(self) -> Iterator[dict[str, int | None]]:
        """Yields a dict whose 'peak' is the highest reading above the pre-CUDA baseline, set on exit."""
        result: dict[str, int | None] = {"peak": None}
        if self._read is None or self.baseline is None:
            yield result
            return
        stop = threading.Event()
        highest = [self.read() or 0]

        def poll() -> None:
            while not stop.is_set():
                highest[0] = max(highest[0], self.read() or 0)
                stop.wait(self.interval_s)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield result
        finally:
            stop.set()
            thread.join()
            highest[0] = max(highest[0], self.read() or 0)
            result["peak"] = highest[0] - self.baseline


# ----------------------------------------------------------------------------- the programs
def _model_dtype(plan: Any) -> str:
    # tools/trace/steps.py _model_dtype: inference and LoRA load weights as weight_dtype; full FT by recipe
    if plan.task in ("inference", "lora") or (plan.task in ("dpo", "grpo") and plan.lora_rank):
        return str(plan.weight_dtype)
    if plan.recipe == "mixed":
        return str(plan.weight_dtype)
    return {"fp32": "fp32", "amp": "fp32", "bf16": "bf16"}[plan.recipe]


def _apply_lora(model: Any, plan: Any) -> Any:
    from peft import get_peft_model

    from tools.trace.steps import lora_config  # the tracer's own LoRA/DoRA configuration

    config = lora_config(plan.lora_rank, plan.lora_targets, plan.dora, dropout=plan.lora_dropout)
    return get_peft_model(model, config)


def _train(model: Any, ref_model: Any, plan: Any, device: str) -> None:
    import torch

    from tools.trace.steps import NullTracker, request_from_plan, train_program

    req = request_from_plan(plan, fake=False, steps=TRAIN_STEPS)
    with torch.device(device):  # the savers' and RL steps' own tensors on the card too
        train_program(model, ref_model, req, NullTracker(), device)


def _generate(model: Any, plan: Any, device: str) -> None:
    import torch

    model.eval()
    prompt = max(1, plan.seq_len - plan.max_new_tokens)
    with torch.no_grad():
        ids = torch.randint(0, model.config.vocab_size, (plan.batch_size, prompt), device=device)
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        next_ids = out.logits[:, -1, :].float().argmax(-1, keepdim=True)
        del out
        for _ in range(plan.max_new_tokens):
            out = model(input_ids=next_ids, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            next_ids = out.logits[:, -1, :].float().argmax(-1, keepdim=True)
            del out


def run_program(plan: Any, device: str) -> None:
    """Build the model on `device` (random weights) and run the plan's program once."""
    import torch

    from tools.trace.build import build_model

    ref_model = None
    with torch.device(device):
        model = build_model(plan.architecture, _model_dtype(plan), plan.attention, None, family=plan.family)
        if plan.task in ("dpo", "grpo") and not plan.lora_rank:  # a frozen copy of the policy
            ref_model = build_model(
                plan.architecture, _model_dtype(plan), plan.attention, None, family=plan.family
            )
            ref_model.eval().requires_grad_(False)
    if plan.task == "lora" or (plan.task in ("dpo", "grpo") and plan.lora_rank):
        model = _apply_lora(model, plan)
    if plan.task == "inference":
        _generate(model, plan, device)
    else:
        _train(model, ref_model, plan, device)
    del model, ref_model


def _clean(torch: Any) -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def measure_case(
    case: Case, est: Estimate, plan: Any, sampler: DeviceMemorySampler | None, device: str
) -> Measurement:
    """Run one case on `device` and record its peaks (CUDA figures only on a CUDA device)."""
    import torch

    m = _from_estimate(case.case_id, est, "measured")
    _clean(torch)
    t0 = time.perf_counter()
    peak_ctx = sampler.peak() if sampler is not None else nullcontext({"peak": None})
    try:
        with peak_ctx as nvml:
            run_program(plan, device)
            if device == "cuda":
                torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError as exc:
        m.status, m.reason = "oom", f"CUDA out of memory: {str(exc).splitlines()[0][:160]}"
    except (RuntimeError, ValueError, ScenarioError) as exc:
        m.status, m.reason = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    m.seconds = time.perf_counter() - t0
    if device == "cuda":
        m.allocated_peak_bytes = int(torch.cuda.max_memory_allocated())
        m.reserved_peak_bytes = int(torch.cuda.max_memory_reserved())
        m.nvml_peak_bytes = nvml["peak"] if isinstance(nvml, dict) else None
    else:
        m.reason = m.reason or "CPU run: program checked, no CUDA memory figures"
    _clean(torch)
    return m


# ----------------------------------------------------------------------------- driver
def plan_cases(
    cases: list[Case], card_bytes: int | None
) -> list[tuple[Case, Estimate | None, Any, Measurement | None]]:
    """Estimate and plan every case; the Measurement is already final for cases that will not run."""
    out: list[tuple[Case, Estimate | None, Any, Measurement | None]] = []
    for case in cases:
        try:
            est = _estimate(case.scenario)
        except ScenarioError as exc:
            out.append(
                (
                    case,
                    None,
                    None,
                    Measurement(case.case_id, case.scenario, "skipped", f"not estimable: {exc}"),
                )
            )
            continue
        plan, reason = None, None
        try:
            plan = _trace_plan(case.scenario)
        except ScenarioError as exc:
            reason = f"not run on one card: {exc}"
        if reason is None and card_bytes is not None and est.per_gpu.total_bytes > FIT_FRACTION * card_bytes:
            reason = (
                f"estimate {est.per_gpu.total_bytes / GiB:.1f} GiB does not fit this card "
                f"({card_bytes / GiB:.1f} GiB)"
            )
        final = None if reason is None else _from_estimate(case.case_id, est, "skipped", reason)
        out.append((case, est, plan, final))
    return out


def run(
    cases: list[Case],
    *,
    dry_run: bool,
    max_minutes: float,
    device: str = "cuda",
    card_bytes: int | None = None,
) -> tuple[list[Measurement], dict[str, str]]:
    """Measure (or, with dry_run, only estimate) the cases; returns the rows and the environment."""
    env: dict[str, str] = {"mode": "dry-run" if dry_run else device}
    sampler: DeviceMemorySampler | None = None
    if not dry_run:
        # NVML baseline first: before this process creates its CUDA context
        sampler = DeviceMemorySampler() if device == "cuda" else None
        import torch

        env["torch"] = torch.__version__
        if device == "cuda":
            if not torch.cuda.is_available():
                raise SystemExit("gpu_measure: no CUDA device (use --dry-run to list the cases)")
            props = torch.cuda.get_device_properties(0)
            card_bytes = int(props.total_memory)
            env["gpu"] = props.name
            env["gpu_memory_gib"] = f"{card_bytes / GiB:.1f}"
            env["nvml_source"] = sampler.source if sampler else "none"
        try:
            import transformers

            env["transformers"] = transformers.__version__
        except ImportError:
            pass
    results: list[Measurement] = []
    deadline = time.monotonic() + max_minutes * 60.0
    for case, est, plan, final in plan_cases(cases, card_bytes):
        if final is not None:
            results.append(final)
        elif est is None:
            continue
        elif dry_run:
            results.append(_from_estimate(case.case_id, est, "dry-run"))
        elif time.monotonic() > deadline:
            results.append(
                _from_estimate(case.case_id, est, "skipped", f"--max-minutes {max_minutes:g} reached")
            )
        else:
            m = measure_case(case, est, plan, sampler, device)
            print(f"[gpu_measure] {m.case_id}: {m.status} {m.reason}", file=sys.stderr, flush=True)
            results.append(m)
    return results, env


def _gib(n: Any) -> str:
    return "" if n is None else f"{n / GiB:.2f}"


def _pct(x: Any) -> str:
    return "" if x is None else f"{x:+.1f}%"


def to_markdown(results: list[Measurement], env: dict[str, str]) -> str:
    lines = [
        "# GPU memory: measured vs estimated",
        "",
        "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        "Allocated = torch.cuda.max_memory_allocated (vs estimate tensor peak); reserved = "
        "max_memory_reserved; NVML = device memory used above the pre-CUDA baseline (vs estimate total).",
        "",
        "| case | status | est. tensor peak GiB | allocated GiB | error | reserved GiB | est. total GiB "
        "| NVML GiB | error | s | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for m in results:
        r = m.row()
        lines.append(
            f"| {r['case_id']} | {r['status']} | {_gib(r['est_tensor_peak_bytes'])} | "
            f"{_gib(r['allocated_peak_bytes'])} | {_pct(r['error_allocated_pct'])} | "
            f"{_gib(r['reserved_peak_bytes'])} | {_gib(r['est_total_bytes'])} | {_gib(r['nvml_peak_bytes'])} | "
            f"{_pct(r['error_nvml_pct'])} | {r['seconds'] if r['seconds'] is not None else ''} | "
            f"{r['reason'].replace('|', '/')} |"
        )
    measured = [m.row() for m in results if m.status == "measured" and m.allocated_peak_bytes]
    if measured:
        errors = sorted(abs(r["error_allocated_pct"]) for r in measured)
        lines += [
            "",
            f"Measured cases: {len(measured)}; median |error| vs allocated {errors[len(errors) // 2]:.1f}%, "
            f"worst {max(errors):.1f}%; underestimates beyond 5%: "
            f"{sum(1 for r in measured if r['error_allocated_pct'] < -5)}.",
        ]
    return "\n".join(lines) + "\n"


def write_outputs(results: list[Measurement], env: dict[str, str], out: Path) -> tuple[Path, Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    csv_path = out if out.suffix == ".csv" else out.with_suffix(".csv")
    md_path = csv_path.with_suffix(".md")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for m in results:
            writer.writerow({k: ("" if v is None else v) for k, v in m.row().items()})
    md_path.write_text(to_markdown(results, env), encoding="utf-8")
    return csv_path, md_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure the accuracy cases on a CUDA GPU")
    parser.add_argument("--out", type=Path, default=Path("gpu_measure.csv"), help="CSV path (.md beside it)")
    parser.add_argument("--dry-run", action="store_true", help="list cases and estimates; no torch, no GPU")
    parser.add_argument("--max-minutes", type=float, default=8.0, help="stop starting new cases after this")
    parser.add_argument("--cases", default=None, help="comma-separated case ids to run (default: all)")
    parser.add_argument(
        "--gpu", default="h200", help="catalog id of the card measured (prices the estimates)"
    )
    parser.add_argument(
        "--device", default="cuda", choices=["cuda", "cpu"], help="cpu: check the programs only"
    )
    parser.add_argument(
        "--card-gib", type=float, default=None, help="dry run: card size for the fit check (default: none)"
    )
    args = parser.parse_args(argv)
    cases = default_cases(args.gpu)
    if args.cases:
        wanted = set(args.cases.split(","))
        unknown = wanted - {c.case_id for c in cases}
        if unknown:
            print(f"gpu_measure: unknown case ids: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c.case_id in wanted]
    card = int(args.card_gib * GiB) if args.card_gib else None
    results, env = run(
        cases, dry_run=args.dry_run, max_minutes=args.max_minutes, device=args.device, card_bytes=card
    )
    csv_path, md_path = write_outputs(results, env, args.out)
    print(md_path.read_text(encoding="utf-8"))
    print(json.dumps({"csv": str(csv_path), "markdown": str(md_path), "cases": len(results)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
