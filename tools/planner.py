"""Verdict planner: the cheapest few changes that make a job fit, and the fewest GPUs that fit it.

How it searches (bounded, < 50 ms for a full search; see benchmarks/estimator_speed.py):
1. Levers: small classes, each answering "does it apply to this scenario?" and "what does it
   change?" (gradient checkpointing, 8-bit optimizer, ZeRO stage, CPU offload, smaller micro-batch
   with gradient accumulation, LoRA, QLoRA, TP, PP, lower KV dtype, int8/int4 weights, shorter
   sequence).
2. Candidates at the job's GPU count: every single lever, then cumulative "ladders" (levers stacked
   in the cost order below) under the job's own fine-tuning method and under LoRA/QLoRA. A ladder
   stops at its first rung that fits: later rungs only cost more.
3. More GPUs: for the job's strategy and for the cheapest ladders, a binary search over powers of
   two (1 .. `max_gpus`) on the GPU count, since per-GPU memory never grows with more GPUs under
   ZeRO-3 / TP sharding.
Every candidate is estimated with `tools.estimator.estimate(candidate, plan=False)`; candidates the
estimator rejects (ScenarioError: e.g. TP not dividing the heads) are skipped.

Cost model (documented ordering; lower is better, compared in this order):
1. GPUs: fewer first (the hardware bill).
2. Fidelity: what the result gives up. Training: full fine-tune 0 < LoRA 1 < QLoRA 2 (4-bit base,
   Dettmers et al. 2023 report parity on their benchmarks, but it is a different model numerically)
   < shorter sequence 3 (changes the task). Inference: 16-bit 0 < fp8 KV 1 < int8 weights 1 <
   int4 weights 2 < shorter context 3.
3. Speed: a step-time multiplier, product of the levers' factors (constants below, each with its
   source or stated as a rule of thumb).
4. Memory: smaller total_bytes first (more headroom).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from tools.errors import ScenarioError
from tools.result import Estimate, Suggestion
from tools.scenario import Scenario

TRAINING_TASKS = frozenset({"full_finetune", "pretrain", "freeze", "lora", "qlora", "ppo", "grpo", "dpo"})
FULL_WEIGHT_TASKS = frozenset({"full_finetune", "pretrain", "freeze"})
RL_TASKS = frozenset({"ppo", "grpo", "dpo"})
MAX_GPUS_DEFAULT = 1024

# --- speed factors (step-time multipliers) -------------------------------------------------------
# Full activation recomputation re-runs the forward: ~ +33% step FLOPs (Korthikanti et al. 2022, sec. 4:
# forward 1 + backward 2 -> 1 + 2 + 1).
SLOWDOWN_RECOMPUTE = 4 / 3
# Selective recompute: attention core only, ~ +2.7% FLOPs for GPT-3 175B (Korthikanti et al. 2022, Table 4).
SLOWDOWN_SELECTIVE = 1.03
# 8-bit AdamW: optimizer step is a small share of a step; bitsandbytes reports no slowdown (rule of thumb 1.0).
SLOWDOWN_OPTIM_8BIT = 1.0
# ZeRO-1/2: same communication volume as DP all-reduce (ZeRO paper, sec. 7.2.1) -> 1.0;
# ZeRO-3: 1.5x DP's volume (ZeRO paper, sec. 7.2.2) -> ~1.1 step time (rule of thumb, overlap dependent).
SLOWDOWN_ZERO = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.1}
# ZeRO-Offload: CPU Adam + PCIe traffic; ZeRO-Offload paper (Ren et al. 2021) shows ~1.3-2x vs GPU-only.
SLOWDOWN_OFFLOAD_OPTIMIZER = 1.5
# Parameter offload (ZeRO-Infinity) streams every layer's weights over PCIe each forward/backward.
SLOWDOWN_OFFLOAD_PARAMS = 2.0
# Tensor parallel inside one node (NVLink): per-layer all-reduces, ~10% (rule of thumb, Megatron-LM paper).
SLOWDOWN_TP = 1.1
# Pipeline parallel: 1F1B bubble (p - 1) / m (Narayanan et al. 2021); m = 8 micro-batches assumed here.
PP_ASSUMED_MICROBATCHES = 8
# Halving the micro-batch lowers GPU utilisation; accumulation keeps the math (rule of thumb ~5%).
SLOWDOWN_HALVE_BATCH = 1.05
# QLoRA's dequantisation on every matmul: ~ 1.3x LoRA's step time (rule of thumb from QLoRA reports).
SLOWDOWN_QLORA = 1.3

# Fidelity ranks (see module docstring).
FIDELITY_FULL, FIDELITY_LORA, FIDELITY_QLORA, FIDELITY_TASK_CHANGE = 0, 1, 2, 3


class PlanResult(BaseModel):
    """What the planner found: the cheapest fitting changes and the fewest GPUs of this type."""

    suggestions: list[Suggestion] = Field(default_factory=list)
    min_gpus: int | None = None
    evaluated: int = 0  # estimates run by the search (the speed budget is about this)


@dataclass(frozen=True)
class Move:
    """A concrete change: scenario fields, human text, and its cost-model factors."""

    text: str
    changes: dict[str, Any]
    fidelity: int = FIDELITY_FULL
    slowdown: float = 1.0


@dataclass
class Candidate:
    moves: tuple[Move, ...]
    changes: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return " + ".join(m.text for m in self.moves)

    @property
    def fidelity(self) -> int:
        return max((m.fidelity for m in self.moves), default=FIDELITY_FULL)

    @property
    def slowdown(self) -> float:
        return math.prod(m.slowdown for m in self.moves)


def _compose(moves: Iterable[Move]) -> Candidate:
    moves = tuple(moves)
    changes: dict[str, Any] = {}
    for m in moves:
        changes.update(m.changes)
    return Candidate(moves=moves, changes=changes)


# --- levers: each answers "applies?" and "which Move?" for a scenario ---------------------------------


def _dp(s: Scenario) -> int:
    return max(1, (s.num_gpus or 1) // ((s.tp or 1) * (s.pp or 1) * (s.cp or 1)))


@dataclass(frozen=True)
class Checkpointing:
    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.gradient_checkpointing or s.recompute == "full":
            return None
        return Move(
            "gradient checkpointing (full recompute)",
            {"gradient_checkpointing": True, "recompute": "full"},
            slowdown=SLOWDOWN_RECOMPUTE,
        )


@dataclass(frozen=True)
class EightBitOptimizer:
    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.optimizer not in (None, "adamw", "paged_adamw"):
            return None
        return Move("8-bit AdamW (bitsandbytes)", {"optimizer": "adamw_8bit"}, slowdown=SLOWDOWN_OPTIM_8BIT)


@dataclass(frozen=True)
class ZeroStage:
    stage: int

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or _dp(s) < 2 or (s.zero_stage or 0) >= self.stage:
            return None
        name = "ZeRO-3 / FSDP full shard" if self.stage == 3 else f"ZeRO-{self.stage}"
        return Move(
            f"{name} over {_dp(s)} data-parallel GPUs",
            {"zero_stage": self.stage},
            slowdown=SLOWDOWN_ZERO[self.stage],
        )


@dataclass(frozen=True)
class OffloadOptimizer:
    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or (s.offload_optimizer or "none") != "none":
            return None
        # ZeRO-Offload runs with ZeRO-2 (or 3) even on one GPU (DeepSpeed zero_optimization.offload_optimizer)
        return Move(
            "offload optimizer states to CPU (ZeRO-Offload)",
            {"offload_optimizer": "cpu", "zero_stage": max(2, s.zero_stage or 0)},
            slowdown=SLOWDOWN_OFFLOAD_OPTIMIZER,
        )


@dataclass(frozen=True)
class OffloadParams:
    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or (s.offload_params or "none") != "none":
            return None
        # parameter offload needs ZeRO-3 (DeepSpeed offload_param is a stage-3 feature)
        return Move(
            "offload parameters and optimizer to CPU (ZeRO-3 Infinity)",
            {"offload_params": "cpu", "offload_optimizer": "cpu", "zero_stage": 3},
            slowdown=SLOWDOWN_OFFLOAD_PARAMS * SLOWDOWN_OFFLOAD_OPTIMIZER,
        )


@dataclass(frozen=True)
class SmallerMicroBatch:
    """Micro-batch 1 (or halved) with gradient accumulation keeping the global batch."""

    target: int | None = None  # None = halve

    def move(self, s: Scenario) -> Move | None:
        b = s.batch_size or 1
        if b <= 1:
            return None
        new = self.target if self.target is not None else max(1, b // 2)
        if new >= b:
            return None
        factor = b / new
        accum = max(1, round((s.gradient_accumulation_steps or 1) * factor))
        changes: dict[str, Any] = {"batch_size": new}
        text = f"micro-batch {new}"
        if s.task in TRAINING_TASKS:
            changes["gradient_accumulation_steps"] = accum
            text += f" with gradient accumulation {accum} (same global batch)"
            return Move(text, changes, slowdown=SLOWDOWN_HALVE_BATCH ** math.log2(factor))
        text = f"serve {new} sequence(s) at a time instead of {b}"
        return Move(text, changes, fidelity=FIDELITY_FULL, slowdown=factor)


@dataclass(frozen=True)
class UseLora:
    rank: int = 16

    def move(self, s: Scenario) -> Move | None:
        if s.task not in FULL_WEIGHT_TASKS and s.task not in RL_TASKS:
            return None
        if s.task in RL_TASKS and s.lora_rank:
            return None
        changes: dict[str, Any] = {"lora_rank": self.rank, "lora_targets": ["all-linear"]}
        if s.task in FULL_WEIGHT_TASKS:
            changes["task"] = "lora"
            changes["trainable_layers"] = None
        return Move(f"LoRA r={self.rank} on all linear layers (frozen 16-bit base)", changes, FIDELITY_LORA)


@dataclass(frozen=True)
class UseQlora:
    rank: int = 16

    def move(self, s: Scenario) -> Move | None:
        if s.task == "qlora" or (s.task in RL_TASKS and s.weight_dtype == "nf4"):
            return None
        if s.task not in FULL_WEIGHT_TASKS | {"lora"} | RL_TASKS:
            return None
        changes: dict[str, Any] = {
            "weight_dtype": "nf4",
            "quant_method": "bnb",
            "double_quant": True,
            "lora_rank": s.lora_rank or self.rank,
            "lora_targets": s.lora_targets or ["all-linear"],
            "optimizer": "paged_adamw_8bit",
        }
        if s.task not in RL_TASKS:
            changes["task"] = "qlora"
            changes["trainable_layers"] = None
        return Move(
            "QLoRA: 4-bit NF4 base + LoRA, paged 8-bit AdamW",
            changes,
            FIDELITY_QLORA,
            SLOWDOWN_QLORA,
        )


@dataclass(frozen=True)
class ShorterSequence:
    def move(self, s: Scenario) -> Move | None:
        n = s.seq_len or 0
        if n < 512:
            return None
        what = "context" if s.task == "inference" else "sequence length"
        return Move(f"halve the {what} to {n // 2}", {"seq_len": n // 2}, FIDELITY_TASK_CHANGE)


@dataclass(frozen=True)
class TensorParallel:
    size: int

    def move(self, s: Scenario) -> Move | None:
        tp, pp = s.tp or 1, s.pp or 1
        if tp >= self.size or (s.num_gpus or 1) < self.size * pp or (s.num_gpus or 1) % (self.size * pp):
            return None
        return Move(
            f"tensor parallel TP={self.size} across the job's GPUs", {"tp": self.size}, slowdown=SLOWDOWN_TP
        )


@dataclass(frozen=True)
class PipelineParallel:
    size: int

    def move(self, s: Scenario) -> Move | None:
        tp, pp = s.tp or 1, s.pp or 1
        if s.task == "inference" or pp >= self.size:
            return None
        if (s.num_gpus or 1) < tp * self.size or (s.num_gpus or 1) % (tp * self.size):
            return None
        bubble = 1 + (self.size - 1) / PP_ASSUMED_MICROBATCHES  # 1F1B bubble (Narayanan et al. 2021)
        return Move(f"pipeline parallel PP={self.size}", {"pp": self.size}, slowdown=bubble)


@dataclass(frozen=True)
class KvDtype8:
    def move(self, s: Scenario) -> Move | None:
        if s.task != "inference" or s.kv_dtype in ("fp8", "int8"):
            return None
        return Move("fp8 KV cache (vLLM kv_cache_dtype=fp8)", {"kv_dtype": "fp8"}, FIDELITY_LORA)


@dataclass(frozen=True)
class QuantizedWeights:
    dtype: str  # int8 or int4

    def move(self, s: Scenario) -> Move | None:
        if s.task != "inference" or s.weight_dtype in ("int4", "nf4", self.dtype):
            return None
        if self.dtype == "int8" and s.weight_dtype == "fp8":
            return None
        if self.dtype == "int4":
            return Move(
                "int4 weights (AWQ/GPTQ, group 128)",
                {"weight_dtype": "int4", "quant_method": "awq", "quant_group_size": 128},
                FIDELITY_QLORA,
            )
        return Move("int8 weights (bitsandbytes LLM.int8)", {"weight_dtype": "int8", "quant_method": "bnb"}, 1)


SINGLE_LEVERS: tuple[Any, ...] = (
    Checkpointing(),
    EightBitOptimizer(),
    ZeroStage(1),
    ZeroStage(2),
    ZeroStage(3),
    OffloadOptimizer(),
    SmallerMicroBatch(),
    SmallerMicroBatch(1),
    TensorParallel(2),
    TensorParallel(4),
    TensorParallel(8),
    PipelineParallel(2),
    KvDtype8(),
    QuantizedWeights("int8"),
    QuantizedWeights("int4"),
    UseLora(),
    UseQlora(),
    OffloadParams(),
    ShorterSequence(),
)

# Ladders: levers stacked from cheapest to most expensive under one fine-tuning method.
MEMORY_LADDER: tuple[Any, ...] = (
    Checkpointing(),
    EightBitOptimizer(),
    ZeroStage(3),
    SmallerMicroBatch(1),
    OffloadOptimizer(),
    OffloadParams(),
)
INFERENCE_LADDER: tuple[Any, ...] = (KvDtype8(), QuantizedWeights("int8"), QuantizedWeights("int4"))


# --- the search -----------------------------------------------------------------------------------


@dataclass
class _Search:
    base: Estimate
    stated: Scenario
    estimate_fn: Callable[[Scenario], Estimate]
    max_gpus: int
    evaluated: int = 0
    cache: dict[str, Estimate | None] = field(default_factory=dict)

    def run(self, changes: dict[str, Any]) -> Estimate | None:
        key = repr(sorted(changes.items(), key=lambda kv: kv[0]))
        if key in self.cache:
            return self.cache[key]
        result: Estimate | None
        try:
            result = self.estimate_fn(self.stated.merged(**changes))
        except (ScenarioError, ValueError):
            result = None
        self.evaluated += 1
        self.cache[key] = result
        return result

    def resolved(self, changes: dict[str, Any]) -> Scenario:
        """The base's resolved scenario with `changes`: what levers inspect."""
        return self.base.scenario.model_copy(update=changes)


def _stated_scenario(base: Estimate) -> Scenario:
    """The user's scenario before defaults: resolved fields the estimator assumed are reset to None,
    so each candidate gets the defaults that fit its own task (e.g. a QLoRA candidate's recipe)."""
    assumed = {a.field for a in base.assumptions if a.field in Scenario.model_fields}
    keep = {"model", "params", "architecture", "task", "gpu", "num_gpus"}
    return base.scenario.model_copy(update={f: None for f in assumed - keep})


def _gpu_counts(start: int, max_gpus: int) -> list[int]:
    counts, n = [], 1
    while n <= max_gpus:
        if n > start:
            counts.append(n)
        n *= 2
    return counts


def _layout_for(s: Scenario, n: int, *, stated_fields: set[str]) -> dict[str, Any]:
    """How the job's strategy spreads over n GPUs: keep stated TP/PP; training adds ZeRO-3 unless a
    ZeRO stage was stated; inference adds TP (power of two dividing the KV heads) then PP."""
    changes: dict[str, Any] = {"num_gpus": n}
    tp, pp = s.tp or 1, s.pp or 1
    if s.task == "inference":
        if "tp" not in stated_fields and "pp" not in stated_fields:
            arch = s.architecture
            heads = arch.kv_heads if arch is not None else 8
            new_tp = 1
            while new_tp * 2 <= min(n, 8) and heads % (new_tp * 2) == 0:
                new_tp *= 2
            changes["tp"] = new_tp
            changes["pp"] = max(1, n // new_tp)
        return changes
    if n % (tp * pp):
        return {}
    if "zero_stage" not in stated_fields and n // (tp * pp) > 1:
        changes["zero_stage"] = 3
    return changes


def _min_gpus(search: _Search, extra: dict[str, Any], stated_fields: set[str]) -> tuple[int, Estimate] | None:
    """Fewest GPUs (powers of two from the job's own count) that fit with `extra` applied: binary search."""
    s0 = search.resolved(extra)
    start = s0.num_gpus or 1
    e0 = search.base if not extra else search.run(extra)
    if e0 is not None and e0.fits:
        return start, e0
    counts = _gpu_counts(start, search.max_gpus)
    lo, hi, best = 0, len(counts) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        changes = {**extra, **_layout_for(s0, counts[mid], stated_fields=stated_fields)}
        est = search.run(changes) if "num_gpus" in changes else None
        if est is not None and est.fits:
            best, hi = (counts[mid], est), mid - 1
        else:
            lo = mid + 1
    return best


def _suggestion(cand: Candidate, est: Estimate, extra_text: str = "") -> Suggestion:
    text = cand.text + extra_text if cand.moves else extra_text.lstrip(" +")
    return Suggestion(
        change=text,
        scenario_changes=dict(cand.changes),
        total_bytes=est.per_gpu.total_bytes,
        fits=est.fits,
        num_gpus=est.scenario.num_gpus or 1,
        rationale=(
            f"fidelity rank {cand.fidelity} (0 = unchanged), step time x{cand.slowdown:.2f}, "
            f"{est.per_gpu.total_bytes / 2**30:.1f} GiB per GPU"
        ),
    )


def _ladder(search: _Search, start: tuple[Move, ...], levers: Iterable[Any]) -> tuple[Candidate, Estimate] | None:
    """Stack levers one by one from `start`; return the first rung that fits."""
    moves = list(start)
    cand = _compose(moves)
    if moves and (est := search.run(cand.changes)) is not None and est.fits:
        return cand, est
    for lever in levers:
        mv = lever.move(search.resolved(cand.changes))
        if mv is None:
            continue
        moves.append(mv)
        cand = _compose(moves)
        est = search.run(cand.changes)
        if est is not None and est.fits:
            return cand, est
    return None


def plan(
    base: Estimate,
    *,
    limit: int = 4,
    max_gpus: int = MAX_GPUS_DEFAULT,
    estimate_fn: Callable[[Scenario], Estimate] | None = None,
) -> PlanResult:
    """Cheapest `limit` changes that fit (ordered by the module's cost model) and min_gpus.

    `estimate_fn` defaults to `tools.estimator.estimate(s, plan=False)`; tests may pass their own.
    """
    if estimate_fn is None:
        from tools.estimator import estimate

        def estimate_fn(s: Scenario) -> Estimate:
            return estimate(s, plan=False)

    stated = _stated_scenario(base)
    stated_fields = {f for f in Scenario.model_fields if getattr(stated, f) is not None}
    search = _Search(base=base, stated=stated, estimate_fn=estimate_fn, max_gpus=max_gpus)
    s = base.scenario
    n0 = s.num_gpus or 1

    # min_gpus with the job's own strategy
    found = _min_gpus(search, {}, stated_fields)
    min_gpus = found[0] if found else None

    scored: list[tuple[tuple[Any, ...], Suggestion]] = []

    def add(cand: Candidate, est: Estimate, extra_text: str = "") -> None:
        n = est.scenario.num_gpus or 1
        key = (n, cand.fidelity, round(cand.slowdown, 3), est.per_gpu.total_bytes)
        scored.append((key, _suggestion(cand, est, extra_text)))

    if base.fits:
        if min_gpus is not None and min_gpus < n0 and found is not None:
            add(Candidate(moves=(), changes={"num_gpus": min_gpus}), found[1], f"use {min_gpus} GPU(s)")
        return PlanResult(suggestions=[sg for _, sg in sorted(scored, key=lambda x: x[0])][:limit],
                          min_gpus=min_gpus, evaluated=search.evaluated)

    # 1) single levers at the job's GPU count
    for lever in SINGLE_LEVERS:
        mv = lever.move(s)
        if mv is None:
            continue
        cand = _compose([mv])
        est = search.run(cand.changes)
        if est is not None and est.fits:
            add(cand, est)

    # 2) ladders under the job's own method, LoRA and QLoRA
    ladder = INFERENCE_LADDER if s.task == "inference" else MEMORY_LADDER
    starts: list[tuple[Move, ...]] = [()]
    if s.task != "inference":
        for lever in (UseLora(), UseQlora()):
            if (mv := lever.move(s)) is not None:
                starts.append((mv,))
    ladder_results: list[Candidate] = []
    for start in starts:
        res = _ladder(search, start, ladder)
        if res is not None:
            add(*res)
            ladder_results.append(res[0])

    # 3) more GPUs: the job's strategy (min_gpus) and the memory ladder's strongest no-fidelity rung
    if found is not None and found[0] != n0:
        layout = _layout_for(s, found[0], stated_fields=stated_fields)
        cand = Candidate(moves=(), changes=layout)
        add(cand, found[1], f"use {found[0]} GPUs ({_layout_text(layout)})")
    if s.task != "inference":
        light = [m for lv in (Checkpointing(), EightBitOptimizer()) if (m := lv.move(s)) is not None]
        if light:
            cand = _compose(light)
            got = _min_gpus(search, cand.changes, stated_fields)
            if got is not None and got[0] != n0:
                layout = _layout_for(search.resolved(cand.changes), got[0], stated_fields=stated_fields)
                full = Candidate(moves=cand.moves, changes={**cand.changes, **layout})
                add(full, got[1], f" on {got[0]} GPUs ({_layout_text(layout)})")

    scored.sort(key=lambda x: x[0])
    seen: set[str] = set()
    out: list[Suggestion] = []
    for _, sg in scored:
        k = repr(sorted(sg.scenario_changes.items()))
        if k in seen:
            continue
        seen.add(k)
        out.append(sg)
        if len(out) >= limit:
            break
    return PlanResult(suggestions=out, min_gpus=min_gpus, evaluated=search.evaluated)


def _layout_text(layout: dict[str, Any]) -> str:
    parts = []
    if layout.get("tp", 1) > 1:
        parts.append(f"TP={layout['tp']}")
    if layout.get("pp", 1) > 1:
        parts.append(f"PP={layout['pp']}")
    if layout.get("zero_stage"):
        parts.append(f"ZeRO-{layout['zero_stage']}")
    return ", ".join(parts) or "data parallel"
