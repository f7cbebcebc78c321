"""Follow-ups that probe a wrong answer, built from the difference between the candidate's figure and the
tool's components (pure functions; texts in prompts/<lang>/coach/interview.toml [follow_up]).

- A figure that is one subset of the components' sum ("14 GB" for training: the weights only) gets
  "what else is in memory, and how much does it add?", graded against the components left out.
- A known trap gets its own question, on the same figure: the multi-head KV formula on a GQA model, the
  unsharded ZeRO figure, an MoE's active parameters, PPO with two models instead of four.
- Otherwise the biggest component alone (several components), or the ratio to the tool's figure first
  and the tool's formula second (one component).
- "It fits" when it does not (or the other way): the per-GPU total. A wrong number of sequences: the KV
  bytes per token. A concept answer: the key points still missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from service.coach.expected import (
    arch_of,
    component_names,
    components_for,
    estimate_for,
    expected_value,
)
from service.coach.interview.text import component_names_label, fmt_figure, say, scenario_values
from service.coach.topics import QuestionSpec
from tools.result import Estimate

SUBSET_MATCH = 0.10  # a rough figure within 10% of some components' sum "counted" exactly those
TRAP_MATCH = 0.10


@dataclass(frozen=True)
class Probe:
    ask: str  # a key of [follow_up]
    quantity: str  # what the follow-up's answer is graded against (the same scenario)
    answer_in: str
    values: dict[str, Any] = field(default_factory=dict)


def _groups(est: Estimate, quantity: str) -> dict[str, int]:
    """Component name -> bytes summed over the models on the GPU (PPO's four weights are one group)."""
    groups: dict[str, int] = {}
    for c in components_for(est, quantity):
        if c.bytes > 0:
            groups[c.name] = groups.get(c.name, 0) + c.bytes
    return groups


def counted_subset(groups: dict[str, int], given: int) -> tuple[list[str], list[str]] | None:
    """(counted, missed) names when `given` is the sum of some but not all groups, most groups first."""
    names = list(groups)
    for k in range(len(names) - 1, 0, -1):
        best: tuple[float, tuple[str, ...]] | None = None
        for subset in combinations(names, k):
            err = abs(sum(groups[n] for n in subset) - given) / max(given, 1)
            if err <= SUBSET_MATCH and (best is None or err < best[0]):
                best = (err, subset)
        if best is not None:
            return list(best[1]), [n for n in names if n not in best[1]]
    return None


def _near(a: float, b: float) -> bool:
    return b > 0 and abs(a - b) / b <= TRAP_MATCH


def trap(spec: QuestionSpec, est: Estimate, expected: int, given: int) -> str | None:
    """The known mistake a figure matches (the same ones the coach's grader names)."""
    arch = arch_of(est)
    heads, kv_heads = arch.num_attention_heads, arch.num_key_value_heads or arch.num_attention_heads
    names = component_names(spec.quantity)
    kv_asked = spec.quantity == "serving.kv_bytes_per_token"
    if kv_asked and kv_heads < heads and _near(given, expected * heads / kv_heads):
        return "gqa"
    moe = names == ["weights"] and arch.num_experts and est.params_total
    if moe and _near(given, expected * est.params_active_per_token / est.params_total):
        return "moe_active"
    if (est.scenario.zero_stage or 0) > 0 and given > expected:
        # the same states without ZeRO (nothing sharded), as the estimator gives them
        unsharded = estimate_for({**spec.scenario, "zero_stage": 0}, spec.quantity)
        if _near(given, expected_value(unsharded, spec.quantity).get("bytes", 0)):
            return "zero_unsharded"
    if est.scenario.task == "ppo" and names and _near(given, expected / 2):
        return "ppo_two"
    return None


def probe_bytes(
    spec: QuestionSpec, est: Estimate, expected: int, given: int, nth: int, language: str
) -> Probe:
    values = {**scenario_values(est, language), "given": fmt_figure(given)}
    same = Probe("", spec.quantity, spec.answer_in, values)
    found = trap(spec, est, expected, given)
    if found:
        return Probe(found, spec.quantity, spec.answer_in, values)
    groups = _groups(est, spec.quantity) if spec.quantity.startswith(("component:", "per_gpu.")) else {}
    if len(groups) > 1:
        split = counted_subset(groups, given) if given < expected else None
        if split is not None:
            counted, missed = split
            values["counted"] = component_names_label(counted, language)
            return Probe("missed", "component:" + "+".join(missed), spec.answer_in, values)
        biggest = max(groups, key=lambda n: groups[n])
        values["part"] = component_names_label([biggest], language)
        return Probe("part", f"component:{biggest}", spec.answer_in, values)
    if nth == 1:
        ratio = given / expected if given > expected else expected / max(given, 1)
        values["ratio"] = f"{ratio:.1f}"
        return Probe("too_high" if given > expected else "too_low", same.quantity, same.answer_in, values)
    values["formula"] = _formula(est, spec.quantity)
    return Probe("formula", same.quantity, same.answer_in, values)


def _formula(est: Estimate, quantity: str) -> str:
    if quantity == "serving.kv_bytes_per_token":
        return "2 x L x g x d x B"
    comps = [c for c in components_for(est, quantity) if c.bytes > 0]
    return " + ".join(dict.fromkeys(c.formula for c in comps))


def probe(
    spec: QuestionSpec,
    est: Estimate | None,
    expected: dict[str, Any],
    given: dict[str, Any],
    nth: int,
    language: str,
    concept_labels: tuple[list[str], int] | None = None,
) -> Probe:
    """The `nth` follow-up (1 or 2) after a wrong answer `given` to `spec`, whose figure is `expected`."""
    if spec.answer_in == "concept":
        hit, missing = concept_labels or ([], 1)
        sep = "、" if language == "zh" else ", "
        values = {"hit": sep.join(hit), "missing_count": missing}
        return Probe("concept_more" if hit else "concept_none", "concept", "concept", values)
    assert est is not None
    values = scenario_values(est, language)
    if spec.answer_in == "fits":
        said = "yes" if given.get("fits") else "no"
        values["said"] = say(language, "feedback", said)
        return Probe("fits_total", "per_gpu.total_bytes", "bytes", values)
    if spec.answer_in == "sequences":
        return Probe("kv_token", "serving.kv_bytes_per_token", "small_bytes", values)
    return probe_bytes(spec, est, int(expected["bytes"]), int(given["bytes"]), nth, language)
