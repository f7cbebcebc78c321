"""Per-model memory footprint on the most loaded GPU, by phase: the estimator's building block.

Public API (tools/rl.py composes PPO/GRPO/DPO from it):

    model_footprint(rs, *, model=None, role=None, mode=None, trainable=None, adapters=None,
                    weight_format=None, batch=None, seq=None, prompt_len=None,
                    all_position_logits=None, kv_sequences=None) -> ModelFootprint

- `rs`: the ResolvedScenario (tools.resolve.resolve(scenario)): parallel layout, recipe, optimizer,
  recompute, attention, KV dtype, sizes. Everything below defaults to the scenario's own model/job.
- `model`: a `tools.resolve.ModelRef` (another model: critic, reward); default `rs.model`.
- `role`: "actor", "critic", "reference", "reward", "policy" ... copied into every Component.model_role.
- `mode`:
  * "train": phases `end_of_forward`, `backward`, `optimizer_step` (weights, gradients, master weights,
    optimizer states, activations, logits, step temporaries, ZeRO-3 gathered layers ...).
  * "generate": phases `prefill`, `decode` (weights, KV cache, forward transient, last-position logits).
    KV holds `kv_sequences` (default batch) sequences: prompt_len tokens at prefill, seq at decode.
  * "forward": phase `forward`: a frozen no-grad forward over batch x seq (reference / reward scoring):
    weights, forward transient and, with `all_position_logits`, the fp32 log-probs of every position.
  Default: "train" for training tasks, "generate" for inference.
- `trainable` (TrainableSpec, tools.rules.optimizers) and `adapters` (True: LoRA-style, the frozen base is
  stored in `weight_format`, adapters in the recipe's bytes; False: every weight in the recipe's bytes).
  Default: the scenario's (`rs.trainable`, `rs.adapters`); for another model in "train" mode: full.
- `weight_format`: a tools.rules.quant format for the frozen/inference weights; default `rs.weight_format`.

ModelFootprint: `phases` (names in step order), `parts` (PhasedComponent: bytes/formula/substituted
per phase), `gpu_role`, `notes`; `.bytes_at(phase)`, `.components_at(phase) -> list[Component]`,
`.peak_phase()`. Every part is a tensor (kind="tensor"); runtime overhead is added by the estimator
(tools/rules/overhead.py) once per GPU, never per model. With PP the stage with the largest peak is returned.

Each component family answers for itself, in tools/components/ (one module each: weights,
gradients, optimizer (master weights, states, step temporaries), autocast copies, ZeRO-3 gathered
layers, dequantisation workspace, activations, logits, end-of-backward temporaries, KV cache, offload);
this module composes them in step order.

Counted: see each component's `source`. Not counted: CUDA graphs, DDP gradient buckets when
gradient_as_bucket_view=False, DeepSpeed reduce buckets, LoRA dropout copies (p = 0 default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools import cutoff
from tools.components import activations, logits
from tools.components.autocast import autocast_copies
from tools.components.dequant import generation_dequant_workspace, training_dequant_workspace
from tools.components.end_of_backward import end_of_backward
from tools.components.gradients import gradients
from tools.components.kv_cache import kv_cache
from tools.components.local import local_params
from tools.components.optimizer import master_weights, optimizer_states, step_temporaries
from tools.components.phased import (
    FORWARD_PHASES,
    FWD_BWD,
    GENERATE_PHASES,
    TRAIN_PHASES,
    ModelFootprint,
    PhasedComponent,
    cite,
    footprint,
)
from tools.components.savers import saver_parts
from tools.components.step import ModelStep, TrainStep
from tools.components.weights import stored_weights, training_weights
from tools.components.zero3 import zero3_gathered
from tools.notes import Note
from tools.rules.optimizers import TrainableSpec
from tools.rules.quant import WeightFormat

if TYPE_CHECKING:
    from tools.resolve import ModelRef, ResolvedScenario

__all__ = [
    "FORWARD_PHASES",
    "FWD_BWD",
    "GENERATE_PHASES",
    "TRAIN_PHASES",
    "ModelFootprint",
    "PhasedComponent",
    "cite",
    "model_footprint",
]


def model_footprint(
    rs: ResolvedScenario,
    *,
    model: ModelRef | None = None,
    role: str | None = None,
    mode: str | None = None,
    trainable: TrainableSpec | None = None,
    adapters: bool | None = None,
    weight_format: WeightFormat | None = None,
    batch: int | None = None,
    seq: int | None = None,
    prompt_len: int | None = None,
    all_position_logits: bool | None = None,
    kv_sequences: int | None = None,
) -> ModelFootprint:
    """The footprint of one model on the most loaded GPU (see the module docstring)."""
    model = model or rs.model
    mode = mode or ("train" if rs.training else "generate")
    if mode not in ("train", "generate", "forward"):
        raise ValueError(f"mode must be train, generate or forward, not {mode!r}")
    own = model is rs.model
    fmt, batch, seq = weight_format or rs.weight_format, batch or rs.batch, seq or rs.seq
    if mode == "train":
        spec = trainable if trainable is not None else (rs.trainable if own else None)
        adapters = adapters if adapters is not None else (rs.adapters if own else False)
    best: ModelFootprint | None = None
    for stage in rs.layout.stages(model.params.num_layers):
        loc = local_params(model, rs, stage)
        if mode == "train":
            fp = train_footprint(
                TrainStep(rs, model, stage, role, fmt, batch, seq, loc, spec, bool(adapters))
            )
        elif mode == "generate":
            fp = generate_footprint(
                ModelStep(rs, model, stage, role, fmt, batch, seq, loc), prompt_len, kv_sequences
            )
        else:
            all_positions = True if all_position_logits is None else all_position_logits
            fp = forward_footprint(ModelStep(rs, model, stage, role, fmt, batch, seq, loc), all_positions)
        if best is None or fp.peak_bytes > best.peak_bytes:
            best = fp
    assert best is not None
    return best


def train_footprint(ts: TrainStep) -> ModelFootprint:
    """A training step, component by component in step order (end of forward, backward, optimizer step)."""
    notes: list[Note] = []
    weights = training_weights(ts, notes)
    grads = gradients(ts, notes)
    master, states = master_weights(ts), optimizer_states(ts)
    cutoff.check(_resident_bound(ts, [*weights, grads, master, states]))
    temporaries = step_temporaries(ts)
    acts = activations.training_activations(ts)
    loss = logits.loss_logits(ts)
    # Moments (traced, benchmarks/accuracy): the loss forward and the loss backward run with every
    # saved tensor alive but no layer being recomputed; under full recompute one layer's activations
    # are live again only once the loss backward is done (its s*b*V tensors freed). The backward
    # phase is the larger of the two moments.
    recompute_moment = acts.stage.live > loss.get("backward", (0, "", ""))[0]
    tail = end_of_backward(ts, acts, temporaries.bytes_at("optimizer_step") if temporaries else 0)
    parts = [
        *weights,
        grads,
        master,
        states,
        None if tail else temporaries,  # the end of backward replaces the smaller step temporaries
        autocast_copies(ts),
        zero3_gathered(ts),
        training_dequant_workspace(ts),
        activations.activations_part(ts, acts, recompute_moment),
        logits.loss_logits_part(ts, loss, recompute_moment),
        tail,
    ]
    parts = saver_parts(ts, parts, notes)  # memory savers, master-weight wrappers, PP schedules
    return footprint(TRAIN_PHASES, parts, ts.lay.gpu_role(ts.stage), notes, ts.stage)


def _resident_bound(ts: TrainStep, parts: list[PhasedComponent | None]) -> int:
    """A lower bound of the step's tensor peak (tools/cutoff.py): its largest phase sum of weights, master
    weights, optimizer states and gradients, which no later part or memory saver lowers (optimizer in
    backward frees the gradients: then they are left out)."""
    if ts.rs.scenario.optimizer_in_backward:
        parts = [p for p in parts if p is None or p.name != "gradients"]
    return max(sum(p.bytes_at(ph) for p in parts if p is not None) for ph in TRAIN_PHASES)


def _fp16(ms: ModelStep) -> bool:
    """fp16 compute: CUDA's eager softmax upcasts it in its fused kernel (tools/rules/activations.py)."""
    return getattr(ms.fmt, "name", "") == "fp16"


def generate_footprint(ms: ModelStep, prompt_len: int | None, kv_sequences: int | None) -> ModelFootprint:
    """Generation: prefill of prompt_len tokens, then decode up to seq tokens, of kv_sequences sequences."""
    rs, lay = ms.rs, ms.lay
    if prompt_len is None:
        prompt_len = ms.seq - (rs.max_new_tokens or 0) if ms.model is rs.model else ms.seq
    prompt_len = max(1, prompt_len)
    seqs = kv_sequences or ms.batch
    act_b = ms.fmt.compute_bytes
    transient = {
        "prefill": activations.transient_entry(
            ms.model, b=ms.batch, s=prompt_len, act_bytes=act_b, flash=rs.flash, tp=lay.tp, fp16=_fp16(ms)
        ),
        "decode": activations.transient_entry(ms.model, b=seqs, s=1, act_bytes=act_b, flash=True, tp=lay.tp),
    }
    parts = [
        *stored_weights(ms, GENERATE_PHASES),
        kv_cache(ms, prompt_len, seqs),
        activations.forward_transient(ms, transient),
        generation_dequant_workspace(ms, prompt_len, seqs),
        logits.sampling_logits(ms, ms.batch, seqs),
    ]
    return footprint(GENERATE_PHASES, parts, lay.gpu_role(ms.stage), [], ms.stage)


def forward_footprint(ms: ModelStep, all_positions: bool) -> ModelFootprint:
    """A frozen no-grad forward over batch x seq (reference / reward scoring)."""
    rs, lay = ms.rs, ms.lay
    tr = activations.transient_entry(
        ms.model,
        b=ms.batch,
        s=ms.seq,
        act_bytes=ms.fmt.compute_bytes,
        flash=rs.flash,
        tp=lay.tp,
        fp16=_fp16(ms),
    )
    parts = [
        *stored_weights(ms, FORWARD_PHASES),
        activations.forward_transient(ms, {"forward": tr}),
        logits.all_position_logits(ms) if all_positions else None,
    ]
    return footprint(FORWARD_PHASES, parts, lay.gpu_role(ms.stage), [], ms.stage)
