"""The inverse searches (tools/inverse.py) and the comparison order (tools/compare.py) on hand-checked cases:
the gallop + bisection finds a monotone edge exactly, every edge fits and the step beyond does not, the
caps hold (the model's window, the engine's pool), formats go by their real bits per weight, the fewest
GPUs assume a cheap fix and say the configured count, and the winner follows the declared order."""

from __future__ import annotations

import pytest

from tools import inverse
from tools.compare import estimate_options, winner
from tools.estimator import estimate, verdict_of
from tools.scenario import Scenario


@pytest.mark.parametrize(
    ("edge", "low", "limit", "step"),
    [(37, 1, 1000, 1), (1, 1, 64, 1), (1000, 1, 1000, 1), (96, 16, 4096, 16)],
)
def test_largest_finds_a_monotone_edge(edge: int, low: int, limit: int, step: int) -> None:
    calls: list[int] = []

    def fits(n: int) -> bool:
        calls.append(n)
        return n <= edge

    assert inverse.largest(fits, low, limit, step) == edge
    assert len(calls) <= 2 * (limit // step).bit_length() + 2  # O(log n) verdicts
    assert inverse.largest(lambda n: False, low, limit, step) is None


def _edge_holds(edge: inverse.Edge) -> None:
    assert edge.at is not None and verdict_of(edge.at).fits
    assert edge.beyond is not None and not verdict_of(edge.beyond).fits


def test_largest_micro_batch_of_a_qlora_job() -> None:
    edge = inverse.max_batch(Scenario(model="llama-3-8b", task="qlora", gpu="4090", seq_len=2048))
    assert (edge.field, edge.value) == ("batch_size", 3)
    _edge_holds(edge)
    assert (edge.at.batch_size, edge.beyond.batch_size) == (3, 4)


def test_concurrency_is_the_vllm_pool_figure() -> None:
    job = Scenario(
        model="qwen2.5-7b",
        task="inference",
        gpu="a100",
        seq_len=8192,
        engine="vllm",
        gpu_memory_utilization=0.5,
    )
    edge = inverse.max_batch(job)
    # the engine's pool stops the search before the job's total does (issue 24: the total is the job's
    # need, the reservation is said beside it): the edge is the pool's figure, with no step beyond
    assert (edge.field, edge.value, edge.capped_by, edge.beyond) == (
        "concurrent_sequences",
        55,
        "kv_pool",
        None,
    )
    assert edge.at is not None and verdict_of(edge.at).fits
    assert edge.value == estimate(edge.at, plan=False).serving.max_concurrent_sequences


def test_longest_context_is_capped_by_the_window() -> None:
    edge = inverse.max_context(Scenario(model="qwen2.5-7b", task="inference", gpu="h100"))
    assert (edge.value, edge.capped_by, edge.beyond) == (32_768, "model_window", None)
    assert verdict_of(edge.at).fits and edge.details["window"] == 32_768
    short = inverse.max_context(Scenario(model="qwen2.5-7b", task="inference", gpu="4090"))
    assert short.capped_by is None and short.value < 32_768
    _edge_holds(short)


def test_formats_go_by_their_real_bits_per_weight() -> None:
    for model in ("llama-2-7b", "qwen2.5-14b"):
        edge = inverse.best_format(
            Scenario(model=model, task="inference", gpu="3060-12gb", engine="ollama", seq_len=4096)
        )
        bits = [b for _, b, _ in edge.details["formats"]]
        assert bits == sorted(bits, reverse=True) and bits[0] == 16.0
        names = [n for n, _, _ in edge.details["formats"]]
        first_fit = next(n for n, _, fits in edge.details["formats"] if fits)
        assert edge.value == first_fit and edge.beyond.weight_dtype == names[names.index(first_fit) - 1]
        _edge_holds(edge)
    q8 = inverse.weight_bits(
        Scenario(model="llama-2-7b", task="inference", gpu="4090", engine="llama.cpp", weight_dtype="q8_0")
    )
    assert q8 is not None and 8.0 < q8 <= 8.5  # ggml q8_0: 34 bytes a block of 32 weights = 8.5 bits at most


def test_largest_model_with_catalog_neighbours() -> None:
    edge = inverse.max_params(Scenario(model="llama-3-8b", task="lora", gpu="4090"))
    assert edge.value == 5_300_000_000
    _edge_holds(edge)
    assert verdict_of(edge.under).fits and not verdict_of(edge.over).fits
    assert estimate(edge.under, plan=False).params_total < estimate(edge.over, plan=False).params_total


def test_fewest_gpus_assume_a_cheap_fix_and_say_the_configured_count() -> None:
    job = Scenario(model="llama-2-70b", task="full_finetune", gpu="a100-80gb", num_gpus=8, seq_len=2048)
    edge = inverse.fewest_gpus(job)
    assert (edge.value, edge.details["as_configured"]) == (16, 32)
    fix = edge.details["fix"]
    assert fix.fidelity_rank == 0 and fix.step_time_factor <= inverse.MAX_FIX_SLOWDOWN
    _edge_holds(edge)
    assert (edge.at.num_gpus, edge.beyond.num_gpus) == (16, 8)


def test_rank_and_generations_and_completion() -> None:
    rank = inverse.max_lora_rank(Scenario(model="llama-3-8b", task="qlora", gpu="4090"))
    _edge_holds(rank)
    wide = inverse.max_lora_rank(Scenario(model="qwen2.5-7b", task="qlora", gpu="a100"))
    assert (wide.value, wide.capped_by) == (3584, "hidden_size")  # Qwen2.5-7B hidden size
    grpo = Scenario(model="qwen2.5-7b", task="grpo", gpu="h100", lora_rank=64)
    gens = inverse.max_generations(grpo)
    _edge_holds(gens)
    assert gens.at.batch_size == gens.value  # one prompt's group on the one GPU
    completion = inverse.max_completion(grpo)
    assert completion.capped_by == "model_window" and completion.at.seq_len == 32_768


@pytest.mark.parametrize(("gpu", "expected"), [("a100", "LoRA"), ("4090", "QLoRA")])
def test_the_winner_follows_the_declared_order(gpu: str, expected: str) -> None:
    job = Scenario(model="llama-3-8b", task="lora", gpu=gpu)
    options = estimate_options(job, [("LoRA", {"task": "lora"}), ("QLoRA", {"task": "qlora"})])
    assert options[winner(options, "task")].label == expected  # both fit on an A100: LoRA gives up less
    cards = estimate_options(job.merged(task="qlora"), [("4090", {"gpu": "4090"}), ("A100", {"gpu": "a100"})])
    assert cards[winner(cards, "gpu")].label == "A100"  # the same job: more headroom on the larger card
