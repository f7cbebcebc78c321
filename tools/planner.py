"""Verdict planner: the cheapest few changes that make a job fit, and the fewest GPUs that fit it.

How it searches (bounded, < 50 ms for a full search; see benchmarks/estimator_speed.py):
1. Levers: small classes, each answering "does it apply to this scenario?" and "what does it
   change?" (gradient checkpointing, 8-bit optimizer, ZeRO stage, CPU offload, smaller micro-batch
   with gradient accumulation, LoRA, QLoRA, TP, PP, lower KV dtype, int8/int4 weights, shorter
   sequence).
2. Candidates at the job's GPU count: cumulative "ladders" (levers stacked in the cost order below)
   under the job's own fine-tuning method and under LoRA/QLoRA, then every single lever. A ladder
   stops at its first rung that fits: later rungs only cost more. The single levers go cheapest first
   by the part of their cost known before estimating (GPUs, fidelity, speed) and stop once `limit`
   suggestions that cost less are kept: the rest could never be shown.
3. More GPUs: for the job's strategy and for the cheapest ladders, a binary search over powers of
   two (1 .. `max_gpus`) on the GPU count, since per-GPU memory never grows with more GPUs under
   ZeRO-3 / TP sharding. When a training job does not fit as asked, the largest count it can be laid
   out on is probed first: if even that does not fit, no count does, and the search ends there. Light
   levers that already fit on the job's own count are not searched further (their fewest GPUs is no more).
4. Minimal and sensible: a ladder's fitting rung is pruned to the smallest subset of its moves that still
   fits (`_prune`); a suggestion is dropped when a cheaper kept one makes it pointless (`_dominates`: fewer
   GPUs at no worse fidelity and at most optimizer offload's slowdown; no worse on GPUs, fidelity, speed and
   memory; or a superset of its changes at no better cost). Training TP keeps >= 384 hidden columns a
   shard (tools/rules/parallel.py). Offload is
   never stacked on a bitsandbytes-quantised base (QLoRA/int8: tiny adapter optimizer, DeepSpeed does
   not offload bnb weights), nor an 8-bit GPU optimizer on CPU-offloaded states. "Fewer GPUs" is offered
   only when the job fits as asked on more GPUs than it needs; more GPUs only beyond the asked count.
5. `PlanResult.min_gpus_changes`: the min_gpus layout ({} = as stated), read by tools.estimator.
Every candidate is checked with `tools.estimator.verdict_of(candidate)`: the total and verdict of
`estimate(candidate, plan=False)` without its components, notes or serving capacity (a candidate is
compared, never shown), stopped as soon as the weights and optimizer states it must hold already
cannot fit (tools/cutoff.py; the total of a candidate that does not fit is never compared); candidates
the estimator rejects (ScenarioError: e.g. TP not dividing the heads) are skipped. A candidate that
differs from one already cut off only in fields its resident state does not read (RESIDENT_BLIND: batch,
sequence, recompute, loss) does not fit either, and is not estimated; a candidate that only restates the job
as asked (its stated values, or the TP and PP sizes the estimator gave it) is answered by the base estimate.
The candidates of one search share their pure steps (a `tools.call_memo.memo_scope` around the search).

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

import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from tools.call_memo import memo_scope
from tools.errors import ScenarioError
from tools.estimator import Fit
from tools.result import Estimate, Suggestion, constructed
from tools.rules.parallel import tp_fits_heads, training_tp_cap
from tools.scenario import RL_TASKS, TRAINING_TASKS, Scenario

FULL_WEIGHT_TASKS = frozenset({"full_finetune", "freeze"})  # fine-tunes LoRA/QLoRA can replace (not pretrain)
MAX_GPUS_DEFAULT = 1024
# Fields no resident part reads: the weights, master weights, optimizer states and gradients whose sum is a
# training footprint's lower bound (tools/footprint.py _resident_bound, tools/rl.py _persistent_bytes) depend
# on the model, its format, the trainable set, the optimizer and the layout, never on the tokens of a step
# or how its activations and logits are kept. Two candidates differing only in these fields have the same
# resident bound: when one's already overflows the card (tools/cutoff.py), neither fits
# (tests/test_planner_shortcuts.py checks the bound over the golden corpus).
RESIDENT_BLIND = frozenset(
    {
        "batch_size",
        "gradient_accumulation_steps",
        "seq_len",
        "gradient_checkpointing",
        "recompute",
        "cross_entropy",
    }
)

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

# Memory savers (tools/savers.py). Chunked CE runs the same matmuls and loss in 8 pieces (torchtune
# CEWithChunkedOutputLoss; rule of thumb ~1.0). Liger's fused linear CE reports higher throughput, not lower
# (Liger-Kernel README: +20% multi-GPU throughput): 1.0. Optimizer in backward: the same updates, per
# parameter (torchtune optimizer_in_bwd; no gradient accumulation with it): 1.0. Activation offloading:
# device<->host copies overlapped on a side stream (torchtune OffloadActivations use_streams): ~+10% (rule of
# thumb), on top of the recompute it needs.
SLOWDOWN_CHUNKED_CE = 1.0
SLOWDOWN_FUSED_CE = 1.0
SLOWDOWN_OPTIMIZER_IN_BACKWARD = 1.0
SLOWDOWN_ACTIVATION_OFFLOAD = 1.1

# Fidelity ranks (see module docstring).
# Their words: prompts/<lang>/suggestions.toml [fidelity].
FIDELITY_FULL, FIDELITY_LORA, FIDELITY_QLORA, FIDELITY_TASK_CHANGE = 0, 1, 2, 3

# What a suggestion is, as codes (its words: prompts/<lang>/suggestions.toml, said at the service's edge by
# service/agent/suggestion_text.py): the change's shape -> the values it carries besides the moves/layout.
CHANGE_CODES: dict[str, tuple[str, ...]] = {
    "moves": (),  # the moves, stacked at the job's GPU count
    "fewer_gpus": ("gpus", "asked"),  # the job fits as asked on fewer GPUs (the layout that does)
    "more_gpus": ("gpus", "asked"),  # the job as stated on more GPUs (the layout)
    "moves_on_gpus": ("gpus",),  # light moves on more GPUs (the layout)
}
# A move's code -> the values its words use.
MOVE_CODES: dict[str, tuple[str, ...]] = {
    "checkpointing": (),
    "optimizer_8bit": (),
    "zero": ("stage", "dp"),
    "zero3": ("dp",),
    "offload_optimizer": (),
    "offload_params": (),
    "micro_batch_accum": ("batch", "accum"),
    "serve_fewer": ("batch", "was"),
    "lora": ("rank",),
    "qlora": (),
    "shorter_context": ("seq_len",),
    "shorter_sequence": ("seq_len",),
    "tp": ("size",),
    "pp": ("size",),
    "kv_fp8": (),
    "weights_fp8": (),
    "weights_int8": (),
    "weights_int4": (),
    "chunked_ce": (),
    "fused_linear_ce": (),
    "optimizer_in_backward": (),
    "activation_offloading": (),
}
# A layout part's code (how a GPU count is used) -> its values.
LAYOUT_CODES: dict[str, tuple[str, ...]] = {
    "same_settings": (),
    "tp": ("tp",),
    "tp_sp": ("tp",),
    "pp": ("pp",),
    "zero": ("stage",),
    "data_parallel": (),
}


class PlanResult(NamedTuple):
    """What the planner found: the cheapest fitting changes and the fewest GPUs of this type (read by
    tools.estimator, which copies it into the Estimate; an immutable value, no schema to build)."""

    suggestions: list[Suggestion]
    min_gpus: int | None
    # how min_gpus fits: {} = the job as stated on its own GPU count; else the layout fields the planner
    # set ({"num_gpus": 2, "zero_stage": 3}); None = nothing fits within max_gpus
    min_gpus_changes: dict[str, Any] | None
    evaluated: int  # estimates run by the search (the speed budget is about this)


class Move(NamedTuple):
    """A concrete change: scenario fields and its code (MOVE_CODES) with `values`. `drops`: fields whose
    earlier moves this one makes moot (e.g. CPU offload of the optimizer makes an 8-bit GPU optimizer moot)."""

    code: str
    changes: dict[str, Any]
    fidelity: int = FIDELITY_FULL  # informative; the ranking uses fidelity_rank() on the final changes
    slowdown: float = 1.0
    drops: tuple[str, ...] = ()
    values: Mapping[str, Any] = MappingProxyType({})

    @property
    def part(self) -> dict[str, Any]:
        return {"code": self.code, "values": dict(self.values)}


class Candidate(NamedTuple):
    """A stack of moves and the scenario fields they change together."""

    moves: tuple[Move, ...]
    changes: dict[str, Any]

    @property
    def parts(self) -> list[dict[str, Any]]:
        return [m.part for m in self.moves]


def _compose(moves: Iterable[Move]) -> Candidate:
    """Stack moves; a later move removes earlier ones it supersedes (all their fields rewritten by it,
    or named in its `drops`)."""
    cand = Candidate(moves=(), changes={})
    for mv in moves:
        cand = _extend(cand, mv)
    return cand


def _extend(cand: Candidate, mv: Move) -> Candidate:
    """`cand` with `mv` stacked on top: `_compose` of its moves and `mv` (one step of the stacking)."""
    keys = mv.changes.keys() | set(mv.drops)
    kept = (*(m for m in cand.moves if not m.changes.keys() <= keys), mv)
    changes = dict(cand.changes)
    for name in mv.drops:
        changes.pop(name, None)
    changes.update(mv.changes)
    return Candidate(moves=kept, changes=changes)


def fidelity_rank(base: Scenario, changes: dict[str, Any]) -> int:
    """What the changed job gives up (module docstring, cost model item 2)."""
    new = {**{f: getattr(base, f) for f in changes}, **changes}  # the fields read below are plain values
    rank = FIDELITY_FULL
    task = new.get("task", base.task)
    if (task == "lora" and base.task != "lora") or (
        base.task in RL_TASKS and new.get("lora_rank") and not base.lora_rank
    ):
        rank = max(rank, FIDELITY_LORA)
    if (task == "qlora" and base.task != "qlora") or (
        new.get("weight_dtype") in ("nf4", "int4") and base.weight_dtype not in ("nf4", "int4")
    ):
        rank = max(rank, FIDELITY_QLORA)
    if new.get("weight_dtype") in ("int8", "fp8") and base.weight_dtype not in ("int8", "fp8", "nf4", "int4"):
        rank = max(rank, FIDELITY_LORA)
    if new.get("kv_dtype") in ("fp8", "int8") and base.kv_dtype not in ("fp8", "int8"):
        rank = max(rank, FIDELITY_LORA)
    if "seq_len" in changes and (changes["seq_len"] or 0) < (base.seq_len or 0):
        rank = max(rank, FIDELITY_TASK_CHANGE)
    return rank


def step_time_causes(base: Scenario, changes: dict[str, Any]) -> list[tuple[str, float]]:
    """What slows a step of the changed job vs the base, each cause with its step-time multiplier
    (module docstring, cost model item 3). Cause names are prompts/<lang>/labels.toml [tradeoff] keys."""
    new = base.updated(changes)
    causes: list[tuple[str, float]] = []
    if (new.recompute == "full" and base.recompute != "full") or (
        new.gradient_checkpointing and not base.gradient_checkpointing and base.recompute != "full"
    ):
        causes.append(("recompute", SLOWDOWN_RECOMPUTE))
    zero = SLOWDOWN_ZERO.get(new.zero_stage or 0, 1.0) / SLOWDOWN_ZERO.get(base.zero_stage or 0, 1.0)
    if zero != 1.0:
        causes.append(("zero3", zero))
    if (new.offload_optimizer or "none") != "none" and (base.offload_optimizer or "none") == "none":
        causes.append(("offload_optimizer", SLOWDOWN_OFFLOAD_OPTIMIZER))
    if (new.offload_params or "none") != "none" and (base.offload_params or "none") == "none":
        causes.append(("offload_params", SLOWDOWN_OFFLOAD_PARAMS))
    if (new.tp or 1) > (base.tp or 1):
        causes.append(("tp", SLOWDOWN_TP))
    if (new.pp or 1) > (base.pp or 1):
        causes.append(("pp", 1 + ((new.pp or 1) - (base.pp or 1)) / PP_ASSUMED_MICROBATCHES))
    b0, b1 = base.batch_size or 1, new.batch_size or 1
    if b1 < b0:
        causes.append(
            ("batch", b0 / b1 if base.task == "inference" else SLOWDOWN_HALVE_BATCH ** math.log2(b0 / b1))
        )
    if new.weight_dtype == "nf4" and base.weight_dtype != "nf4" and base.task != "inference":
        causes.append(("dequant", SLOWDOWN_QLORA))
    return causes + _saver_causes(base, new)


def step_time_factor(base: Scenario, changes: dict[str, Any]) -> float:
    """Step-time multiplier of the changed job vs the base: the product of its causes' multipliers."""
    factor = 1.0
    for _, multiplier in step_time_causes(base, changes):
        factor *= multiplier
    return factor


def _saver_causes(base: Scenario, new: Scenario) -> list[tuple[str, float]]:
    """Step-time factors of the memory savers switched on by the change (tools/components/savers.py)."""
    causes: list[tuple[str, float]] = []
    if (new.cross_entropy or "standard") != (base.cross_entropy or "standard"):
        ce = SLOWDOWN_FUSED_CE if new.cross_entropy == "fused_linear" else SLOWDOWN_CHUNKED_CE
        causes.append(("cross_entropy", ce))
    if new.optimizer_in_backward and not base.optimizer_in_backward:
        causes.append(("optimizer_in_backward", SLOWDOWN_OPTIMIZER_IN_BACKWARD))
    if new.activation_offloading and not base.activation_offloading:
        causes.append(("activation_offloading", SLOWDOWN_ACTIVATION_OFFLOAD))
    return causes


# --- levers: each answers "applies?" and "which Move?" for a scenario ---------------------------------


def _quantized_base(s: Scenario) -> bool:
    """A bitsandbytes-quantised frozen base (QLoRA, int8): its optimizer states are the adapters' (tiny)
    and DeepSpeed parameter offload does not handle bnb 4/8-bit weights; offload buys nothing there."""
    return s.task == "qlora" or s.weight_dtype in ("nf4", "int4", "int8")


def _dp(s: Scenario) -> int:
    return max(1, (s.num_gpus or 1) // ((s.tp or 1) * (s.pp or 1) * (s.cp or 1)))


class Checkpointing(NamedTuple):
    """Lever: gradient checkpointing (full recompute)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.gradient_checkpointing or s.recompute == "full":
            return None
        return Move(
            "checkpointing",
            {"gradient_checkpointing": True, "recompute": "full"},
            slowdown=SLOWDOWN_RECOMPUTE,
        )


class EightBitOptimizer(NamedTuple):
    """Lever: 8-bit AdamW (bitsandbytes) instead of fp32 states."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.optimizer not in (None, "adamw", "paged_adamw"):
            return None
        if (s.offload_optimizer or "none") != "none":  # states already on the CPU: 8-bit buys little there
            return None
        return Move("optimizer_8bit", {"optimizer": "adamw_8bit"}, slowdown=SLOWDOWN_OPTIM_8BIT)


class ZeroStage(NamedTuple):
    """Lever: ZeRO stage `stage` over the data-parallel GPUs."""

    stage: int

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or _dp(s) < 2 or (s.zero_stage or 0) >= self.stage:
            return None
        return Move(
            "zero3" if self.stage == 3 else "zero",
            {"zero_stage": self.stage},
            slowdown=SLOWDOWN_ZERO[self.stage],
            values={"dp": _dp(s)} if self.stage == 3 else {"stage": self.stage, "dp": _dp(s)},
        )


class OffloadOptimizer(NamedTuple):
    """Lever: optimizer states in CPU memory (ZeRO-Offload)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or (s.offload_optimizer or "none") != "none" or _quantized_base(s):
            return None
        # ZeRO-Offload runs with ZeRO-2 (or 3) even on one GPU (DeepSpeed zero_optimization.offload_optimizer)
        return Move(
            "offload_optimizer",
            {"offload_optimizer": "cpu", "zero_stage": max(2, s.zero_stage or 0)},
            slowdown=SLOWDOWN_OFFLOAD_OPTIMIZER,
            drops=("optimizer",),  # DeepSpeed's CPU Adam replaces a GPU 8-bit optimizer
        )


class OffloadParams(NamedTuple):
    """Lever: parameters and optimizer states in CPU memory (ZeRO-3 Infinity)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or (s.offload_params or "none") != "none" or _quantized_base(s):
            return None
        # parameter offload needs ZeRO-3 (DeepSpeed offload_param is a stage-3 feature)
        return Move(
            "offload_params",
            {"offload_params": "cpu", "offload_optimizer": "cpu", "zero_stage": 3},
            slowdown=SLOWDOWN_OFFLOAD_PARAMS * SLOWDOWN_OFFLOAD_OPTIMIZER,
            drops=("optimizer",),
        )


class SmallerMicroBatch(NamedTuple):
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
        if s.task in TRAINING_TASKS:
            changes["gradient_accumulation_steps"] = accum
            return Move(
                "micro_batch_accum",
                changes,
                slowdown=SLOWDOWN_HALVE_BATCH ** math.log2(factor),
                values={"batch": new, "accum": accum},
            )
        return Move(
            "serve_fewer", changes, fidelity=FIDELITY_FULL, slowdown=factor, values={"batch": new, "was": b}
        )


class UseLora(NamedTuple):
    """Lever: LoRA of rank `rank` on a frozen 16-bit base instead of full fine-tuning."""

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
        return Move("lora", changes, FIDELITY_LORA, values={"rank": self.rank})


class UseQlora(NamedTuple):
    """Lever: QLoRA (4-bit NF4 base + LoRA of rank `rank`)."""

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
            "qlora",
            changes,
            FIDELITY_QLORA,
            SLOWDOWN_QLORA,
        )


class ShorterSequence(NamedTuple):
    """Lever: half the sequence length."""

    def move(self, s: Scenario) -> Move | None:
        n = s.seq_len or 0
        if n < 512:
            return None
        code = "shorter_context" if s.task == "inference" else "shorter_sequence"
        return Move(code, {"seq_len": n // 2}, FIDELITY_TASK_CHANGE, values={"seq_len": n // 2})


def megatron_layouts(s: Scenario) -> bool:
    """Can the job use tensor/pipeline/sequence parallelism? Serving engines (vLLM, SGLang) shard by TP, and
    full fine-tuning / pretraining may run on Megatron-LM; LoRA, QLoRA, DPO, GRPO and PPO run on PEFT/TRL
    (HF Trainer, DeepSpeed, FSDP), which shard with ZeRO/FSDP and have no Megatron TP/SP: for those, TP/PP/SP
    are proposed only when the question itself is Megatron-style (the megatron recipe or a stated TP/PP/SP)."""
    if s.task not in ("lora", "qlora", "dpo", "grpo", "ppo"):
        return True
    return s.precision_recipe == "megatron" or (s.tp or 1) > 1 or (s.pp or 1) > 1 or bool(s.sequence_parallel)


class TensorParallel(NamedTuple):
    """Lever: tensor parallelism of `size` GPUs."""

    size: int

    def move(self, s: Scenario) -> Move | None:
        tp, pp = s.tp or 1, s.pp or 1
        if not megatron_layouts(s):
            return None
        if tp >= self.size or (s.num_gpus or 1) < self.size * pp or (s.num_gpus or 1) % (self.size * pp):
            return None
        if s.task != "inference" and self.size > training_tp_cap(_heads(s)[3]):  # too thin a shard to train
            return None
        return Move("tp", {"tp": self.size}, slowdown=SLOWDOWN_TP, values={"size": self.size})


class PipelineParallel(NamedTuple):
    """Lever: pipeline parallelism of `size` stages."""

    size: int

    def move(self, s: Scenario) -> Move | None:
        tp, pp = s.tp or 1, s.pp or 1
        if s.task == "inference" or pp >= self.size or not megatron_layouts(s):
            return None
        if (s.num_gpus or 1) < tp * self.size or (s.num_gpus or 1) % (tp * self.size):
            return None
        bubble = 1 + (self.size - 1) / PP_ASSUMED_MICROBATCHES  # 1F1B bubble (Narayanan et al. 2021)
        return Move("pp", {"pp": self.size}, slowdown=bubble, values={"size": self.size})


class KvDtype8(NamedTuple):
    """Lever: an fp8 KV cache (serving)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task != "inference" or s.kv_dtype in ("fp8", "int8"):
            return None
        return Move("kv_fp8", {"kv_dtype": "fp8"}, FIDELITY_LORA)


class QuantizedWeights(NamedTuple):
    """Lever: weights quantised to `dtype` (fp8, int8 or int4) for inference."""

    dtype: str  # fp8, int8 or int4

    def move(self, s: Scenario) -> Move | None:
        if s.task != "inference" or s.weight_dtype in ("int4", "nf4", self.dtype):
            return None
        if (self.dtype == "int8" and s.weight_dtype == "fp8") or (
            self.dtype == "fp8" and s.weight_dtype == "int8"
        ):
            return None
        if self.dtype == "fp8":
            return Move("weights_fp8", {"weight_dtype": "fp8", "quant_method": "fp8"}, 1)
        if self.dtype == "int4":
            return Move(
                "weights_int4",
                {"weight_dtype": "int4", "quant_method": "awq", "quant_group_size": 128},
                FIDELITY_QLORA,
            )
        return Move("weights_int8", {"weight_dtype": "int8", "quant_method": "bnb"}, 1)


class LossSaver(NamedTuple):
    """Chunked cross-entropy (torchtune) or Liger's fused linear cross-entropy: no full fp32 logits."""

    kind: str  # chunked | fused_linear

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.task in ("ppo", "grpo", "dpo"):
            return None
        if (s.cross_entropy or "standard") != "standard":
            return None
        code = {"chunked": "chunked_ce", "fused_linear": "fused_linear_ce"}[self.kind]
        slow = SLOWDOWN_FUSED_CE if self.kind == "fused_linear" else SLOWDOWN_CHUNKED_CE
        return Move(code, {"cross_entropy": self.kind}, slowdown=slow)


class OptimizerInBackward(NamedTuple):
    """torchtune optimizer_in_bwd: gradients freed per parameter (not with gradient accumulation)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in ("full_finetune", "pretrain") or s.optimizer_in_backward:
            return None
        if (s.gradient_accumulation_steps or 1) > 1 or (s.zero_stage or 0) > 0 or _dp(s) > 1:
            return None
        return Move(
            "optimizer_in_backward",
            {"optimizer_in_backward": True},
            slowdown=SLOWDOWN_OPTIMIZER_IN_BACKWARD,
        )


class ActivationOffloading(NamedTuple):
    """Checkpointed layer inputs in CPU memory (torchtune enable_activation_offloading)."""

    def move(self, s: Scenario) -> Move | None:
        if s.task not in TRAINING_TASKS or s.activation_offloading:
            return None
        if not (s.gradient_checkpointing or s.recompute == "full"):
            return None
        return Move(
            "activation_offloading",
            {"activation_offloading": True},
            slowdown=SLOWDOWN_ACTIVATION_OFFLOAD,
        )


SINGLE_LEVERS: tuple[Any, ...] = (
    LossSaver("chunked"),
    LossSaver("fused_linear"),
    OptimizerInBackward(),
    ActivationOffloading(),
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
    QuantizedWeights("fp8"),
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
INFERENCE_LADDER: tuple[Any, ...] = (KvDtype8(), QuantizedWeights("fp8"), QuantizedWeights("int4"))


# --- the search -----------------------------------------------------------------------------------


@dataclass
class _Search:
    """One planner search: the base job, the verdicts met so far (cached by changes) and their count."""

    base: Estimate
    stated: Scenario
    estimate_fn: Callable[[Scenario], Fit]
    max_gpus: int
    evaluated: int = 0
    cache: dict[Hashable, Fit | None] = field(default_factory=dict)
    resolved_cache: dict[Hashable, Scenario] = field(default_factory=dict)
    heads_cache: dict[tuple[Any, ...], tuple[tuple[int, int, int, int], Any]] = field(default_factory=dict)
    # changes less RESIDENT_BLIND fields -> the verdict of a candidate whose resident state alone overflowed
    resident_over: dict[Hashable, Fit] = field(default_factory=dict)
    valid: Scenario | bool | None = None  # the stated scenario validated (first candidate); False: not valid
    validated: dict[Hashable, Any] = field(default_factory=dict)  # field values validated so far

    def run(self, changes: dict[str, Any]) -> Fit | None:
        """The verdict of the stated scenario with `changes` (None when the estimator rejects it)."""
        # a change to the value the stated scenario already has is no change (merged() gives the same
        # scenario): candidates that differ only by such changes share one estimate, and with none left
        # the candidate is the job as asked (the stated scenario keeps every stated value,
        # tests/test_planner_consistency.py): its verdict is the base estimate's
        changes = {k: v for k, v in changes.items() if getattr(self.stated, k) != v}
        if not changes or self._as_resolved(changes):
            return _fit_of_estimate(self.base)
        key = _changes_key(changes)
        if key in self.cache:
            return self.cache[key]
        # the same changes but for RESIDENT_BLIND fields already overflowed on their resident state alone
        # (keyed only once some candidate did: serving searches and most training ones never need the key)
        result = self.resident_over.get(_resident_key(key, changes)) if self.resident_over else None
        if result is None:
            result = self._evaluate(changes)
            if result is not None and result.resident_over:
                self.resident_over[_resident_key(key, changes)] = result
        self.cache[key] = result
        return result

    def _as_resolved(self, changes: dict[str, Any]) -> bool:
        """Do `changes` only spell out the TP and PP sizes the estimator gave the job as asked (a serving
        layout on the job's own GPU count)? The resolver reads a stated size as it reads the one it fills
        (tools/resolution/layout.py parallel_layout): the candidate is the job as asked."""
        base = self.base.scenario
        return changes.keys() <= _SIZES_AS_FILLED and all(
            (getattr(base, k) or 1) == v for k, v in changes.items()
        )

    def _evaluate(self, changes: dict[str, Any]) -> Fit | None:
        """The checker's verdict of the stated scenario with `changes` (None: the estimator rejects it)."""
        self.evaluated += 1
        try:
            return self.estimate_fn(self._checked_merge(changes))
        except (ScenarioError, ValueError):
            return None

    def _checked_merge(self, changes: dict[str, Any]) -> Scenario:
        """`stated.merged(**changes)`: the stated scenario validated once per search (`valid`), then each
        candidate validates only its changed fields (Scenario.merged_checked)."""
        # a ValidationError is a ValueError: what the estimator rejects, as run() expects
        if self.valid is None:
            try:
                self.valid = self.stated.merged()
            except ValueError:  # not valid as stated: each candidate validated whole (a change may mend it)
                self.valid = False
        if self.valid is False:
            return self.stated.merged(**changes)
        return self.valid.merged_checked(self.validated, **changes)

    def resolved(self, changes: dict[str, Any]) -> Scenario:
        """The base's resolved scenario with `changes`: what levers inspect (they only read it: one copy
        per distinct changes)."""
        key = _changes_key(changes)
        got = self.resolved_cache.get(key)
        if got is None:
            got = self.resolved_cache[key] = self.base.scenario.updated(changes)
        return got

    def heads(self, s: Scenario) -> tuple[int, int, int, int]:
        """`_heads(s)`, once per model of the search (the architecture keyed by identity, kept alive here)."""
        key = (s.model, s.params, id(s.architecture))
        got = self.heads_cache.get(key)
        if got is None:
            got = self.heads_cache[key] = (_heads(s), s.architecture)
        return got[0]


_SIZES_AS_FILLED = frozenset({"tp", "pp"})  # read alike stated or filled (None: 1)


def _changes_key(changes: dict[str, Any]) -> Hashable:
    """A cache key of `changes`: equal for equal fields and values of equal types (a list by its items);
    other unhashable values are keyed by the repr of the sorted items."""
    key = tuple(
        [(k, list, *v) if v.__class__ is list else (k, v.__class__, v) for k, v in sorted(changes.items())]
    )
    try:
        hash(key)
    except TypeError:
        return repr(sorted(changes.items()))
    return key


def _resident_key(key: Hashable, changes: dict[str, Any]) -> Hashable:
    """`_changes_key` of `changes` less the RESIDENT_BLIND fields, from `key`, the `_changes_key` of `changes`
    (its items are in name order: the same items less those fields)."""
    if key.__class__ is tuple:
        return tuple([item for item in key if item[0] not in RESIDENT_BLIND])  # type: ignore[attr-defined]
    return _changes_key({k: v for k, v in changes.items() if k not in RESIDENT_BLIND})


def _fit_of_estimate(est: Estimate) -> Fit:
    return Fit(scenario=est.scenario, total_bytes=est.per_gpu.total_bytes, fits=est.fits)


def _stated_scenario(base: Estimate) -> Scenario:
    """The user's scenario before defaults: resolved fields the estimator assumed are reset to None,
    so each candidate gets the defaults that fit its own task (e.g. a QLoRA candidate's recipe). Kept: the
    fields whose assumptions say how a stated value was read rather than fill one (the model and GPU names,
    the images' decoder tokens: tools/resolution/sizes.py), and the task, which the levers change."""
    assumed = {a.field for a in base.assumptions if a.field in Scenario.model_fields}
    keep = {"model", "params", "architecture", "task", "gpu", "images"}
    update: dict[str, Any] = {f: None for f in assumed - keep} | {"filled": None}
    for a in base.assumptions:
        if a.code == "model.from_params":
            # a model given as a parameter count only is named by its size label once resolved ("3B"); read
            # as a name, that label is the typical model of the size, another shape (tools/resolution/model.py
            # resolve_model_ref): the candidates read the count again, as the job did
            update.update(model=None, params=a.values["params"])
    return base.scenario.model_copy(update=update)


def changed_job(base: Estimate, changes: dict[str, Any]) -> Scenario:
    """The job of `base` with `changes` (a suggestion's `scenario_changes`, the min_gpus layout), as the
    planner estimated it: the stated scenario, not the resolved one (whose filled values would read as
    stated: a filled `mixed` recipe as DeepSpeed's FP16_Optimizer, tools/components/savers.py)."""
    return _stated_scenario(base).merged(**changes)


def _heads(s: Scenario) -> tuple[int, int, int, int]:
    """(attention heads, KV heads, layers, hidden size) of the scenario's model (0 KV heads = MLA: no constraint)."""
    from tools.resolve import resolve_model_ref

    ref, _, _ = resolve_model_ref(s.model, s.params, s.architecture)
    arch = ref.arch
    return (
        arch.num_attention_heads,
        (0 if arch.kv_lora_rank else arch.kv_heads),
        arch.num_hidden_layers,
        arch.hidden_size,
    )


def _tp_for(n: int, heads: int, kv: int, cap: int = 8) -> int:
    """Largest power-of-two TP <= min(n, cap) that divides the heads and suits the KV heads
    (divides them, or is a multiple of them: replicated KV heads, Megatron/vLLM)."""
    tp = 1
    while tp * 2 <= min(n, cap):
        t = tp * 2
        if not tp_fits_heads(heads, kv, t):
            break
        tp = t
    return tp


def _layouts(
    s: Scenario, n: int, stated_fields: set[str], heads: tuple[int, int, int, int] | None = None
) -> list[dict[str, Any]]:
    """Ways the job's own strategy spreads over n GPUs, cheapest first: training keeps stated TP/PP and
    adds ZeRO-3 over the data-parallel ranks unless a ZeRO stage was stated, then (TP not stated) TP up
    to 8 with sequence parallel; inference (TP/PP not stated) uses TP up to 8 then PP."""
    heads, kv, layers, hidden = heads or _heads(s)
    tp, pp = s.tp or 1, s.pp or 1
    out: list[dict[str, Any]] = []
    if s.task == "inference":
        if "tp" in stated_fields and "pp" in stated_fields:
            return [{"num_gpus": n}] if n == tp * pp else []
        new_tp = tp if "tp" in stated_fields else _tp_for(n, heads, kv)
        if n % new_tp or n // new_tp > layers:
            return []
        return [{"num_gpus": n, "tp": new_tp, "pp": n // new_tp}]
    if n % (tp * pp) == 0:
        lay: dict[str, Any] = {"num_gpus": n}
        if "zero_stage" not in stated_fields and n // (tp * pp) > 1:
            lay["zero_stage"] = 3
        out.append(lay)
    if "tp" not in stated_fields and megatron_layouts(s):
        new_tp = _tp_for(n // pp if n % pp == 0 else 1, heads, kv, training_tp_cap(hidden))  # never too thin
        if new_tp > tp and n % (new_tp * pp) == 0:
            lay = {"num_gpus": n, "tp": new_tp, "sequence_parallel": True}
            if "zero_stage" not in stated_fields and n // (new_tp * pp) > 1:
                lay["zero_stage"] = 3
            out.append(lay)
    return out


def _fit_at(
    search: _Search, extra: dict[str, Any], n: int, stated_fields: set[str]
) -> tuple[dict[str, Any], Fit] | None:
    s = search.resolved(extra)
    if n == (s.num_gpus or 1):
        est = search.run(extra)
        if est is not None and est.fits:
            return dict(extra), est
    for lay in _layouts(s, n, stated_fields, search.heads(s)):
        changes = {**extra, **lay}
        est = search.run(changes)
        if est is not None and est.fits:
            return changes, est
    return None


def _min_gpus(
    search: _Search, extra: dict[str, Any], stated_fields: set[str], fits_as_is: bool = False
) -> tuple[int, dict[str, Any], Fit] | None:
    """Fewest GPUs (powers of two up to max_gpus, and the job's own count) that fit with `extra` applied,
    by binary search: per-GPU memory does not grow with more GPUs under ZeRO-3 / TP sharding.
    `fits_as_is`: the job fits on its own count, so the fewest is at most that many (no larger count is
    probed: there a stated TP/PP may have no layout at all, which is no verdict on memory)."""
    n0 = search.resolved(extra).num_gpus or 1
    top = n0 if fits_as_is else search.max_gpus
    counts = sorted({1 << k for k in range(top.bit_length()) if 1 << k <= top} | {n0})
    lo, hi = 0, len(counts) - 1
    best: tuple[int, dict[str, Any], Fit] | None = None
    if not fits_as_is and not extra and search.base.scenario.task != "inference":
        # training: the largest count the job can be laid out on first: when even it does not fit, no count
        # does (the same monotonicity the search rests on) and one probe answers what the search would take
        # log2(counts) probes for. Activations that no sharding splits make that common in training;
        # serving nearly always fits on some count (TP and PP split its weights), so it is not tried there.
        s = search.resolved(extra)
        heads = search.heads(s)
        while hi > 0 and counts[hi] != n0 and not _layouts(s, counts[hi], stated_fields, heads):
            hi -= 1
        got = _fit_at(search, extra, counts[hi], stated_fields)
        if got is None:
            return None
        best, hi = (counts[hi], got[0], got[1]), hi - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        got = _fit_at(search, extra, counts[mid], stated_fields)
        if got is not None:
            best, hi = (counts[mid], got[0], got[1]), mid - 1
        else:
            lo = mid + 1
    return best


def _layout_parts(changes: dict[str, Any]) -> list[dict[str, Any]]:
    """How a GPU count's layout reads, as LAYOUT_CODES parts (its words: suggestions.toml [layout])."""
    if changes.get("num_gpus") == 1:
        return [{"code": "same_settings", "values": {}}]
    parts: list[dict[str, Any]] = []
    if changes.get("tp", 1) > 1:
        code = "tp_sp" if changes.get("sequence_parallel") else "tp"
        parts.append({"code": code, "values": {"tp": changes["tp"]}})
    if changes.get("pp", 1) > 1:
        parts.append({"code": "pp", "values": {"pp": changes["pp"]}})
    if changes.get("zero_stage"):
        parts.append({"code": "zero", "values": {"stage": changes["zero_stage"]}})
    return parts or [{"code": "data_parallel", "values": {}}]


def _ladder(search: _Search, start: tuple[Move, ...], levers: Iterable[Any]) -> tuple[Candidate, Fit] | None:
    """Stack levers one by one on `start`; return the first rung that fits (later rungs only cost more)."""
    cand = _compose(start)
    if start and (est := search.run(cand.changes)) is not None and est.fits:
        return cand, est
    for lever in levers:
        mv = lever.move(search.resolved(cand.changes))
        if mv is None:
            continue
        cand = _extend(cand, mv)
        est = search.run(cand.changes)
        if est is not None and est.fits:
            return cand, est
    return None


def _dominates(k: tuple[Any, ...], kept: Suggestion, key: tuple[Any, ...], sg: Suggestion) -> bool:
    """A kept suggestion (cost key `k`) makes `sg` (cost `key`) pointless when it is no worse on GPUs,
    fidelity, speed and memory; or no worse on GPUs, fidelity and speed while `sg` is a superset of it
    (the same changes, a higher ZeRO stage, plus more): the extra changes buy nothing."""
    if k[0] < key[0] and k[1] <= key[1] and k[2] <= SLOWDOWN_OFFLOAD_OPTIMIZER:  # buying GPUs is no fix then
        return True
    if not (k[0] <= key[0] and k[1] <= key[1] and k[2] <= key[2]):  # GPUs, fidelity, speed
        return False
    if k[3] <= key[3]:  # and memory
        return True
    mine, theirs = kept.scenario_changes, sg.scenario_changes
    if not set(mine) <= set(theirs):
        return False

    def covers(f: str) -> bool:  # the same value, or a stronger setting of the same number (ZeRO 2 -> 3)
        a, b = mine[f], theirs[f]
        return a == b or (isinstance(a, int) and isinstance(b, int) and f == "zero_stage" and b >= a)

    return all(covers(f) for f in mine)


def _prune(search: _Search, cand: Candidate, est: Fit) -> tuple[Candidate, Fit]:
    """The smallest subset of `cand`'s moves that still fits: drop each move in turn (latest, i.e. most
    expensive, first) and keep the drop when the rest still fits."""
    moves = list(cand.moves)
    for mv in reversed(list(cand.moves)):
        if len(moves) <= 1:
            break
        rest = [m for m in moves if m is not mv]
        trial = _compose(rest)
        got = search.run(trial.changes)
        if got is not None and got.fits:
            moves, cand, est = rest, trial, got
    return cand, est


Scored = tuple[tuple[Any, ...], tuple[int, int], Suggestion]  # (cost key, where it was found, suggestion)


def _cheapest(scored: list[Scored], limit: int) -> list[tuple[tuple[Any, ...], Suggestion]]:
    """The `limit` cheapest suggestions (cost key order; of equal keys, the one found first in the
    search's order: the GPU count, single levers, ladders, more GPUs), dropping what a cheaper kept one
    dominates."""
    kept: list[tuple[tuple[Any, ...], Suggestion]] = []
    for key, _, sg in sorted(scored, key=lambda x: (x[0], x[1])):
        if any(_dominates(k, o, key, sg) for k, o in kept):
            continue
        kept.append((key, sg))
        if len(kept) >= limit:
            break
    return kept


def plan(
    base: Estimate,
    *,
    limit: int = 4,
    max_gpus: int = MAX_GPUS_DEFAULT,
    estimate_fn: Callable[[Scenario], Estimate] | None = None,
) -> PlanResult:
    """Cheapest `limit` changes that fit (ordered by the module's cost model) and min_gpus.

    Candidates are checked with `tools.estimator.verdict_of` (the verdict of `estimate(s, plan=False)`);
    with `estimate_fn` (an Estimate per scenario) they are estimated with it instead. The steps: the
    fewest GPUs of the job as stated, then (when it does not fit) ladders, single levers and more GPUs
    with the light levers.
    """
    search = _Search(
        base=base, stated=_stated_scenario(base), estimate_fn=_checker(estimate_fn), max_gpus=max_gpus
    )
    stated_fields = {f for f in Scenario.model_fields if getattr(search.stated, f) is not None}
    with memo_scope():  # the candidates share their pure steps (tools/call_memo.py)
        # the ladders before the single levers: what they find lets the cheapest-first single levers stop
        # early (a suggestion's place among equal costs is still the order of the module docstring)
        found = _min_gpus(search, {}, stated_fields, fits_as_is=base.fits)
        kept = _Suggestions(base.scenario, search.stated)
        _gpu_count_suggestion(kept, base, found)
        if not base.fits:
            _ladders(search, kept)
            _single_levers(search, kept, limit)
            _more_gpus(search, kept, found, stated_fields, limit)
    min_gpus_changes: dict[str, Any] | None = None
    if found is not None:
        min_gpus_changes = {} if (base.fits and found[0] == (base.scenario.num_gpus or 1)) else dict(found[1])
    return PlanResult(
        suggestions=[sg for _, sg in kept.cheapest(limit)],
        min_gpus=found[0] if found else None,
        min_gpus_changes=min_gpus_changes,
        evaluated=search.evaluated,
    )


def _checker(estimate_fn: Callable[[Scenario], Estimate] | None) -> Callable[[Scenario], Fit]:
    """How a candidate is checked: `tools.estimator.verdict_of`, or the Estimate of `estimate_fn`."""
    from tools.estimator import verdict_of

    if estimate_fn is None:
        return verdict_of
    given = estimate_fn

    def check(s: Scenario) -> Fit:
        return _fit_of_estimate(given(s))

    return check


@dataclass
class _Suggestions:
    """The fitting candidates found so far, each with its cost key (module docstring, cost model)."""

    base: Scenario  # the resolved job: what fidelity and speed are compared with
    stated: Scenario
    scored: list[Scored] = field(default_factory=list)
    # (len(scored), limit) when `cheapest` was last worked out, and what it was
    _cheapest_memo: tuple[int, int, list[tuple[tuple[Any, ...], Suggestion]]] = (-1, 0, [])

    def outranked(self, known: tuple[Any, ...], limit: int) -> bool:
        """Could a candidate whose cost key starts with `known` never be shown? True when the `limit`-th
        cheapest suggestion kept so far costs less on those first terms already."""
        if len(self.scored) < limit:
            return False
        # a lower bound first (dominated suggestions only raise the limit-th): no sort and no dominance
        # check for the common candidate that could still be shown
        if known <= heapq.nsmallest(limit, (k for k, _, _ in self.scored))[-1][: len(known)]:
            return False
        cheapest = self.cheapest(limit)
        return len(cheapest) >= limit and known > cheapest[-1][0][: len(known)]

    def cheapest(self, limit: int) -> list[tuple[tuple[Any, ...], Suggestion]]:
        """`_cheapest(self.scored, limit)`, worked out again only when a suggestion was kept since."""
        if self._cheapest_memo[:2] != (len(self.scored), limit):
            self._cheapest_memo = (len(self.scored), limit, _cheapest(self.scored, limit))
        return self._cheapest_memo[2]

    def add(
        self,
        code: str,
        changes: dict[str, Any],
        est: Fit,
        moves: list[dict[str, Any]] | None = None,
        values: dict[str, Any] | None = None,
        *,
        order: tuple[int, int],
    ) -> None:
        """Keep a fitting candidate: `code` (CHANGE_CODES) with its `values`, `moves` (MOVE_CODES parts, in
        order) and, for a GPU-count change, its layout parts; the words are the service's."""
        # "without offload" is a constraint of the question: no suggestion brings offload back
        no_offload = [f for f in ("offload_optimizer", "offload_params") if getattr(self.stated, f) == "none"]
        if any(changes.get(f) not in (None, "none") for f in no_offload):
            return
        s = self.base
        fid, slow = fidelity_rank(s, changes), step_time_factor(s, changes)
        n = est.scenario.num_gpus or 1
        key = (n, fid, round(slow, 3), est.total_bytes, len(changes))
        layout = _layout_parts(changes) if code != "moves" else []
        sg = constructed(
            Suggestion,  # built from checked values: no validation per candidate
            change=None,
            scenario_changes=dict(changes),
            total_bytes=est.total_bytes,
            fits=est.fits,
            num_gpus=n,
            rationale=None,
            change_code=code,
            change_values=dict(values or {}),
            moves=list(moves or []),
            layout_parts=layout,
            fidelity_rank=fid,
            step_time_factor=slow,
        )
        self.scored.append((key, order, sg))


def _gpu_count_suggestion(
    kept: _Suggestions, base: Estimate, found: tuple[int, dict[str, Any], Fit] | None
) -> None:
    """Fewer GPUs when the job fits as asked on more than it needs; more when it needs more."""
    n0 = base.scenario.num_gpus or 1
    if found is not None and found[0] < n0 and base.fits:
        # the user asked for more GPUs than the job needs: say so (never when it does not fit as asked)
        kept.add("fewer_gpus", found[1], found[2], values={"gpus": found[0], "asked": n0}, order=(0, 0))
    elif found is not None and found[0] > n0:
        kept.add("more_gpus", found[1], found[2], values={"gpus": found[0], "asked": n0}, order=(0, 0))


def _single_levers(search: _Search, kept: _Suggestions, limit: int) -> None:
    """Each single lever at the job's GPU count, cheapest first by the part of its cost key known before
    it is estimated (GPUs, fidelity, speed: only the memory needs the estimate); once `limit` kept
    suggestions all cost less than a lever could, that lever and every later one could never be shown,
    and are not estimated: the search stops once the cheapest fits are found."""
    s = kept.base
    n0 = s.num_gpus or 1
    pending = []
    for index, lever in enumerate(SINGLE_LEVERS):
        mv = lever.move(s)
        if mv is not None:
            cand = _compose([mv])
            known = (n0, fidelity_rank(s, cand.changes), round(step_time_factor(s, cand.changes), 3))
            pending.append((known, index, cand))
    for known, index, cand in sorted(pending, key=lambda x: (x[0], x[1])):
        if kept.outranked(known, limit):
            break
        est = search.run(cand.changes)
        if est is not None and est.fits:
            kept.add("moves", cand.changes, est, moves=cand.parts, order=(1, index))


def _ladders(search: _Search, kept: _Suggestions) -> None:
    """The ladder under the job's own method, then under LoRA and QLoRA; each fitting rung pruned to
    the smallest set of its moves that still fits."""
    s = kept.base
    ladder = INFERENCE_LADDER if s.task == "inference" else MEMORY_LADDER
    starts: list[tuple[Move, ...]] = [()]
    if s.task != "inference":
        starts += [(mv,) for lever in (UseLora(), UseQlora()) if (mv := lever.move(s)) is not None]
    for index, start in enumerate(starts):
        res = _ladder(search, start, ladder)
        if res is not None:
            cand, est = _prune(search, res[0], res[1])
            kept.add("moves", cand.changes, est, moves=cand.parts, order=(2, index))


def _more_gpus(
    search: _Search,
    kept: _Suggestions,
    found: tuple[int, dict[str, Any], Fit] | None,
    stated_fields: set[str],
    limit: int,
) -> None:
    """More GPUs with the cheap no-fidelity levers (training) or quantised weights (inference); skipped
    when `limit` suggestions at the job's own GPU count are already kept: a suggestion on more GPUs
    sorts after them (GPUs first in the cost key), so it could never be shown."""
    s = kept.base
    n0 = s.num_gpus or 1
    groups: list[tuple[Any, ...]]
    if sum(1 for key, _ in kept.cheapest(limit) if key[0] <= n0) >= limit:
        groups = []
    elif s.task != "inference":
        groups = [(Checkpointing(), EightBitOptimizer())]
        if not megatron_layouts(s):  # no TP/SP to split activations: a smaller micro-batch under ZeRO-3
            groups.append((Checkpointing(), EightBitOptimizer(), SmallerMicroBatch(1)))
    else:
        groups = [(QuantizedWeights("fp8"),), (QuantizedWeights("int4"),)]
    for index, group in enumerate(groups):
        light = [m for lv in group if (m := lv.move(s)) is not None]
        if not light:
            continue
        cand = _compose(light)
        at_n0 = search.run(cand.changes)
        if at_n0 is not None and at_n0.fits:
            continue  # the light moves fit on the job's own GPUs: no count above it is the fewest
        got = _min_gpus(search, cand.changes, stated_fields)
        if got is not None and got[0] > n0 and (found is None or got[0] < found[0]):
            kept.add(
                "moves_on_gpus", got[1], got[2], moves=cand.parts, values={"gpus": got[0]}, order=(3, index)
            )
