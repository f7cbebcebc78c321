"""Inverse questions searched with the estimator itself: the largest (or fewest) value of one field at which
the job still fits, and the step beyond it.

Every field searched here is monotone in the per-GPU total (more sequences, more tokens, a larger model, a
larger LoRA rank, more or longer GRPO samples never need less memory; fewer GPUs never need less per GPU),
so a gallop (1, 2, 4, ... until the first that does not fit) and a bisection between the last two find the
edge in O(log n) verdicts. Each verdict is `tools.estimator.verdict_of` of the job *as stated* with the one
field changed (the planner's check, tools/planner.py `_Search`): the figure a forward question about the
edge scenario would give.

An `Edge` names the field, the value at the edge, the stated scenario there (fits) and one step beyond it
(does not fit), or `capped_by` when a limit other than memory stops the search first:
- `model_window`: the model's context window (max_position_embeddings; vLLM's max_model_len default);
- `kv_pool`: a serving engine's KV pool (vLLM `gpu_memory_utilization`, SGLang `mem_fraction_static`)
  holds fewer sequences or tokens than the card's budget would (the estimate's `serving` block);
- `search_limit`: the largest value searched (SEARCH_LIMITS) still fits;
- `hidden_size`: a LoRA rank above the model's hidden size adds nothing (the update is full rank);
- `highest_format`: the highest-precision format of the engine already fits;
- `one_gpu`: one GPU fits, there is no fewer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.errors import ScenarioError
from tools.estimator import estimate, verdict_of
from tools.planner import SLOWDOWN_OFFLOAD_OPTIMIZER
from tools.result import Estimate, Suggestion
from tools.scenario import Scenario

# the largest value each search tries (beyond it the question is not a memory question any more)
SEARCH_LIMITS = {
    "batch_size": 1 << 16,
    "seq_len": 1 << 24,
    "lora_rank": 1 << 16,
    "max_new_tokens": 1 << 20,
    "num_generations": 1024,
}
PARAMS_STEP = 100_000_000  # the parameter edge to 0.1 B parameters
PARAMS_LIMIT = 2_000_000_000_000

# Weight formats per engine, highest precision first (the order an engine's users pick them in): the GGUF
# file types llama.cpp's quantize offers (tools/rules/gguf.py FILE_TYPES, bits per weight by its block
# mixes), the formats vLLM/SGLang load (bf16, fp8, int8 W8A8, int4 AWQ/GPTQ), and those transformers loads
# (bf16, fp8, bitsandbytes int8 and nf4).
_GGUF_FORMATS = ("fp16", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q4_k_m", "q4_k_s", "iq4_xs", "q3_k_l", "q3_k_m")
FORMATS_BY_ENGINE = {
    "llama.cpp": (*_GGUF_FORMATS, "q3_k_s", "q2_k", "iq2_m", "iq2_xs", "iq1_m"),
    "vllm": ("bf16", "fp8", "int8", "int4"),
    "sglang": ("bf16", "fp8", "int8", "int4"),
    "transformers": ("bf16", "fp8", "int8", "nf4"),
}
FORMATS_BY_ENGINE["ollama"] = FORMATS_BY_ENGINE["llama.cpp"]
POOL_ENGINES = frozenset({"vllm", "sglang"})  # engines that serve from a pre-allocated KV pool


@dataclass
class Edge:
    """The edge of one search: `value` at `at` (fits), `beyond` one step past it (does not fit), or
    `capped_by` the limit that stopped the search first. `value` None: not even the smallest value fits
    (then `beyond` is that smallest value). `under`/`over`: for a model-size search, the catalog models of
    the family just under (fits) and over (does not fit) the edge, estimated."""

    kind: str  # max or min
    field: str
    value: int | float | str | None
    at: Scenario | None = None
    beyond: Scenario | None = None
    capped_by: str | None = None
    under: Scenario | None = None
    over: Scenario | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _fits(s: Scenario | None) -> bool:
    """The estimator's verdict; a scenario it rejects does not fit."""
    if s is None:
        return False
    try:
        return verdict_of(s).fits
    except (ScenarioError, ValueError):
        return False


def _with(stated: Scenario, **changes: Any) -> Scenario | None:
    """The stated job with `changes`, or None when the change is not a valid scenario."""
    try:
        return stated.merged(**changes)
    except (ScenarioError, ValueError):
        return None


def largest(fits: Callable[[int], bool], low: int, limit: int, step: int = 1) -> int | None:
    """The largest n in low, low+step, ..., limit with fits(n), for a monotone `fits` (true up to the edge,
    false past it): gallop by doubling from `low`, then bisect. None when fits(low) is false."""
    if not fits(low):
        return None
    good, span = low, step
    bad: int | None = None
    while bad is None:
        trial = min(low + span, limit)
        if trial == good:
            return good
        if fits(trial):
            good = trial
            if trial >= limit:
                return good
            span *= 2
        else:
            bad = trial
    while bad - good > step:
        mid = good + (bad - good) // (2 * step) * step
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def search_max(
    stated: Scenario,
    name: str,
    low: int = 1,
    cap: int | None = None,
    cap_code: str = "",
    changes: Callable[[int], dict[str, Any]] | None = None,
) -> Edge:
    """The largest value of the integer field `name` at which the stated job fits (`cap`: a limit other
    than memory, named `cap_code`; `changes`: the fields a value sets, {name: value} when not given)."""
    limit = min(SEARCH_LIMITS[name], cap) if cap else SEARCH_LIMITS[name]
    setting = changes or (lambda n: {name: n})
    edge = largest(lambda n: _fits(_with(stated, **setting(n))), low, limit)
    if edge is None:
        return Edge("max", name, None, beyond=_with(stated, **setting(low)))
    at = _with(stated, **setting(edge))
    if edge >= limit:
        code = cap_code if cap and cap <= SEARCH_LIMITS[name] else "search_limit"
        return Edge("max", name, edge, at=at, capped_by=code)
    return Edge("max", name, edge, at=at, beyond=_with(stated, **setting(edge + 1)))


def model_window(stated: Scenario) -> int:
    """The model's context window (max_position_embeddings of the resolved architecture)."""
    from tools.resolve import resolve

    return resolve(stated).model.arch.max_position_embeddings


def _engine(est: Estimate) -> str:
    return est.scenario.engine or "transformers"


def _pool_capped(edge: Edge, name: str, pool_value: Callable[[Estimate], int | None]) -> Edge:
    """A serving engine's KV pool may hold fewer than the card's budget: the edge is capped there."""
    if edge.at is None:
        return edge
    est = estimate(edge.at, plan=False)
    if _engine(est) not in POOL_ENGINES or est.serving is None:
        return edge
    pool = pool_value(est)
    if pool is None or not isinstance(edge.value, int) or pool >= edge.value:
        return edge
    if pool < 1:
        return Edge("max", edge.field, None, beyond=edge.at, capped_by="kv_pool")
    return Edge("max", edge.field, pool, at=edge.at.merged(**{name: pool}), capped_by="kv_pool")


def max_batch(stated: Scenario) -> Edge:
    """Training: the largest micro-batch; serving: the most concurrent sequences of the stated context."""
    edge = search_max(stated, "batch_size")
    if estimate(stated, plan=False).scenario.task != "inference":
        return edge
    edge.field = "concurrent_sequences"
    return _pool_capped(
        edge, "batch_size", lambda e: e.serving.max_concurrent_sequences if e.serving else None
    )


def max_context(stated: Scenario) -> Edge:
    """The longest context (tokens per sequence) at the stated batch, capped by the model's window."""
    window = model_window(stated)
    edge = search_max(stated, "seq_len", cap=window, cap_code="model_window")
    edge.details["window"] = window
    if estimate(stated, plan=False).scenario.task == "inference" and (stated.batch_size or 1) == 1:
        edge = _pool_capped(
            edge, "seq_len", lambda e: e.serving.max_context_at_batch_1 if e.serving else None
        )
        edge.details["window"] = window
    return edge


def max_lora_rank(stated: Scenario) -> Edge:
    """The largest LoRA rank (a LoRA/QLoRA job; a plain fine-tune is asked as LoRA)."""
    from tools.resolve import resolve

    job = stated if stated.task in ("lora", "qlora", "grpo", "ppo", "dpo") else stated.merged(task="lora")
    hidden = resolve(job).model.arch.hidden_size
    return search_max(job, "lora_rank", cap=hidden, cap_code="hidden_size")


def max_completion(stated: Scenario) -> Edge:
    """The longest GRPO completion (max_new_tokens) with the prompt kept as it is (seq_len = prompt +
    completion, tools/resolution/checks.py check_max_new_tokens), capped by the model's window."""
    job = stated if stated.task in ("grpo", "ppo") else stated.merged(task="grpo")
    resolved = estimate(job, plan=False).scenario
    prompt = max(0, (resolved.seq_len or 0) - (resolved.max_new_tokens or 0))
    window = model_window(job)
    edge = search_max(
        job,
        "max_new_tokens",
        cap=max(1, window - prompt),
        cap_code="model_window",
        changes=lambda n: {"max_new_tokens": n, "seq_len": prompt + n},
    )
    edge.details.update(window=window, prompt=prompt)
    return edge


def max_generations(stated: Scenario) -> Edge:
    """The most GRPO generations per prompt when one prompt's group is trained at once: TRL spreads the G
    completions of a prompt over the global batch (trl/trainer/grpo_trainer.py RepeatRandomSampler; the
    global batch must be a multiple of G), so G completions over the job's GPUs is a micro-batch of
    ceil(G / GPUs) completions on each. Without that, G alone moves no GPU's memory (tools/rl.py)."""
    job = stated if stated.task == "grpo" else stated.merged(task="grpo")
    gpus = job.num_gpus or 1
    return search_max(
        job, "num_generations", changes=lambda n: {"num_generations": n, "batch_size": -(-n // gpus)}
    )


def _bare_size(stated: Scenario, params: int) -> Scenario | None:
    """The stated job on a bare-size model of `params` parameters (the estimator's typical shape of that
    size, tools/resolution/model.py)."""
    return _with(stated, model=None, architecture=None, params=params)


def _family_models(stated: Scenario) -> list[Any]:
    """The catalog models of the stated model's family (every catalog model when none is named), smallest
    first."""
    from tools.catalog import list_models, lookup_model

    named = lookup_model(stated.model) if stated.model else None
    models = [m for m in list_models() if named is None or m.family == named.family]
    return sorted(models, key=lambda m: m.params)


def max_params(stated: Scenario) -> Edge:
    """The largest model that fits the task on the stated cards: the parameter edge of a bare size (to
    PARAMS_STEP), and the catalog models of the family just under (fits) and over (does not fit) it."""
    limit = PARAMS_LIMIT // PARAMS_STEP
    steps = largest(lambda n: _fits(_bare_size(stated, n * PARAMS_STEP)), 1, limit)
    edge = Edge("max", "params", None, beyond=_bare_size(stated, PARAMS_STEP))
    if steps is not None:
        at = _bare_size(stated, steps * PARAMS_STEP)
        beyond = _bare_size(stated, (steps + 1) * PARAMS_STEP) if steps < limit else None
        edge = Edge("max", "params", steps * PARAMS_STEP, at=at, beyond=beyond)
        edge.capped_by = None if beyond is not None else "search_limit"
    # the catalog models just under (fits) and over (does not fit) the edge, each estimated as named (their
    # shapes differ from the bare size's: a model of another family may fit above the edge, and is not "under")
    edge_params = edge.value if isinstance(edge.value, int) else 0
    fitting: list[tuple[int, Scenario, bool]] = []
    for spec in _family_models(stated):
        job = _with(stated, model=spec.id, architecture=None, params=None)
        if job is not None:
            fitting.append((spec.params, job, _fits(job)))
    under = [(n, job) for n, job, fits in fitting if fits and n <= edge_params]
    if under:
        edge.under = max(under, key=lambda t: t[0])[1]
    over = [(n, job) for n, job, fits in fitting if not fits and n > edge_params]
    if over:
        edge.over = min(over, key=lambda t: t[0])[1]
    return edge


BITS_CARD = "1024gb"  # a card every model fits on whole: its weights are all held on the GPU


def weight_bits(job: Scenario) -> float | None:
    """The real bits per weight of the job's weight format on its model: the weights and their quantisation
    metadata over the parameters, estimated on one card that holds them all (no TP shards, no llama.cpp
    layers left on the CPU)."""
    whole = _with(job, gpu=BITS_CARD, num_gpus=1, tp=None, pp=None, zero_stage=None)
    if whole is None:
        return None
    try:
        est = estimate(whole, plan=False)
    except (ScenarioError, ValueError):
        return None
    held = sum(c.bytes for c in est.components if c.name in ("weights", "quant_metadata"))
    return 8 * held / max(1, est.params_total)


def best_format(stated: Scenario) -> Edge:
    """The highest-precision weight format of the stated engine that fits, and the next higher one (which
    does not); `details["formats"]`: every format tried, (name, bits per weight, fits), highest first."""
    engine = _engine(estimate(stated, plan=False))
    tried: list[tuple[str, float, bool, Scenario]] = []
    for name in FORMATS_BY_ENGINE.get(engine, FORMATS_BY_ENGINE["transformers"]):  # highest precision first
        job = _with(stated, weight_dtype=name, quant_method=None, weight_bits=None)
        bits = weight_bits(job) if job is not None else None
        if job is None or bits is None:
            continue
        tried.append((name, round(bits, 2), _fits(job), job))
    edge = Edge("max", "weight_dtype", None, beyond=tried[-1][3] if tried else None)
    for i, (name, _, fits, job) in enumerate(tried):
        if fits:
            edge = Edge("max", "weight_dtype", name, at=job, beyond=tried[i - 1][3] if i else None)
            edge.capped_by = None if i else "highest_format"
            break
    edge.details["formats"] = [(name, bits, fits) for name, bits, fits, _ in tried]
    return edge


# The levers a fewest-GPU figure may assume: no change of method or task (tools/planner.py fidelity rank 0) and
# at most optimizer offload's slowdown (tools/planner.py SLOWDOWN_OFFLOAD_OPTIMIZER, ZeRO-Offload 1.5x): micro-batch
# with accumulation, checkpointing, an 8-bit optimizer, fused cross-entropy, ZeRO, optimizer offload, TP; never
# parameter offload stacked on recompute (2.7x).
MAX_FIX_SLOWDOWN = SLOWDOWN_OFFLOAD_OPTIMIZER


def cheap_fix(sg: Suggestion) -> bool:
    """A fitting suggestion the fewest-GPU figure may assume (MAX_FIX_SLOWDOWN, fidelity rank 0)."""
    return sg.fits and sg.fidelity_rank == 0 and (sg.step_time_factor or 1.0) <= MAX_FIX_SLOWDOWN + 1e-9


def fewest_gpus(stated: Scenario) -> Edge:
    """The fewest GPUs of the stated type that fit: the planner's (tools/planner.py `_min_gpus`, powers of
    two with the job's strategy spread over them), and, when a cheap fix needs fewer, that fix
    (`details["as_configured"]` keeps the planner's figure). `beyond`: the job on the count one step
    (half) below, with the same layout, which does not fit."""
    est = estimate(stated, plan=True)
    n, changes = est.min_gpus, dict(est.min_gpus_changes or {})
    # the cheap levers only: a fix that changes the method or the task (LoRA, QLoRA, a shorter context) is
    # another job, not the fewest GPUs of this one (tools/planner.py fidelity ranks)
    fixes = [sg for sg in est.suggestions if cheap_fix(sg) and (n is None or sg.num_gpus < n)]
    details: dict[str, Any] = {"as_configured": n, "layout": changes}
    if fixes:
        best = min(fixes, key=lambda sg: sg.num_gpus)
        n, changes = best.num_gpus, {"num_gpus": best.num_gpus, **best.scenario_changes}
        details["fix"] = best
    if n is None:
        return Edge("min", "num_gpus", None, capped_by="search_limit", details=details)
    from tools.planner import changed_job

    at = changed_job(est, {**changes, "num_gpus": n})
    if n == 1:
        return Edge("min", "num_gpus", 1, at=at, capped_by="one_gpu", details=details)
    fewer = n // 2 if n & (n - 1) == 0 else 1 << (n.bit_length() - 1)
    layout = {"num_gpus": fewer}
    for k in ("tp", "pp"):
        if changes.get(k):
            layout[k] = min(int(changes[k]), fewer)
    beyond = _with(at, **layout)
    return Edge("min", "num_gpus", n, at=at, beyond=beyond, details=details)
