"""Accuracy of the estimator against published GPU memory measurements.

Loads `benchmarks/data/published_memory.csv` (one row per measurement, transcribed from the
sources named in each row: repository, path, commit), maps each row to a `tools.scenario.Scenario`,
runs `tools.estimator.estimate(scenario, plan=False)` and compares the figure of the metric the
source reports:

- `allocated` (torch.cuda.max_memory_allocated) and `active` (memory_stats active_bytes.all.peak)
  are compared with `per_gpu.tensor_peak_bytes`;
- `reserved` (max_memory_reserved) and `nvidia-smi` with `per_gpu.total_bytes`;
- `unknown` with `per_gpu.tensor_peak_bytes` (the row is then not `comparable` in the data anyway).

Rows whose outcome is `oom` (the source ran out of memory) carry no byte figure: for them we check
that the estimate's total exceeds the card. Rows marked `comparable=false` in the data (settings the
source leaves ambiguous, or features the estimator does not model: torch.compile, chunked loss,
activation offloading) are printed but kept out of the headline summary.

Run: `python -m benchmarks.accuracy.published` (add `--json` for machine-readable output).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.accuracy.stats import error_summary, format_errors
from tools.errors import ScenarioError
from tools.model.architecture import Architecture
from tools.result import Estimate
from tools.scenario import Scenario
from tools.units import GiB

DATA_CSV = Path(__file__).resolve().parents[1] / "data" / "published_memory.csv"


# ----------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class EstimateFigure:
    """Which Estimate figure a published metric is compared with."""

    name: str
    field: str
    read: Callable[[Estimate], int]


_TENSOR_PEAK = EstimateFigure(
    "tensor_peak", "per_gpu.tensor_peak_bytes", lambda est: est.per_gpu.tensor_peak_bytes
)
_TOTAL = EstimateFigure("total", "per_gpu.total_bytes", lambda est: est.per_gpu.total_bytes)

# torch.cuda.max_memory_allocated / memory_stats()["active_bytes.all.peak"] count live tensor blocks;
# max_memory_reserved and nvidia-smi add allocator caching and the CUDA context (PyTorch CUDA semantics docs).
METRIC_FIGURES: dict[str, EstimateFigure] = {
    "allocated": _TENSOR_PEAK,
    "active": _TENSOR_PEAK,
    "unknown": _TENSOR_PEAK,
    "reserved": _TOTAL,
    "nvidia-smi": _TOTAL,
}
METRICS: tuple[str, ...] = tuple(METRIC_FIGURES)
OUTCOMES: tuple[str, ...] = ("measured", "oom")


# ----------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class PublishedRow:
    """One published measurement with the configuration its source states (blank = not stated)."""

    case_id: str
    source_repo: str
    source_path: str
    source_commit: str
    source_table: str
    source_row: str
    model: str
    model_as_stated: str
    task: str
    gpu: str
    gpu_as_stated: str
    num_gpus: int
    batch_size: int | None
    seq_len: int | None
    weight_dtype: str | None
    quant: str | None  # nf4, nf4-dq (bitsandbytes with double quantisation)
    precision_recipe: str | None
    optimizer: str | None
    lora_rank: int | None
    lora_targets: tuple[str, ...]  # neutral names: q_proj, k_proj, v_proj, o_proj, mlp, lm_head
    gradient_checkpointing: bool | None
    zero_stage: int | None
    other_settings: str
    metric: str
    value_as_stated: str
    unit: str
    outcome: str
    measured_bytes: int | None
    resolution_bytes: int | None
    assumed: dict[str, str]  # settings the source does not state, with the default we assume
    comparable: bool
    config_source: str
    notes: str

    @property
    def source(self) -> str:
        return f"{self.source_repo}/{self.source_path}@{self.source_commit[:10]}"


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _bool(text: str) -> bool | None:
    value = text.strip().lower()
    if not value:
        return None
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"not a boolean: {text!r}")


def _targets(text: str) -> tuple[str, ...]:
    return tuple(t for t in text.split("|") if t) if text.strip() else ()


def _assumed(text: str) -> dict[str, str]:
    pairs = [p for p in text.split(";") if p.strip()]
    return dict(p.split("=", 1) for p in pairs)


def parse_row(raw: dict[str, str]) -> PublishedRow:
    return PublishedRow(
        case_id=raw["case_id"],
        source_repo=raw["source_repo"],
        source_path=raw["source_path"],
        source_commit=raw["source_commit"],
        source_table=raw["source_table"],
        source_row=raw["source_row"],
        model=raw["model"],
        model_as_stated=raw["model_as_stated"],
        task=raw["task"],
        gpu=raw["gpu"],
        gpu_as_stated=raw["gpu_as_stated"],
        num_gpus=int(raw["num_gpus"]),
        batch_size=_int(raw["batch_size"]),
        seq_len=_int(raw["seq_len"]),
        weight_dtype=raw["weight_dtype"] or None,
        quant=raw["quant"] or None,
        precision_recipe=raw["precision_recipe"] or None,
        optimizer=raw["optimizer"] or None,
        lora_rank=_int(raw["lora_rank"]),
        lora_targets=_targets(raw["lora_targets"]),
        gradient_checkpointing=_bool(raw["gradient_checkpointing"]),
        zero_stage=_int(raw["zero_stage"]),
        other_settings=raw["other_settings"],
        metric=raw["metric"],
        value_as_stated=raw["value_as_stated"],
        unit=raw["unit"],
        outcome=raw["outcome"],
        measured_bytes=_int(raw["measured_bytes"]),
        resolution_bytes=_int(raw["resolution_bytes"]),
        assumed=_assumed(raw["assumed"]),
        comparable=bool(_bool(raw["comparable"])),
        config_source=raw["config_source"],
        notes=raw["notes"],
    )


def load_rows(path: Path = DATA_CSV) -> list[PublishedRow]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [parse_row(raw) for raw in csv.DictReader(fh)]


# ----------------------------------------------------------------------------- row -> Scenario
def _effective(row: PublishedRow, field: str) -> str | None:
    """The stated value of `field`, else the assumed one, else None (estimator default)."""
    stated = getattr(row, field)
    if stated not in (None, (), ""):
        if isinstance(stated, tuple):
            return "|".join(stated)
        return str(stated).lower() if isinstance(stated, bool) else str(stated)
    return row.assumed.get(field)


def hf_lora_targets(arch: Architecture, neutral: Iterable[str]) -> list[str]:
    """Neutral LoRA targets (q_proj/k_proj/v_proj/o_proj/mlp/lm_head) -> this architecture's HF module names.

    litgpt's lora_query/key/value/projection/mlp/head flags are recorded in the data as neutral names;
    fused-qkv families (Phi-3 qkv_proj, Falcon query_key_value) map q/k/v to the fused module, and `mlp`
    expands to every MLP linear (tools/model/params.py NAMINGS gives the per-family module names).
    `lm_head` is dropped: the estimator's LoRA targets are the per-layer linears (tools/model/lora.py), and an
    adapter on the LM head adds only r x (h + V) parameters (Gemma-2B, r=8: 2.1M, 0.08% of the model).
    """
    from tools.model.params import NAMINGS

    naming = NAMINGS[arch.module_names]
    names: list[str] = []
    for target in neutral:
        if target in ("q_proj", "k_proj", "v_proj"):
            mapped = (
                [naming.qkv]
                if naming.qkv
                else [{"q_proj": naming.q, "k_proj": naming.k}.get(target, naming.v)]
            )
        elif target == "o_proj":
            mapped = [naming.o]
        elif target == "mlp":
            if not arch.gated_mlp:
                mapped = [naming.fc_in, naming.fc_out]
            elif naming.gate_up:
                mapped = [naming.gate_up, naming.down]
            else:
                mapped = [naming.gate, naming.up, naming.down]
        elif target == "lm_head":
            mapped = []
        else:
            mapped = [target]
        names += [m for m in mapped if m not in names]
    return names


# Settings litgpt rows do not state but litgpt always uses: lit-gpt finetune/lora.py
# `lora_dropout = 0.05` and litgpt config_hub/finetune/*/lora.yaml `lora_dropout: 0.05`; every litgpt
# fine-tuning script accumulates gradients (global batch > micro-batch: "global batch 128 via gradient
# accumulation" in resource-tables.md, global_batch_size > micro_batch_size in the config hub), so the
# gradients live through the whole step. Only "> 1" matters for memory, hence 2.
LITGPT_REPO = "Lightning-AI/litgpt"
LITGPT_LORA_DROPOUT = 0.05
LITGPT_ACCUMULATION_STEPS = 2


def to_scenario(row: PublishedRow) -> Scenario:
    """The Scenario a published row describes: stated settings, then the defaults recorded in `assumed`."""
    from tools.catalog.models import find_model

    spec = find_model(row.model)
    seq = _effective(row, "seq_len")
    batch = _effective(row, "batch_size")
    rank = _effective(row, "lora_rank")
    targets = _effective(row, "lora_targets")
    checkpointing = _effective(row, "gradient_checkpointing")
    zero = _effective(row, "zero_stage")
    quantised = row.quant in ("nf4", "nf4-dq")
    data: dict[str, Any] = {
        "model": spec.id,
        "task": row.task,
        "gpu": row.gpu,
        "num_gpus": row.num_gpus,
        "batch_size": int(batch) if batch else None,
        "seq_len": int(seq) if seq else None,
        "weight_dtype": row.weight_dtype,
        "precision_recipe": _effective(row, "precision_recipe"),
        "optimizer": _effective(row, "optimizer"),
        "lora_rank": int(rank) if rank and row.task in ("lora", "qlora") else None,
        "lora_targets": (
            hf_lora_targets(spec.architecture, targets.split("|"))
            if targets and row.task in ("lora", "qlora")
            else None
        ),
        "gradient_checkpointing": None if checkpointing is None else checkpointing == "true",
        "zero_stage": int(zero) if zero else None,
        "quant_method": "bnb" if quantised else None,
        "double_quant": (row.quant == "nf4-dq") if quantised else None,
    }
    if row.source_repo == LITGPT_REPO and row.task != "inference":
        data["gradient_accumulation_steps"] = LITGPT_ACCUMULATION_STEPS
        if row.task in ("lora", "qlora"):
            data["lora_dropout"] = LITGPT_LORA_DROPOUT
    return Scenario.model_validate(data)


# ----------------------------------------------------------------------------- litgpt + bitsandbytes rows
# What litgpt's 4-bit runs hold that the estimator's bitsandbytes rule (transformers + PEFT QLoRA) does not,
# read from the code the rows ran. Applied to the row, never to the estimator:
# 1. litgpt quantises the LM head. Lightning's BitsandbytesPrecision.init_context patches `torch.nn.Linear`
#    with its _Linear4bit class while the model is built, and litgpt passes no `ignore_modules`
#    (Lightning-AI/pytorch-lightning src/lightning/fabric/plugins/precision/bitsandbytes.py; litgpt
#    finetune/lora.py and generate/base.py: `BitsandbytesPrecision(quantize[4:], dtype)`), so GPT.lm_head
#    (always its own nn.Linear in litgpt/model.py, even where HF ties it) is 4-bit. transformers keeps it
#    16-bit (get_keys_to_not_convert), which the estimator models.
# 2. litgpt does not use PEFT: no prepare_model_for_kbit_training fp32 upcast; under bf16-true the
#    embeddings and norms stay bf16 (tools/calibration.py QLORA_UPCAST_NON_QUANTIZED_TO_FP32 is PEFT's).
# 3. Lightning quantises from fp16 (`_Linear4bit._quantize_weight`: `weight.contiguous().to(device="cuda",
#    dtype=torch.half)`), so bitsandbytes `dequantize_4bit` returns fp16 (QuantState.dtype) and MatMul4Bit
#    casts it to the bf16 compute dtype (bitsandbytes/autograd/_functions.py MatMul4Bit.forward/backward:
#    `F.dequantize_4bit(B, quant_state).to(A.dtype)`): two 16-bit copies of the running linear exist at
#    once. The largest 4-bit linear is the LM head (V x h), run at the end of prefill / of the forward,
#    when everything else of the step is alive: 2 x V x h x 2 B, in place of the estimator's workspace
#    (one 16-bit copy of the largest decoder linear: transformers keeps the LM head 16-bit).
# Evidence: with 1-3 the NF4 inference rows (resource tables) land within -0.3%..+1.2% of the measured
# figure (without them: -3.6%..-18.7%), e.g. Llama-2-7B nf4: 4.57 GB measured, 3.96 GiB estimated without
# the adjustment, 4.27 GiB with it.
LITGPT_DEQUANT_COPIES = 2  # fp16 dequantize_4bit output + its bf16 cast (point 3 above)
LITGPT_DEQUANT_BYTES = 2  # both copies are 16-bit


@dataclass(frozen=True)
class RowAdjustment:
    """A stated difference between what the row's framework holds and what the estimator models."""

    bytes: int
    text: str


def litgpt_bnb_adjustment(row: PublishedRow, scenario: Scenario, est: Estimate) -> RowAdjustment | None:
    """Bytes to add to the estimate of a litgpt bitsandbytes row (points 1-3 above); None for other rows."""
    if row.source_repo != LITGPT_REPO or row.quant not in ("nf4", "nf4-dq"):
        return None
    from tools import calibration as cal
    from tools.catalog.models import find_model
    from tools.model.architecture import LinearShape
    from tools.model.lora import decoder_linears
    from tools.model.params import count_params
    from tools.rules.quant import weight_format

    arch = find_model(scenario.model).architecture
    pb = count_params(arch)
    fmt = weight_format("nf4", "bnb", double_quant=row.quant == "nf4-dq")
    vh = arch.vocab_size * arch.hidden_size
    head_4bit = sum(
        fmt.linear_bytes(
            [LinearShape(name="lm_head", in_features=arch.hidden_size, out_features=arch.vocab_size, count=1)]
        )
    )
    training = row.task != "inference"
    delta, parts = 0, []
    if training and cal.QLORA_UPCAST_NON_QUANTIZED_TO_FP32:  # point 2: bf16, not PEFT's fp32
        other = pb.total - sum(lin.params for lin in decoder_linears(pb))
        delta -= other * 2
        parts.append(f"non-quantised params bf16, not fp32: -{other:,} x 2 B")
    head_16 = 0 if arch.tie_word_embeddings else vh * 2  # what the estimator holds for the LM head
    delta += head_4bit - head_16  # point 1
    parts.append(f"LM head 4-bit: {head_4bit:,} B in place of {head_16:,} B")
    largest = max([vh] + [lin.in_features * lin.out_features for lin in decoder_linears(pb)])
    workspace = LITGPT_DEQUANT_COPIES * LITGPT_DEQUANT_BYTES * largest  # point 3
    est_ws = est.component("dequant_workspace")
    delta += workspace - (est_ws.bytes if est_ws else 0)
    parts.append(
        f"dequantised LM head fp16 + bf16: {LITGPT_DEQUANT_COPIES} x {largest:,} x {LITGPT_DEQUANT_BYTES} B"
        + (f" in place of {est_ws.bytes:,} B" if est_ws else "")
    )
    return RowAdjustment(delta, "litgpt bnb: " + "; ".join(parts))


# litgpt config-hub QLoRA rows: kept out of the headline summary. Their peaks hold 3-5 GB more than their
# bf16 LoRA twins' beyond the weights, more than any saved tensor or transient in the bitsandbytes and
# Lightning code above (after points 1-3 they are still -15%..-27%, the resource-table QLoRA rows of the
# older stack are in line with their bf16 twins). litgpt's maintainers filed the same runs as a bug:
# Lightning-AI/litgpt issue #1112 "Higher memory use with QLoRA" (label bug, 2024-03-13: TinyLlama, only
# `quantize: bnb.nf4` changed, 14.49 -> 18.15 GB), and the table itself has QLoRA above LoRA at identical
# settings (tiny-llama 16.24 vs 13.50 GB, phi-2 14.27 vs 13.98 GB). bitsandbytes 0.43.3 later stopped
# MatMul4Bit saving its input for frozen weights (`ctx.tensors = (None, B)`), which the estimator still
# counts (tools/rules/activations.py SaveMask.base_saves_inputs), so it stays conservative for current stacks.
LITGPT_HUB_QLORA_EXCLUSION = (
    "litgpt config-hub QLoRA run of the stack litgpt issue #1112 reports as a bug (QLoRA above LoRA at the "
    "same settings); see published.py LITGPT_HUB_QLORA_EXCLUSION"
)
LITGPT_HUB_PATH = "config_hub/finetune/README.md"


def mapping_exclusion(row: PublishedRow) -> str | None:
    """Why the mapping keeps a row out of the headline summary (on top of the data's `comparable`)."""
    if row.source_repo == LITGPT_REPO and row.source_path == LITGPT_HUB_PATH and row.task == "qlora":
        return LITGPT_HUB_QLORA_EXCLUSION
    return None


# ----------------------------------------------------------------------------- comparison
def _signed_error_pct(estimate: int, truth: int) -> float:
    return (estimate - truth) / truth * 100.0


def _default_estimator() -> Callable[[Scenario], Estimate]:
    from tools.estimator import estimate

    return lambda scenario: estimate(scenario, plan=False)


def compare_row(row: PublishedRow, estimator: Callable[[Scenario], Estimate]) -> dict[str, Any]:
    """One result row: case id, estimate, truth, signed error %, metric (and what was compared)."""
    figure = METRIC_FIGURES[row.metric]
    result: dict[str, Any] = {
        "case_id": row.case_id,
        "source": row.source,
        "model": row.model,
        "task": row.task,
        "gpu": row.gpu,
        "num_gpus": row.num_gpus,
        "metric": row.metric,
        "compared_with": figure.field,
        "outcome": row.outcome,
        "comparable": row.comparable,
        "truth_bytes": row.measured_bytes,
        "estimate_bytes": None,
        "total_bytes": None,
        "card_bytes": None,
        "error_pct": None,
        "estimate_exceeds_card": None,
        "error": None,
        "adjustment_bytes": 0,
        "adjustment": None,
        "excluded_reason": mapping_exclusion(row),
    }
    if result["excluded_reason"]:
        result["comparable"] = False
    try:
        scenario = to_scenario(row)
        est = estimator(scenario)
    except (ScenarioError, ValueError, KeyError, NotImplementedError) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    adjustment = litgpt_bnb_adjustment(row, scenario, est)
    shift = adjustment.bytes if adjustment else 0
    result["adjustment_bytes"] = shift
    result["adjustment"] = adjustment.text if adjustment else None
    result["estimate_bytes"] = figure.read(est) + shift
    result["total_bytes"] = est.per_gpu.total_bytes + shift
    result["card_bytes"] = est.gpu.memory_bytes
    if row.outcome == "measured" and row.measured_bytes:
        result["error_pct"] = _signed_error_pct(result["estimate_bytes"], row.measured_bytes)
    if row.outcome == "oom":
        result["estimate_exceeds_card"] = result["total_bytes"] > est.gpu.memory_bytes
    return result


def published_rows(
    estimator: Callable[[Scenario], Estimate] | None = None, path: Path = DATA_CSV
) -> list[dict[str, Any]]:
    """Every published measurement compared with the estimator (see `compare_row` for the keys)."""
    run = estimator or _default_estimator()
    return [compare_row(row, run) for row in load_rows(path)]


def summarize(results: list[dict[str, Any]], *, comparable_only: bool = True) -> dict[str, Any]:
    """median / p90 absolute error, worst case, underestimates beyond 5%, OOM rows the estimate missed."""
    pool = [r for r in results if r["comparable"] or not comparable_only]
    scored = [(r["case_id"], r["error_pct"]) for r in pool if r["error_pct"] is not None]
    ooms = [r for r in pool if r["outcome"] == "oom" and r["estimate_exceeds_card"] is not None]
    return {
        **error_summary(scored, "comparable rows" if comparable_only else "all rows"),
        "errors": sum(1 for r in pool if r["error"]),
        "oom_rows": len(ooms),
        "oom_rows_estimated_to_fit": sum(1 for r in ooms if not r["estimate_exceeds_card"]),
    }


# ----------------------------------------------------------------------------- printing
def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / GiB:.2f}"


def format_table(results: list[dict[str, Any]]) -> str:
    head = f"{'case':<58} {'metric':<9} {'truth GiB':>9} {'est GiB':>8} {'error':>8}  note"
    lines = [head, "-" * len(head)]
    for r in results:
        if r["error"]:
            err, note = "-", r["error"][:60]
        elif r["outcome"] == "oom":
            err = "OOM"
            note = "estimate exceeds card" if r["estimate_exceeds_card"] else "MISSED: estimate fits the card"
        else:
            err, note = f"{r['error_pct']:+.1f}%", ""
        if r.get("adjustment_bytes"):
            note = (note + f" (litgpt bnb adjustment {r['adjustment_bytes'] / GiB:+.2f} GiB)").strip()
        if not r["comparable"]:
            note = ("(not in summary) " + note).strip()
        if r.get("excluded_reason"):
            note += " [litgpt #1112]"
        lines.append(
            f"{r['case_id']:<58} {r['metric']:<9} {_gib(r['truth_bytes']):>9} "
            f"{_gib(r['estimate_bytes']):>8} {err:>8}  {note}"
        )
    return "\n".join(lines)


def format_summary(summary: dict[str, Any]) -> str:
    if not summary["cases"]:
        return f"{summary['scope']}: no scored cases ({summary['errors']} rows could not be estimated)"
    return (
        f"{format_errors(summary)}, underestimates beyond 5%: {summary['underestimates_beyond_5pct']}, "
        f"OOM rows estimated to fit: {summary['oom_rows_estimated_to_fit']}/{summary['oom_rows']}, "
        f"rows not estimable: {summary['errors']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print rows and summaries as JSON")
    parser.add_argument("--data", type=Path, default=DATA_CSV, help="published measurements CSV")
    args = parser.parse_args(argv)
    results = published_rows(path=args.data)
    summaries = [summarize(results), summarize(results, comparable_only=False)]
    if args.json:
        print(json.dumps({"rows": results, "summary": summaries}, indent=2))
        return 0
    print(format_table(results))
    print()
    for summary in summaries:
        print(format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
