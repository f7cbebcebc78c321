"""The interviewer's follow-ups, probe by probe, on the estimator's own figures: a figure that counts only
some components asks for the rest; each known trap asks about itself; a wrong yes/no asks for the
per-GPU total; a wrong count for the KV bytes per token; and the arc goes deeper only after a right first
answer from level 2."""

from __future__ import annotations

import pytest

from service.coach.expected import estimate_for, expected_value
from service.coach.interview.arc import ARC, Setting, next_point, point_spec
from service.coach.interview.probe import counted_subset, probe

SETTING = Setting(model="llama-3-8b", moe_model="qwen3-30b-a3b")


def _ask(point: str, given: dict, nth: int = 1, language: str = "en"):  # type: ignore[no-untyped-def]
    spec = point_spec(point, SETTING, 2)
    est = estimate_for(spec.scenario, spec.quantity)
    return probe(spec, est, expected_value(est, spec.quantity), given, nth, language)


def test_weights_only_for_training_asks_what_else_is_in_memory() -> None:
    spec = point_spec("rule_16x", SETTING, 2)
    est = estimate_for(spec.scenario, spec.quantity)
    weights = est.component("weights").bytes  # 8,030,261,248 x 2 B
    assert weights == 16_060_522_496
    p = _ask("rule_16x", {"bytes": 15 * 10**9})  # "about 15 GB": the weights, within 10%
    assert p.ask == "missed" and p.quantity == "component:gradients+master_weights+optimizer_states"
    assert p.values["counted"] == "weights"
    rest = expected_value(estimate_for(spec.scenario, p.quantity), p.quantity)["bytes"]
    assert rest == 16_060_522_496 + 32_121_044_992 + 64_242_089_984  # 2 + 4 + 8 bytes a parameter
    # weights and gradients counted: the master copy and Adam's moments are missing
    assert counted_subset(
        {"weights": 16, "gradients": 16, "master_weights": 32, "optimizer_states": 64}, 32
    ) == (["weights", "gradients"], ["master_weights", "optimizer_states"])


@pytest.mark.parametrize(
    ("point", "given", "ask"),
    [
        ("kv_cache", {"bytes": 2 * 32 * 4096 * 2}, "gqa"),  # 2 x L x h x B: 512 KiB, not 128 KiB
        ("moe", {"bytes": 3_350_000_000 * 2}, "moe_active"),  # the ~3.35B active parameters in bf16
        ("ppo", {"bytes": 2 * 16_060_522_496}, "ppo_two"),  # actor and critic only
        ("zero", {"bytes": 128_484_179_968}, "zero_unsharded"),  # 16 bytes a parameter, unsharded
        ("lora", {"fits": False}, "fits_total"),
        ("serving", {"count": 40}, "kv_token"),
    ],
)
def test_each_trap_gets_its_own_follow_up(point: str, given: dict, ask: str) -> None:
    p = _ask(point, given)
    assert p.ask == ask
    if ask in ("gqa", "moe_active", "ppo_two", "zero_unsharded"):  # the same figure asked again
        assert p.quantity == point_spec(point, SETTING, 2).quantity
    if ask == "gqa":
        assert (p.values["heads"], p.values["kv_heads"]) == (32, 8)


def test_one_component_ratio_then_formula() -> None:
    first = _ask("weights_precision", {"bytes": 3 * 16_060_522_496})
    assert first.ask == "too_high" and first.values["ratio"] == "3.0"
    second = _ask("weights_precision", {"bytes": 3 * 16_060_522_496}, nth=2)
    assert second.ask == "formula" and second.values["formula"] == "P_local x 2 B"
    low = _ask("weights_precision", {"bytes": 16_060_522_496 // 2})
    assert low.ask == "too_low" and low.values["ratio"] == "2.0"


def test_the_arc_goes_deeper_only_after_a_right_first_answer_from_level_two() -> None:
    assert next_point([], False, 2) == "weights_precision"
    assert next_point(["weights_precision"], True, 2) == "quantization"
    assert next_point(["weights_precision"], True, 1) == "rule_16x"
    assert next_point(["weights_precision"], False, 3) == "rule_16x"
    assert next_point(["weights_precision", "quantization"], True, 2) == "rule_16x"
    assert next_point(list(ARC), True, 2) == "zero3"
    assert next_point([*ARC, "zero3"], True, 2) is None


@pytest.mark.parametrize(
    ("answer", "read"),
    [
        ("about 112 GB: 16 bytes a parameter times 7B", 112 * 10**9),
        ("14 GB (7B x 2 bytes)", 14 * 10**9),
        (
            "7B x 2 bytes = 14 GB, plus gradients and Adam states, 16 bytes a parameter, about 112 GB",
            112 * 10**9,
        ),
        ("大概 112GB（每个参数16个字节）", 112 * 10**9),
        ("每个参数 16 字节，一共 112GB，再加2字节", 112 * 10**9),
        ("1.2e11 bytes", 120 * 10**9),
    ],
)
def test_a_figure_with_its_reasoning_is_read_as_the_figure(answer: str, read: int) -> None:
    from service.coach.answers import parse_answer
    from service.coach.interview.reading import answer_text

    assert parse_answer(answer_text(answer, "bytes")).readings[0][0] == read
    assert answer_text("128 bytes", "small_bytes") == "128 bytes"  # KV per token: bytes are the answer
