"""Advice that never reads as a contradiction, over the whole golden corpus and on the cases that showed it:
a fix that fits on fewer GPUs at the same fidelity and at most optimizer offload's slowdown leaves no
"more GPUs" suggestion beside it (no "16 x 3090 with ZeRO-3" when checkpointing fits on the one card); a
training layout never splits a model thinner than Megatron-LM's own configurations (a 1.3B model is never
offered TP=8); and the fewest-GPU line says how many a fix needs when that is fewer."""

from __future__ import annotations

import asyncio

from service.agent.base import ConversationState
from service.agent.offline.agent import OfflineAgent
from tests.golden.make_corpus import read_corpus
from tools.catalog import lookup_model
from tools.estimator import estimate
from tools.planner import SLOWDOWN_OFFLOAD_OPTIMIZER
from tools.rules.parallel import MIN_HIDDEN_PER_TP_SHARD, training_tp_cap
from tools.scenario import Scenario


def _cheap(sg: dict) -> bool:
    return sg["fits"] and sg["fidelity_rank"] == 0 and sg["step_time_factor"] <= SLOWDOWN_OFFLOAD_OPTIMIZER


def test_no_more_gpus_beside_a_cheap_fix_on_fewer() -> None:
    checked = 0
    for entry in read_corpus():
        suggestions = (entry.get("estimate") or {}).get("suggestions", [])
        for cheap in filter(_cheap, suggestions):
            for other in suggestions:  # fidelity 0 is the best there is: no suggestion needs more GPUs
                assert other["num_gpus"] <= cheap["num_gpus"], (
                    entry["scenario"],
                    cheap["change"],
                    other["change"],
                )
            checked += 1
    assert checked >= 300


def test_training_tp_keeps_a_thick_shard() -> None:
    offered = 0
    for entry in read_corpus():
        est = entry.get("estimate")
        if not est or est["scenario"]["task"] == "inference" or entry["scenario"].get("tp"):
            continue
        arch = est["scenario"].get("architecture")
        spec = lookup_model(est["scenario"]["model"]) if est["scenario"].get("model") else None
        hidden = (arch or {}).get("hidden_size") or (spec.architecture.hidden_size if spec else None)
        if hidden is None:
            continue
        layouts = [sg["scenario_changes"] for sg in est.get("suggestions", [])] + [
            est.get("min_gpus_changes") or {}
        ]
        for changes in layouts:
            if changes.get("tp", 1) > 1:
                offered += 1
                assert changes["tp"] <= training_tp_cap(hidden), (entry["scenario"], changes, hidden)
    assert offered >= 50


def test_a_small_model_is_never_offered_tp_8() -> None:
    assert training_tp_cap(2048) == 5 and training_tp_cap(4096) == 8 and training_tp_cap(1152) == 3
    assert MIN_HIDDEN_PER_TP_SHARD == 384
    s = Scenario(params=1_300_000_000, task="full_finetune", gpu="3090", batch_size=32, seq_len=2048)
    est = estimate(s)
    assert not est.fits
    layouts = [sg.scenario_changes for sg in est.suggestions] + [est.min_gpus_changes or {}]
    assert all(changes.get("tp", 1) <= 4 for changes in layouts), layouts
    # the one-card fix (8-bit AdamW + micro-batch 1 with accumulation 32, 19.40 GiB) is offered, and no more GPUs
    assert est.suggestions[0].num_gpus == 1 and est.suggestions[0].fits
    assert all(sg.num_gpus == 1 for sg in est.suggestions)


def test_fewest_gpus_line_names_the_fix_that_needs_fewer() -> None:
    answer = asyncio.run(
        OfflineAgent().answer("full fine-tune llama-2-70b on 8 A100 80GB, 2048 tokens", ConversationState())
    )
    est = answer.estimate
    assert est.min_gpus == 32 and not est.fits
    fix = [sg for sg in est.suggestions if _cheap(sg.model_dump())]
    assert min(sg.num_gpus for sg in fix) == 16
    line = next(x for x in answer.summary.splitlines() if x.startswith("Fewest"))
    assert "**32**" in line and "With one of the fixes below: **16** A100 80GB." in line


def test_fewest_gpus_never_sits_above_a_fix_that_needs_fewer_unsaid() -> None:
    """Over the corpus: wherever a cheap fix fits on fewer GPUs than the fewest as configured, the fewest-GPU
    sentence (summary and breakdown alike) names that count too, in both languages."""
    from service.agent.summary import min_gpus_line
    from tools.result import Estimate

    said = 0
    for entry in read_corpus():
        data = entry.get("estimate")
        if not data or data.get("min_gpus") is None:
            continue
        fewer = [
            sg["num_gpus"]
            for sg in data.get("suggestions", [])
            if _cheap(sg) and sg["num_gpus"] < data["min_gpus"]
        ]
        if not fewer:
            continue
        est = Estimate.model_validate(data)
        assert f"With one of the fixes below: **{min(fewer)}**" in (min_gpus_line(est, "en") or "")
        assert f"用下面的修改之一：**{min(fewer)}**" in (min_gpus_line(est, "zh") or "")
        said += 1
    assert said >= 20
