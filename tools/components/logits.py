"""Logits on one GPU (the last pipeline stage), with the vocab-parallel LM head split by t.

- training (tools.rules.logits.training_logits): the loss forward and backward upcast the logits to fp32
  (transformers ForCausalLMLoss): s*b*V/t x bytes per element at the end of forward and in backward;
- generation: the last position's logits, fp32 for sampling, per sequence;
- frozen forward (reference / reward scoring): every position's fp32 log-probs.
"""

from __future__ import annotations

from tools.components.phased import FWD_BWD, At, PhasedComponent, phased
from tools.components.savers import CE_LABELS, SAVER_SOURCES, cross_entropy_logits
from tools.components.step import ModelStep, TrainStep
from tools.rules.logits import SOURCE, inference_logits_entry, training_logits_entry


def loss_logits(ts: TrainStep) -> At:
    """The loss tensors at the end of forward and in the loss backward (none off the last stage).
    Chunked / fused linear cross-entropy: tools/components/savers.py cross_entropy_logits."""
    if not ts.stage.last:
        return {}
    saver = cross_entropy_logits(ts)
    if saver is not None:
        return saver
    tokens = ts.batch * max(1, ts.seq // ts.lay.cp)
    softcap = ts.recipe.activation_bytes if ts.arch.final_logit_softcapping else 0
    return {
        ph: training_logits_entry(tokens=tokens, vocab_local=ts.vocab_local, phase=ph, softcap_bytes=softcap)
        for ph in FWD_BWD
    }


def loss_logits_part(ts: TrainStep, at: At, recompute_moment: bool) -> PhasedComponent | None:
    """At the recomputed layer's moment the loss tensors are gone: no backward entry."""
    if not at:
        return None
    if recompute_moment:
        at = {ph: e for ph, e in at.items() if ph != "backward"}
    ce = ts.rs.scenario.cross_entropy or "standard"
    if ce in CE_LABELS:
        return phased("logits", CE_LABELS[ce], SAVER_SOURCES[ce], at, ts.role)
    return phased("logits", "logits.training", SOURCE, at, ts.role)


def sampling_logits(ms: ModelStep, batch: int, seqs: int) -> PhasedComponent | None:
    if not ms.stage.last:
        return None
    at = {
        "prefill": inference_logits_entry(sequences=batch, vocab_local=ms.vocab_local),
        "decode": inference_logits_entry(sequences=seqs, vocab_local=ms.vocab_local),
    }
    return phased("logits", "logits.sampling", SOURCE, at, ms.role)


def all_position_logits(ms: ModelStep) -> PhasedComponent | None:
    if not ms.stage.last:
        return None
    lg = inference_logits_entry(sequences=ms.batch, vocab_local=ms.vocab_local, positions=ms.seq)
    return phased("logits", "logits.all_positions", SOURCE, {"forward": lg}, ms.role)
