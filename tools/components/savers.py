"""Memory savers, master-weight wrappers and pipeline schedules of one training step (a component family).

`saver_parts(ts, parts, notes)` is the last step of tools/footprint.py `train_footprint`: each rule
replaces or adds named components of the step (logits, gradients, activations, step temporaries);
every constant is a per-element byte count measured by the fake-tensor tracer (tools/trace/savers.py
runs the code each rule follows) and named below.

- cross_entropy="chunked": torchtune `CEWithChunkedOutputLoss` with the model's chunked output
  (8 chunks): the 16-bit logits of every chunk, each chunk's fp32 log_softmax saved, one chunk's fp32
  upcast at a time; the backward holds the saved log-softmaxes and one chunk's gradients.
- cross_entropy="fused_linear": Liger fused linear cross-entropy: the full logits never exist; the
  forward keeps d loss / d hidden (tokens x h) and, when the LM head trains, its gradient (V x h), and
  one chunk of logits (chunk = next_power_of_2(tokens / ceil(V / h)) rows).
- optimizer_in_backward (torchtune `optimizer_in_bwd`): each parameter is stepped and its gradient
  freed in a post-accumulate-grad hook: no gradients are resident, only the one being produced.
- activation_offloading (torchtune `enable_activation_offloading`, with activation checkpointing): the
  checkpointed layers' inputs live in CPU memory; the GPU keeps the layer being recomputed.
- precision_recipe="mixed" at ZeRO-0: DeepSpeed's master-weight wrappers (deepspeed/runtime/engine.py
  `_do_optimizer_sanity_check`: fp16 -> FP16, bf16 -> DDP_BFLOAT16, both built by
  `_configure_fp16_optimizer`; bf16 with pipeline parallelism -> BFLOAT16). `FP16_Optimizer`
  (deepspeed/runtime/fp16/fused_optimizer.py L286-294) upcasts every gradient to fp32 (a list of
  copies) and concatenates them into one flat fp32 gradient inside step(): +8 B per trainable parameter
  at the step. `BF16_Optimizer` (deepspeed/runtime/bf16_optimizer.py L176-177) allocates a persistent
  fp32 flat gradient buffer at start-up: +4 B per trainable parameter, always resident, beside the
  bf16 gradients (traced with the tracer's master_style="bf16": llama-3-8b b1 s2048 gc 151.53 GiB).
- pp_schedule (one pipeline stage; Megatron-LM megatron/core/pipeline_parallel/schedules.py): the
  activations a stage holds scale with the micro-batches in flight. 1F1B (`forward_backward_pipelining_
  without_interleaving`): num_warmup = p - k - 1, so stage k holds min(p - k, m) micro-batches (the
  estimator's default); interleaved (`..._with_interleaving`): num_warmup = (p - k - 1) x 2 + (v - 1) x p
  model-chunk micro-batches of L / (p v) layers each, i.e. min(that + 1, m v) / v stage-equivalents
  (rank 0: p + (p - 1) / v, Korthikanti et al. 2022 sec. 4.2.3); GPipe: all m micro-batches. The
  first stage is the most loaded under 1F1B and interleaving. Micro-batches m: `pp_microbatches`, else
  global_batch_size / (batch_size x DP) (Megatron get_num_microbatches), else the layout's default.
Not traced (modelled from their source, stated in the notes): sample packing, FP8 linears, PP schedules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.assumptions import assumption
from tools.components.phased import PhasedComponent, cite, derived
from tools.notes import Note, note
from tools.result import Assumption

if TYPE_CHECKING:
    from tools.components.step import TrainStep
    from tools.resolve import ResolvedScenario

# torchtune CEWithChunkedOutputLoss, bytes per logit element (tokens x V), traced (llama-3-8b LoRA):
# forward = 16-bit logits (2) + fp32 log_softmax of every chunk (4) + one chunk's fp32 upcast (4 / 8)
CHUNKED_CE_OUTPUT_CHUNKS = 8
CHUNKED_CE_FORWARD_BYTES = 2 + 4 + 4 / CHUNKED_CE_OUTPUT_CHUNKS
# backward = saved fp32 log_softmax (4) + one chunk's fp32 and 16-bit gradients ((4 + 4 + 2) / 8)
CHUNKED_CE_BACKWARD_BYTES = 4 + 10 / CHUNKED_CE_OUTPUT_CHUNKS
LIGER_CHUNK_LOGIT_BYTES = 2 + 4 + 4  # 16-bit chunk logits + fp32 softmax + its exp (pure-PyTorch kernel)

SAVER_SOURCES = {
    "chunked": "torchtune modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss (8 chunks)",
    "fused_linear": "Liger-Kernel ops/fused_linear_cross_entropy.py fused_linear_cross_entropy_forward",
    "optimizer_in_backward": "torchtune training/memory.py register_optim_in_bwd_hooks",
    "activation_offloading": "torchtune training/_activation_offloading.py OffloadActivations",
    "bf16_optimizer": "deepspeed/runtime/bf16_optimizer.py BF16_Optimizer (fp32_groups_gradients_flat)",
    "fp16_optimizer": "deepspeed/runtime/fp16/fused_optimizer.py FP16_Optimizer.step",
}


CE_LABELS = {"chunked": "logits.chunked", "fused_linear": "logits.fused_linear"}  # label codes
CE_NOTES = {"chunked": "chunked_cross_entropy", "fused_linear": "fused_linear_cross_entropy"}


def cross_entropy_logits(ts: TrainStep) -> dict | None:
    """The loss tensors of chunked / fused linear cross-entropy by phase (None: the standard HF loss)."""
    rs = ts.rs
    ce = rs.scenario.cross_entropy or "standard"
    if ce not in CE_LABELS or rs.recipe is None:
        return None
    lay = rs.layout
    tokens = ts.batch * max(1, ts.seq // lay.cp)
    vocab_local = ts.vocab_local
    el = tokens * vocab_local
    if ce == "chunked":
        fwd = round(CHUNKED_CE_FORWARD_BYTES * el)
        bwd = round(CHUNKED_CE_BACKWARD_BYTES * el)
        return {
            "end_of_forward": (
                fwd,
                lambda: ("s*b*V/t x (2 + 4 + 4/8) B", f"{el:,} x {CHUNKED_CE_FORWARD_BYTES} B = {fwd:,} B"),
            ),
            "backward": (
                bwd,
                lambda: ("s*b*V/t x (4 + 10/8) B", f"{el:,} x {CHUNKED_CE_BACKWARD_BYTES} B = {bwd:,} B"),
            ),
        }
    h = ts.arch.hidden_size
    hid_b = ts.fmt.compute_bytes if ts.adapters else ts.recipe.residual_bytes
    chunk = min(tokens, _next_pow2(-(-tokens // -(-vocab_local // h))))
    grad_in = tokens * h * hid_b
    grad_w = vocab_local * h * ts.recipe.weight_bytes if ts.full else 0
    chunk_b = chunk * vocab_local * LIGER_CHUNK_LOGIT_BYTES
    fwd = grad_in + grad_w + chunk_b
    return {
        "end_of_forward": (
            fwd,
            lambda: (
                "grad_input + grad_weight + n_chunk x V/t x (2 + 4 + 4) B",
                f"{grad_in:,} + {grad_w:,} + {chunk:,} x {vocab_local:,} x {LIGER_CHUNK_LOGIT_BYTES} B = {fwd:,} B",
            ),
        ),
        "backward": (grad_in + grad_w, lambda: ("grad_input + grad_weight", f"{grad_in + grad_w:,} B")),
    }


def _phased(name: str, label: str, source: str, at: dict, role: str | None, note_code: str | None = None):
    return PhasedComponent(name, label, cite(source), at, role, note_code)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def saver_parts(
    ts: TrainStep, components: list[PhasedComponent | None], notes: list[Note]
) -> list[PhasedComponent | None]:
    """The step's components with the scenario's savers, master-weight wrapper and PP schedule applied."""
    rs = ts.rs
    sc = rs.scenario
    if rs.recipe is None or ts.model is not rs.model:
        return components
    parts: list[PhasedComponent] = [p for p in components if p is not None]
    stage = ts.stage
    lay = rs.layout
    ce = sc.cross_entropy or "standard"
    if ce in CE_LABELS and stage.last:
        notes.append(note(CE_NOTES[ce]))
    if sc.optimizer_in_backward:
        parts = _optimizer_in_backward(ts, parts, notes)
    if sc.activation_offloading and rs.recompute == "full":
        parts = _offloaded_layer_inputs(ts, parts, notes)
    if sc.packing:
        notes.append(note("packing"))
    if sc.fp8_training:
        notes.append(note("fp8_training"))
    if (
        lay.pp > 1
        and stage is not None
        and ((sc.pp_schedule or "1f1b") != "1f1b" or pipeline_microbatches(rs) != lay.microbatches)
    ):
        parts, schedule_note = _pipeline_schedule(rs, parts, stage)
        notes.append(schedule_note)
    return list(_master_weight_wrapper(ts, parts, notes))


def _optimizer_in_backward(
    ts: TrainStep, parts: list[PhasedComponent], notes: list[Note]
) -> list[PhasedComponent]:
    """Each parameter stepped as its gradient is made: only the largest tensor's gradient at once."""
    rs, lay = ts.rs, ts.rs.layout
    assert rs.recipe is not None
    parts = [p for p in parts if p.name not in ("gradients", "end_of_backward_temporaries")]
    largest = max((r * c for r, c, _k in (rs.trainable.matrices if rs.trainable else ())), default=0)
    grad_bytes = rs.recipe.grad_bytes
    g = largest * grad_bytes // max(1, lay.tp)
    parts.append(
        _phased(
            "gradients",
            "gradients.in_backward",
            SAVER_SOURCES["optimizer_in_backward"],
            {
                "backward": (
                    g,
                    lambda: ("P_largest_tensor x B_grad", f"{largest:,} x {grad_bytes} B"),
                )
            },
            ts.role,
        )
    )
    notes.append(note("optimizer_in_backward"))
    return parts


def _offloaded_layer_inputs(
    ts: TrainStep, parts: list[PhasedComponent], notes: list[Note]
) -> list[PhasedComponent]:
    """Full recompute with activation offloading: the checkpointed layer inputs live in CPU memory."""
    rs, stage = ts.rs, ts.stage
    assert rs.recipe is not None
    i = next((k for k, p in enumerate(parts) if p.name == "activations"), None)
    if i is None:
        return parts
    p = parts[i]
    tokens = ts.batch * max(1, ts.seq // rs.layout.cp)
    h = rs.model.arch.hidden_size
    layer_in = tokens * h * (rs.recipe.residual_bytes if not rs.adapters else rs.weight_format.compute_bytes)
    n_layers = stage.n_layers
    in_flight = stage.in_flight
    moved = layer_in * n_layers * in_flight
    at = {}
    for ph, entry in p.at.items():
        nb = max(0, entry[0] - moved)
        at[ph] = derived(entry, nb, " - A_offloaded", lambda s, nb=nb: f"{s} - {moved:,} B = {nb:,} B")
    parts[i] = p._replace(label="activations.offloaded", at=at)  # same values (recompute, kernel)
    notes.append(note("activation_offloading"))
    return parts


def _master_weight_wrapper(
    ts: TrainStep, parts: list[PhasedComponent], notes: list[Note]
) -> list[PhasedComponent]:
    """DeepSpeed's ZeRO-0 wrappers of a stated `mixed` recipe: BF16_Optimizer's persistent fp32 gradient
    buffer (bf16 + pipeline) or FP16_Optimizer's fp32 gradient copies at the step."""
    rs = ts.rs
    lay = rs.layout
    role = ts.role
    assert rs.recipe is not None
    phases = ("end_of_forward", "backward", "optimizer_step")
    recipe_filled = rs.assumed("precision_recipe")
    if rs.recipe.name == "mixed" and lay.zero_stage == 0 and not lay.offload_optimizer and recipe_filled:
        # the default recipe of a 16-bit full fine-tune is the ZeRO paper's 16 B/param model, kept as it is;
        # the wrapper's step below applies when "mixed" (DeepSpeed) is stated
        notes.append(note("mixed_recipe_assumed"))
    elif rs.recipe.name == "mixed" and lay.zero_stage == 0 and not lay.offload_optimizer:
        P = rs.trainable.params if rs.trainable else rs.model.params.total
        local = P // max(1, lay.tp * lay.pp)
        if lay.pp > 1 and rs.weight_dtype == "bf16":  # DeepSpeed BF16_Optimizer (bf16 + pipeline, ZeRO-0)
            extra = local * 4
            parts.append(
                _phased(
                    "fp32_gradient_buffer",
                    "fp32_gradient_buffer",
                    SAVER_SOURCES["bf16_optimizer"],
                    dict.fromkeys(
                        phases, (extra, lambda: ("P_trainable_local x 4 B", f"{local:,} x 4 B = {extra:,} B"))
                    ),
                    role,
                )
            )
        else:  # FP16_Optimizer: DeepSpeed's ZeRO-0 wrapper for fp16 and (DDP_BFLOAT16) bf16 weights
            extra = local * 8
            parts.append(
                _phased(
                    "optimizer_step_temporaries",
                    "optimizer_step_temporaries.fp16_optimizer",
                    SAVER_SOURCES["fp16_optimizer"],
                    {
                        "optimizer_step": (
                            extra,
                            lambda: ("P_trainable_local x (4 + 4) B", f"{local:,} x 8 B = {extra:,} B"),
                        )
                    },
                    role,
                )
            )
    return parts


def pipeline_microbatches(rs: ResolvedScenario) -> int:
    """Megatron get_num_microbatches: global batch / (micro-batch x DP) when the global batch is stated."""
    sc, lay = rs.scenario, rs.layout
    filled = rs.assumed("pp_microbatches")
    if sc.pp_microbatches and not (filled and sc.global_batch_size):
        return sc.pp_microbatches
    if sc.global_batch_size:
        return max(1, sc.global_batch_size // max(1, rs.batch * lay.dp))
    return lay.microbatches


def in_flight(schedule: str, p: int, k: int, m: int, v: int = 1) -> float:
    """Micro-batches (in whole-stage equivalents) whose activations stage k of p holds at once."""
    if schedule == "gpipe":
        return float(m)
    if schedule == "interleaved" and v > 1:
        chunks = min((p - k - 1) * 2 + (v - 1) * p + 1, m * v)
        return chunks / v
    return float(max(1, min(p - k, m)))


def _pipeline_schedule(rs: ResolvedScenario, parts: list[PhasedComponent], stage) -> tuple[list, Note]:
    sc, lay = rs.scenario, rs.layout
    schedule = sc.pp_schedule or "1f1b"
    m = pipeline_microbatches(rs)
    v = sc.pp_virtual_stages or (2 if schedule == "interleaved" else 1)
    base = in_flight("1f1b", lay.pp, stage.index, lay.microbatches)
    new = in_flight(schedule, lay.pp, stage.index, m, v)
    ratio = new / base
    out = []
    for p in parts:
        if p.name != "activations":
            out.append(p)
            continue
        at = {}
        for ph, entry in p.at.items():
            nb = round(entry[0] * ratio)
            at[ph] = derived(
                entry, nb, " x m_schedule / m_1F1B", lambda s, nb=nb: f"{s} x {new:g}/{base:g} = {nb:,} B"
            )
        out.append(p._replace(at=at))
    values = {"schedule": schedule, "stage": stage.index + 1, "stages": lay.pp, "in_flight": f"{new:g}"}
    values |= {"in_flight_1f1b": f"{base:g}", "microbatches": m}
    if schedule == "interleaved":
        return out, note("pipeline_schedule_interleaved", **values, virtual_stages=v)
    return out, note("pipeline_schedule", **values)


def saver_assumptions(rs: ResolvedScenario, dropout_extra_bytes: int | None) -> list[Assumption]:
    """Assumptions the savers add to the answer: lora_dropout for LoRA jobs, with what 0.05 would add
    (`dropout_extra_bytes`: the peak with lora_dropout=0.05 minus this peak, from the estimator)."""
    sc = rs.scenario
    out: list[Assumption] = []
    if rs.task in ("lora", "qlora") and sc.lora_dropout is None:
        extra = {"extra_bytes": int(dropout_extra_bytes)} if dropout_extra_bytes else {}
        out.append(assumption("lora_dropout", 0.0, "lora_dropout.default", **extra))
    return out
