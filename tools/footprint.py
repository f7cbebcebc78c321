"""Per-model memory footprint on the most loaded GPU, by phase: the estimator's building block.

Public API (H3's tools/rl.py composes PPO/GRPO/DPO from it):

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
- `trainable` (TrainableSpec, tools.optimizers) and `adapters` (True: LoRA-style, the frozen base is
  stored in `weight_format`, adapters in the recipe's bytes; False: every weight in the recipe's bytes).
  Default: the scenario's (`rs.trainable`, `rs.adapters`); for another model in "train" mode: full.
- `weight_format`: a tools.quant format for the frozen/inference weights; default `rs.weight_format`.

ModelFootprint: `phases` (names in step order), `parts` (PhasedComponent: bytes/formula/substituted
per phase), `gpu_role`, `notes`; `.bytes_at(phase)`, `.components_at(phase) -> list[Component]`,
`.peak_phase()`. Every part is a tensor (kind="tensor"); runtime overhead is added by the estimator
(tools/overhead.py) once per GPU, never per model. With PP the stage with the largest peak is returned.

Activations follow what autograd really saves: a frozen weight's matmul saves no input, so LoRA
saves only what its targeted linears need (tools.activations.SaveMask) and freeze tuning saves
nothing below its first trainable layer.

Counted: see each component's `source`. Not counted: CUDA graphs, DDP gradient buckets when
gradient_as_bucket_view=False, DeepSpeed reduce buckets, LoRA dropout copies (p = 0 default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tools import calibration as cal
from tools.activations import FULL_MASK, SaveMask, final_norm_bytes, inference_transient, stage_activations
from tools.kv_cache import SOURCE as KV_SOURCE
from tools.kv_cache import kv_bytes, kv_specs
from tools.logits import SOURCE as LOGITS_SOURCE
from tools.logits import inference_logits, training_logits
from tools.lora import decoder_linears, full_trainable
from tools.optimizers import TrainableSpec
from tools.parallel import Stage
from tools.phases import gradient_lifetime
from tools.quant import Bnb4bitFormat, BnbInt8Format, DenseFormat, WeightFormat
from tools.result import Component

if TYPE_CHECKING:
    from tools.resolve import ModelRef, ResolvedScenario

TRAIN_PHASES = ("end_of_forward", "backward", "optimizer_step")
GENERATE_PHASES = ("prefill", "decode")
FORWARD_PHASES = ("forward",)
FWD_BWD = ("end_of_forward", "backward")


@dataclass(frozen=True)
class PhasedComponent:
    """One named tensor group with its bytes at each phase (absent phase = not resident)."""

    name: str
    label: str
    source: str
    at: dict[str, tuple[int, str, str]]  # phase -> (bytes, formula, substituted)
    model_role: str | None = None
    note: str | None = None

    def bytes_at(self, phase: str) -> int:
        entry = self.at.get(phase)
        return entry[0] if entry else 0

    def component_at(self, phase: str) -> Component | None:
        entry = self.at.get(phase)
        if not entry or entry[0] <= 0:
            return None
        return Component.model_construct(
            name=self.name,
            bytes=int(entry[0]),
            kind="tensor",
            formula=entry[1],
            substituted=entry[2],
            source=self.source,
            label=self.label,
            model_role=self.model_role,
            note=self.note,
        )


@dataclass(frozen=True)
class ModelFootprint:
    phases: tuple[str, ...]
    parts: tuple[PhasedComponent, ...]
    gpu_role: str
    notes: tuple[str, ...] = ()
    stage: Stage | None = None

    def bytes_at(self, phase: str) -> int:
        return sum(p.bytes_at(phase) for p in self.parts)

    def components_at(self, phase: str) -> list[Component]:
        return [c for c in (p.component_at(phase) for p in self.parts) if c is not None]

    def peak_phase(self) -> str:
        return max(self.phases, key=self.bytes_at)  # first of equal maxima (step order)

    @property
    def peak_bytes(self) -> int:
        return self.bytes_at(self.peak_phase())


def _same(phases: tuple[str, ...], value: int, formula: str, subst: str) -> dict[str, tuple[int, str, str]]:
    return {ph: (value, formula, subst) for ph in phases}


@dataclass
class _Builder:
    role: str | None
    parts: list[PhasedComponent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(
        self, name: str, label: str, source: str, at: dict[str, tuple[int, str, str]], note: str | None = None
    ):
        if any(v[0] > 0 for v in at.values()):
            self.parts.append(PhasedComponent(name, label, cite(source), at, self.role, note))


def cite(*sources: str) -> str:
    """Join source strings naming each reference once ("ZeRO paper sec. 3.1" and "ZeRO (Rajbhandari
    et al. 2020) sec. 3.1" are the same reference)."""
    out: list[str] = []
    for src in sources:
        for part in src.split("; "):
            ref = part.strip().replace("ZeRO paper", "ZeRO (Rajbhandari et al. 2020)")
            if ref and ref not in out:
                out.append(ref)
    return "; ".join(out)


def _rates(fmt: WeightFormat) -> tuple[str, str]:
    """(data rate, metadata rate) of a weight format: '0.5 B', '1/64 B + 4/(64*256) B' (NF4)."""
    data, _, meta = fmt.rate_text().partition(" + ")
    return data, meta


@dataclass(frozen=True)
class _LocalParams:
    """The parameters one GPU of `stage` holds (TP/EP-sharded, before ZeRO-3)."""

    total: int
    linear_scale_dense: float  # fraction of the model's TP-sharded linear weights held here
    linear_scale_expert: float
    linear_scale_repl: float
    other: int  # non-linear parameters held here (norms, biases, embeddings, LM head)
    embedding_and_head: int  # the part of `other` that is embedding / LM head
    head_matmul: int  # the LM head's matmul weight on this GPU (the embedding when tied)
    linear_local: int  # linear weight elements held here
    largest_gathered: int  # ZeRO-3: the largest unit gathered at once (a layer or the embedding)
    layer_local: float  # per-layer parameters held here


def _local_params(model: ModelRef, rs: ResolvedScenario, stage: Stage) -> _LocalParams:
    pb, lay = model.params, rs.layout
    tp, ep, n_layers = lay.tp, lay.ep, pb.num_layers
    dense_el = exp_el = rep_el = bias = 0
    for lin in decoder_linears(pb):
        el = lin.count * lin.in_features * lin.out_features
        if lin.expert:
            exp_el += el
        elif lin.replicated:
            rep_el += el
        else:
            dense_el += el
        if lin.bias:
            bias += lin.count * lin.out_features
    layer_other = pb.layers_total - dense_el - exp_el - rep_el - bias
    f = stage.n_layers / n_layers
    s_dense, s_exp, s_rep = f / tp, f / (tp * ep), f
    linear_local = dense_el * s_dense + exp_el * s_exp + rep_el * s_rep
    emb = pb.embedding / tp if stage.first else 0
    if stage.last:
        head = pb.lm_head / tp
        if lay.pp > 1 and not pb.lm_head:  # tied: Megatron keeps the word embedding on the last stage too
            head = pb.embedding / tp
        emb += head
    other = (bias / tp + layer_other) * f + emb + ((pb.final_norm + pb.extra) if stage.last else 0)
    layer_local = (dense_el / tp + exp_el / (tp * ep) + rep_el + bias / tp + layer_other) / n_layers
    largest = max(layer_local, pb.embedding / tp, pb.lm_head / tp)
    return _LocalParams(
        total=round(linear_local + other),
        linear_scale_dense=s_dense,
        linear_scale_expert=s_exp,
        linear_scale_repl=s_rep,
        other=round(other),
        embedding_and_head=round(emb),
        head_matmul=round((pb.lm_head or pb.embedding) / tp) if stage.last else 0,
        linear_local=round(linear_local),
        largest_gathered=round(largest),
        layer_local=layer_local,
    )


def _format_bytes(model: ModelRef, fmt: WeightFormat, loc: _LocalParams, other_bytes: int) -> tuple[int, int]:
    """(weights, quant metadata) bytes of the local slice stored in `fmt` (non-linear params at other_bytes)."""
    lins = decoder_linears(model.params)
    data = meta = 0.0
    for group, scale in (
        ([lin for lin in lins if lin.expert], loc.linear_scale_expert),
        ([lin for lin in lins if lin.replicated and not lin.expert], loc.linear_scale_repl),
        ([lin for lin in lins if not lin.expert and not lin.replicated], loc.linear_scale_dense),
    ):
        if group and scale:
            d, m = fmt.linear_bytes(group)
            data += d * scale
            meta += m * scale
    # GGUF/EXL2 store norms, output layer and embedding their own way (tools/gguf.py non_linear_bytes)
    other = fmt.non_linear_bytes(loc) if hasattr(fmt, "non_linear_bytes") else loc.other * other_bytes
    return round(data) + other, round(meta)


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
    best: ModelFootprint | None = None
    for stage in rs.layout.stages(model.params.num_layers):
        if mode == "train":
            own = model is rs.model
            fp = _train(
                rs,
                model,
                stage,
                role,
                trainable if trainable is not None else (rs.trainable if own else None),
                adapters if adapters is not None else (rs.adapters if own else False),
                weight_format or rs.weight_format,
                batch or rs.batch,
                seq or rs.seq,
            )
        elif mode == "generate":
            fp = _generate(
                rs,
                model,
                stage,
                role,
                weight_format or rs.weight_format,
                batch or rs.batch,
                seq or rs.seq,
                prompt_len,
                kv_sequences,
            )
        elif mode == "forward":
            fp = _forward(
                rs,
                model,
                stage,
                role,
                weight_format or rs.weight_format,
                batch or rs.batch,
                seq or rs.seq,
                True if all_position_logits is None else all_position_logits,
            )
        else:
            raise ValueError(f"mode must be train, generate or forward, not {mode!r}")
        if best is None or fp.peak_bytes > best.peak_bytes:
            best = fp
    assert best is not None
    return best


# --------------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------------
def _train(
    rs: ResolvedScenario,
    model: ModelRef,
    stage: Stage,
    role: str | None,
    trainable: TrainableSpec | None,
    adapters: bool,
    fmt: WeightFormat,
    batch: int,
    seq: int,
) -> ModelFootprint:
    lay, arch, pb = rs.layout, model.arch, model.params
    recipe, opt = rs.recipe, rs.optimizer
    assert recipe is not None and opt is not None
    spec = trainable or full_trainable(pb, arch.hidden_size)
    loc = _local_params(model, rs, stage)
    b = _Builder(role)
    N = lay.dp
    all_phases = TRAIN_PHASES

    # ---- weights ---------------------------------------------------------------------------------
    w_div = lay.weights_divisor
    if adapters:
        other_bytes = fmt.compute_bytes
        if fmt.quantised and rs.task in ("qlora", "lora") and cal.QLORA_UPCAST_NON_QUANTIZED_TO_FP32:
            other_bytes = 4
            b.notes.append(
                "PEFT prepare_model_for_kbit_training casts the non-quantised parameters (embeddings, "
                "LM head, norms) to fp32"
            )
        base_w, meta = _format_bytes(model, fmt, loc, other_bytes)
        adapter_local = spec.params * stage.n_layers / pb.num_layers / lay.tp
        trainable_local = round(adapter_local)
        adapter_w = trainable_local * recipe.weight_bytes
        w_total = base_w + adapter_w
        data_rate = _rates(fmt)[0]
        w_formula = (
            f"base linear weights x {data_rate} ({fmt.name}) + other base params (embeddings, LM head, "
            f"norms) x {other_bytes} B + LoRA adapters x {recipe.weight_bytes} B"
        )
        w_subst = (
            f"{loc.linear_local:,} x {data_rate} + {loc.other:,} x {other_bytes} B"
            f" + {trainable_local:,} x {recipe.weight_bytes} B"
        )
        w_label = f"frozen base ({fmt.name}) + adapters"
    else:
        meta = 0
        w_total = loc.total * recipe.weight_bytes
        trainable_local = _trainable_local(spec, pb, loc, stage)
        w_formula = f"P_local x {recipe.weight_bytes} B"
        w_subst = f"{loc.total:,} x {recipe.weight_bytes} B"
        w_label = f"weights ({recipe.weight_bytes * 8}-bit)"
    if lay.offload_params:
        w_total, meta = 0, 0
        b.notes.append(
            f"parameters offloaded to {rs.scenario.offload_params}: only gathered layers on the GPU"
        )
    elif w_div > 1:
        w_total, meta = w_total // w_div, meta // w_div
        w_formula += " / N (ZeRO-3)"
        w_subst += f" / {N}"
    b.add(
        "weights",
        w_label,
        _weights_source(fmt, recipe.source, adapters),
        _same(all_phases, w_total, w_formula, f"{w_subst} = {w_total:,} B"),
    )
    if meta:
        b.add(
            "quant_metadata",
            "quantisation scales/absmax",
            fmt.source,
            _same(
                all_phases,
                meta,
                f"scales per quantised linear weight: {_rates(fmt)[1]}"
                + (" / N (ZeRO-3)" if w_div > 1 else ""),
                f"{loc.linear_local:,} linear weights" + (f" / {N}" if w_div > 1 else "") + f" -> {meta:,} B",
            ),
        )

    frac = trainable_local / spec.params if spec.params else 0.0
    transient = 0
    # ---- gradients -----------------------------------------------------------------------------------
    g_div = lay.grads_divisor
    grads = trainable_local * recipe.grad_bytes // g_div
    # the framework decides how long gradients live (tools.phases.gradient_lifetime)
    life = gradient_lifetime(
        zero_stage=lay.zero_stage,
        recipe=recipe.name,
        model_parallel=lay.tp * lay.pp * lay.cp > 1,
        accumulation_steps=rs.scenario.gradient_accumulation_steps or 1,
    )
    g_phases = life.phases if cal.GRADS_RESIDENT_ALL_STEP else ("optimizer_step",)
    b.notes.append(f"gradients ({life.name.replace('_', ' ')}): {life.reason}")
    if lay.offload_optimizer:
        b.notes.append(
            "ZeRO-Offload: gradient partitions, fp32 master weights and optimizer states live in CPU RAM"
        )
    else:
        b.add(
            "gradients",
            f"gradients ({recipe.grad_bytes * 8}-bit)",
            cite("ZeRO (Rajbhandari et al. 2020) sec. 3.1", recipe.source),
            _same(
                g_phases,
                grads,
                f"P_trainable_local x {recipe.grad_bytes} B" + (" / N (ZeRO-2/3)" if g_div > 1 else ""),
                f"{trainable_local:,} x {recipe.grad_bytes} B"
                + (f" / {N}" if g_div > 1 else "")
                + f" = {grads:,} B",
            ),
        )
        s_div = lay.states_divisor
        z = " / N (ZeRO-1/2/3)" if s_div > 1 else ""
        zs = f" / {N}" if s_div > 1 else ""
        if recipe.master_bytes:
            master = trainable_local * recipe.master_bytes // s_div
            b.add(
                "master_weights",
                "fp32 master weights",
                recipe.source,
                _same(
                    all_phases,
                    master,
                    f"P_trainable_local x {recipe.master_bytes} B{z}",
                    f"{trainable_local:,} x {recipe.master_bytes} B{zs} = {master:,} B",
                ),
            )
        states_global = opt.state_bytes(spec, recipe.state_bytes)
        states = round(states_global * frac) // s_div
        b.add(
            "optimizer_states",
            opt.label,
            opt.source,
            _same(
                all_phases,
                states,
                f"{opt.state_formula()} (B_state = {recipe.state_bytes} B)"
                + (" x share of the trainable params on this GPU" if trainable_local != spec.params else "")
                + z,
                _states_subst(
                    opt.state_substituted(spec, recipe.state_bytes), trainable_local, spec.params, zs
                )
                + f" = {states:,} B",
            ),
            note="paged: may be paged to CPU RAM under memory pressure" if opt.paged else None,
        )
        transient = 0
        if not recipe.fused_optimizer:  # DeepSpeed/Megatron run a fused Adam: no foreach transient
            transient = round(opt.step_transient_bytes(spec, recipe.state_bytes) * frac) // s_div
        temp_f, temp_s = [], []
        if transient:
            temp_f.append("foreach transient = P_trainable_local x B_state")
            temp_s.append(f"{transient:,} B")
        if lay.zero_stage >= 1 and recipe.master_bytes and N > 1:  # N = 1: ZeRO shards nothing
            part = trainable_local * cal.ZERO_FP32_GRAD_PARTITION_BYTES // s_div
            transient += part
            temp_f.append("fp32 grad partition = P_trainable_local x 4 B / N (DeepSpeed ZeRO-1/2)")
            temp_s.append(f"{part:,} B")
        if transient:
            b.add(
                "optimizer_step_temporaries",
                "optimizer step temporaries",
                "torch/optim/adamw.py _multi_tensor_adamw; DeepSpeed stage_1_and_2.py",
                {
                    "optimizer_step": (
                        transient,
                        " + ".join(temp_f),
                        " + ".join(temp_s) + f" = {transient:,} B",
                    )
                },
            )

    # ---- autocast copies -------------------------------------------------------------------------------
    if recipe.autocast_copies:
        if adapters:
            copied = trainable_local
            what = "adapter weights"
        elif lay.zero_stage >= 3:
            copied = loc.largest_gathered
            what = "the gathered layer"
        elif rs.task == "freeze":
            copied = trainable_local
            what = "trainable layers' weights"
        else:
            copied = loc.linear_local + loc.head_matmul  # F.embedding is not autocast: no copy of the table
            what = "linear + LM-head weights"
        cb = copied * cal.AUTOCAST_COPY_BYTES
        b.add(
            "autocast_weight_copies",
            "16-bit autocast copies of fp32 weights",
            "torch.autocast weight cast cache + autograd saved tensors (DOMAIN.md sec. 3)",
            _same(
                # full recompute: checkpointed layers save no weight copies for backward and the cast
                # cache is cleared when the autocast region (forward + loss) exits (traced: 0 GiB at the
                # peak, llama-3-8b amp b8 s1024 gc)
                ("end_of_forward",) if rs.recompute == "full" else FWD_BWD,
                cb,
                f"P_matmul_local x {cal.AUTOCAST_COPY_BYTES} B ({what})",
                f"{copied:,} x {cal.AUTOCAST_COPY_BYTES} B = {cb:,} B",
            ),
        )

    # ---- ZeRO-3 gathered parameters --------------------------------------------------------------------------
    if lay.zero_stage >= 3 and (N > 1 or lay.offload_params):
        wb = fmt.compute_bytes if adapters else recipe.weight_bytes
        live = loc.largest_gathered + min(cal.ZERO3_PREFETCH_BUCKET_ELEMENTS, loc.largest_gathered)
        gathered = live * wb
        bwd = gathered + (0 if adapters else loc.largest_gathered * recipe.grad_bytes)
        b.add(
            "zero3_gathered_params",
            "ZeRO-3 gathered layer + prefetch bucket",
            "DeepSpeed stage3.py (stage3_prefetch_bucket_size 5e7) / FSDP FULL_SHARD all-gather; "
            "DeepSpeed estimate_zero3_model_states_mem_needs largest_layer_memory",
            {
                "end_of_forward": (
                    gathered,
                    "(P_largest_layer + min(prefetch, P_largest_layer)) x B_w",
                    f"{live:,} x {wb} B = {gathered:,} B",
                ),
                "backward": (
                    bwd,
                    "gathered params + unreduced grads of the layer",
                    f"{live:,} x {wb} B + {loc.largest_gathered:,} x {recipe.grad_bytes} B = {bwd:,} B",
                ),
            },
        )

    # ---- bnb dequantisation workspace ------------------------------------------------------------------------
    if adapters and fmt.quantised and not isinstance(fmt, DenseFormat):
        largest_lin = (
            max((lin.in_features * lin.out_features for lin in decoder_linears(pb)), default=0) // lay.tp
        )
        ws = largest_lin * fmt.compute_bytes
        b.add(
            "dequant_workspace",
            "16-bit dequantised weight of the running linear",
            "bitsandbytes MatMul4Bit / Linear8bitLt dequantize in forward and backward",
            _same(
                FWD_BWD, ws, "max(in x out) / t x 2 B", f"{largest_lin:,} x {fmt.compute_bytes} B = {ws:,} B"
            ),
        )

    # ---- activations and logits -------------------------------------------------------------------------------
    s_local = max(1, seq // lay.cp)
    # frozen weights save no inputs: LoRA saves what its targets need; freeze tuning saves nothing
    # below the first trainable layer (no tensor there requires grad)
    mask = (
        SaveMask.for_targets(spec.targets, own_input_copies=recipe.autocast_copies)
        if adapters and spec.targets
        else FULL_MASK
    )
    if adapters and spec.targets and (rs.scenario.lora_dropout or 0.0) > 0:
        mask = replace(mask, own_input_copies=True, lora_dropout=True)
    if adapters and spec.targets and isinstance(fmt, Bnb4bitFormat | BnbInt8Format):
        mask = replace(mask, base_saves_inputs=True)  # bnb MatMul4Bit / MatMul8bitLt keep their input
    if adapters and spec.targets and rs.scenario.dora:
        dora_out = sum(
            lin.count * lin.out_features
            for lin in decoder_linears(pb)
            if lin.name in spec.targets and not lin.expert
        )
        mask = replace(mask, dora_out_features=dora_out // max(1, pb.num_layers))
    act_layers = stage.n_layers
    if not adapters and spec.params < pb.total:
        act_layers = _trainable_layers_on_stage(spec, pb, stage)
    act = stage_activations(
        arch,
        b=batch,
        s=s_local,
        act_bytes=recipe.activation_bytes,
        residual_bytes=fmt.compute_bytes
        if adapters
        else recipe.residual_bytes,  # 16-bit base: 16-bit residual
        flash=rs.flash,
        kernel=rs.attention_kernel,
        tp=lay.tp,
        sp=lay.sequence_parallel,
        recompute=rs.recompute,
        n_layers=act_layers,
        in_flight=stage.in_flight,
        mask=mask,
    )
    final_norm = 0
    if stage.last and act_layers:  # the final norm's saved tensors (its output feeds the LM head)
        final_norm = final_norm_bytes(
            arch,
            tokens=batch * s_local,
            act_bytes=recipe.activation_bytes,
            residual_bytes=fmt.compute_bytes if adapters else recipe.residual_bytes,
            trains=not adapters and spec.params >= pb.total,
        )
    kept = act.kept + final_norm
    logits_at: dict[str, tuple[int, str, str]] = {}
    if stage.last:
        vocab_local = -(-arch.vocab_size // lay.tp)
        for ph in FWD_BWD:
            logits_at[ph] = training_logits(
                tokens=batch * s_local,
                vocab_local=vocab_local,
                phase=ph,
                softcap_bytes=recipe.activation_bytes if arch.final_logit_softcapping else 0,
            )
    # Moments (traced, benchmarks/accuracy): the loss forward and the loss backward run with every
    # saved tensor alive but no layer being recomputed; under full recompute one layer's activations
    # are live again only once the loss backward is done (its s*b*V tensors freed). The backward
    # phase is the larger of the two moments.
    loss_bwd = logits_at.get("backward", (0, "", ""))[0]
    recompute_moment = act.live > loss_bwd
    act_label = f"activations ({rs.recompute} recompute, {rs.attention_kernel})"

    def act_entry(with_live: bool) -> tuple[int, str, str]:
        formula = act.formula if with_live else act.kept_formula
        head, _, per_layer = (act.substituted if with_live else act.kept_substituted).partition(
            "; per layer: "
        )
        total = kept + (act.live if with_live else 0)
        if final_norm:
            formula = formula.replace(";", " + final norm before the LM head;", 1)
            head += f" + final norm {final_norm:,} B = {total:,} B"
        return total, formula, head + (f"; per layer: {per_layer}" if per_layer else "")

    b.add(
        "activations",
        act_label,
        act.source,
        {"end_of_forward": act_entry(False), "backward": act_entry(recompute_moment)},
    )
    if logits_at:
        if recompute_moment:  # the recomputed layer's moment: the loss tensors are gone
            logits_at.pop("backward")
        b.add("logits", "logits and loss (fp32 upcast)", LOGITS_SOURCE, logits_at)
    # HF GA=1: the end of backward (all gradients, the first layer's activations still alive) can
    # exceed the fused optimizer step; it is reported with the step (same gradients and states).
    # The embedding's backward (embedding_dense_backward) builds its gradient in a temporary and
    # accumulates it into .grad. Tied (the LM head's gradient is already there): 2 x V x h x B_grad
    # beyond all gradients (traced gemma-2-2b fp32: 4.39 GiB = 2 x 256000 x 2304 x 4 B); untied: 1 x
    # (traced llama-3-8b: 2.03 GiB of temporaries while its own .grad, 0.98 GiB, was not yet there).
    emb_tail = 0
    if stage.first and not adapters and spec.params >= pb.total:
        emb_tail = (1 if pb.lm_head else 2) * (pb.embedding // lay.tp) * recipe.grad_bytes
    tail = max(act.layer_full, emb_tail)
    if life.name == "from_backward" and spec.params and tail > transient and not lay.offload_optimizer:
        b.parts[:] = [p for p in b.parts if p.name != "optimizer_step_temporaries"]
        if act.layer_full >= emb_tail:
            tail_f = "A_layer (the first layer's saved or recomputed tensors while its backward runs)"
            tail_s = f"{tail:,} B"
        else:
            k = 1 if pb.lm_head else 2
            tail_f = f"{k} x V x h x B_grad (the embedding gradient built and accumulated into .grad)"
            tail_s = f"{k} x {pb.embedding // lay.tp:,} x {recipe.grad_bytes} B = {tail:,} B"
        b.add(
            "end_of_backward_temporaries",
            "end of backward: first layer's activations or the embedding gradient (all gradients alive)",
            cite(act.source, "torch embedding_dense_backward"),
            {"optimizer_step": (tail, tail_f, tail_s)},
        )
    return ModelFootprint(all_phases, tuple(b.parts), lay.gpu_role(stage), tuple(b.notes), stage)


def _trainable_layers_on_stage(spec: TrainableSpec, pb, stage: Stage) -> int:
    """Freeze tuning: how many of this stage's layers are among the last trainable ones."""
    per_layer = pb.layers_total / pb.num_layers
    n_train = round(spec.params / per_layer) if per_layer else 0
    lo, hi = stage.first_layer, stage.first_layer + stage.n_layers
    return max(0, min(hi, pb.num_layers) - max(lo, pb.num_layers - n_train))


def _trainable_local(spec: TrainableSpec, pb, loc: _LocalParams, stage: Stage) -> int:
    """Trainable parameters held by this GPU for full/freeze training."""
    if spec.params >= pb.total:
        return loc.total
    # freeze: the last `spec.params / per-layer` layers; overlap with this stage's layers
    return round(_trainable_layers_on_stage(spec, pb, stage) * loc.layer_local)


def _states_subst(global_text: str, local: int, total: int, shard_text: str) -> str:
    """'2 x 6,738,415,616 x 4 B' (+ this GPU's share under PP/TP/freeze, + the ZeRO divisor)."""
    if local != total:
        global_text = f"({global_text}) x {local:,}/{total:,} on this GPU"
    return global_text + shard_text


def _weights_source(fmt: WeightFormat, recipe_source: str, adapters: bool) -> str:
    if adapters:
        extra = "adapters in fp32 (PEFT autocast_adapter_dtype)"
        if fmt.quantised and cal.QLORA_UPCAST_NON_QUANTIZED_TO_FP32:
            extra = "PEFT prepare_model_for_kbit_training (non-quantised params to fp32); " + extra
        return cite(fmt.source, extra)
    return recipe_source


# --------------------------------------------------------------------------------------------------
# inference
# --------------------------------------------------------------------------------------------------
def _static_weights(
    b: _Builder,
    rs: ResolvedScenario,
    model: ModelRef,
    fmt: WeightFormat,
    loc: _LocalParams,
    phases: tuple[str, ...],
) -> None:
    w, meta = _format_bytes(model, fmt, loc, fmt.compute_bytes)
    if rs.layout.offload_params and not rs.training:
        # accelerate cpu_offload / device_map="auto" with CPU: the running layer's weights are on the GPU
        share = loc.largest_gathered / loc.total if loc.total else 0.0
        w_on, meta = round(w * share), round(meta * share)
        b.add(
            "weights",
            f"weights ({fmt.name}), offloaded: one layer on the GPU",
            "accelerate big_modeling cpu_offload (AlignDevicesHook moves each module's weights at forward)",
            _same(
                phases,
                w_on,
                "P_largest_layer in " + fmt.name,
                f"{loc.largest_gathered:,} params -> {w_on:,} B",
            ),
        )
        phases_meta = phases
        if meta:
            b.add(
                "quant_metadata",
                "quantisation scales/absmax",
                fmt.source,
                _same(phases_meta, meta, "of the layer", f"{meta:,} B"),
            )
        return
    data_rate, meta_rate = _rates(fmt)
    if hasattr(fmt, "non_linear_bytes"):  # GGUF / EXL2: per-tensor block types (tools/gguf.py)
        rate = fmt.effective_bpw(decoder_linears(model.params))
        w_formula = (
            f"linear weights in {fmt.label}: {rate:.2f} bpw on this model + norms, output layer and "
            "embedding as the engine stores them"
        )
        w_subst = (
            f"{loc.linear_local:,} linear params x {rate:.2f}/8 B + {loc.other:,} other params = {w:,} B"
        )
    elif fmt.quantised:
        w_formula = (
            f"linear weights x {data_rate} ({fmt.name}) + other params (embeddings, LM head, norms) "
            f"x {fmt.compute_bytes} B"
        )
        w_subst = f"{loc.linear_local:,} x {data_rate} + {loc.other:,} x {fmt.compute_bytes} B = {w:,} B"
    else:
        w_formula = f"P_local x {data_rate}"
        w_subst = f"{loc.total:,} x {data_rate} = {w:,} B"
    w_label = f"weights ({fmt.label})" if hasattr(fmt, "non_linear_bytes") else f"weights ({fmt.name})"
    b.add("weights", w_label, fmt.source, _same(phases, w, w_formula, w_subst))
    if meta:
        b.add(
            "quant_metadata",
            "quantisation scales/absmax",
            fmt.source,
            _same(
                phases,
                meta,
                f"scales per quantised linear weight: {meta_rate}",
                f"{loc.linear_local:,} linear weights -> {meta:,} B",
            ),
        )


def _generate(
    rs: ResolvedScenario,
    model: ModelRef,
    stage: Stage,
    role: str | None,
    fmt: WeightFormat,
    batch: int,
    seq: int,
    prompt_len: int | None,
    kv_sequences: int | None,
) -> ModelFootprint:
    lay, arch = rs.layout, model.arch
    loc = _local_params(model, rs, stage)
    b = _Builder(role)
    _static_weights(b, rs, model, fmt, loc, GENERATE_PHASES)
    if prompt_len is None:
        prompt_len = seq - (rs.max_new_tokens or 0) if model is rs.model else seq
    prompt_len = max(1, prompt_len)
    seqs = kv_sequences or batch
    specs = kv_specs(arch, layers=stage.n_layers, tp=lay.tp, dtype_bytes=rs.kv_dtype_bytes)
    per_tok = sum(s.bytes_per_token() for s in specs)
    kv_f = " + ".join(s.formula() for s in specs) + " per token x tokens x sequences"
    kv_s = " + ".join(s.substituted() for s in specs)
    # prefill: transformers' DynamicCache holds every prompt token's K/V, sliding-window layers too
    # (trimmed to the window only for decode; traced mistral-7b / gemma-3-1b prefill); decode: capped
    kv_pre, kv_dec = per_tok * prompt_len * seqs, kv_bytes(specs, seq, seqs)
    b.add(
        "kv_cache",
        "KV cache",
        KV_SOURCE,
        {
            "prefill": (
                kv_pre,
                kv_f,
                f"({kv_s} = {per_tok:,} B/token) x {prompt_len:,} x {seqs} = {kv_pre:,} B",
            ),
            "decode": (kv_dec, kv_f, f"({kv_s} = {per_tok:,} B/token) x {seq:,} x {seqs} = {kv_dec:,} B"),
        },
    )
    act_b = fmt.compute_bytes
    pre = inference_transient(arch, b=batch, s=prompt_len, act_bytes=act_b, flash=rs.flash, tp=lay.tp)
    dec = inference_transient(arch, b=seqs, s=1, act_bytes=act_b, flash=True, tp=lay.tp)
    b.add(
        "activations",
        "forward transient (one layer, no autograd)",
        "largest live set inside one layer of a no-grad forward; calibration.INFERENCE_TRANSIENT_*",
        {"prefill": pre, "decode": dec},
    )
    if isinstance(fmt, Bnb4bitFormat):
        # bitsandbytes autograd/_functions.py matmul_4bit: a single-token input without grad takes the
        # gemv_4bit kernel (no dequantised weight); any other input (a prompt, several sequences per step)
        # runs MatMul4Bit.forward, which dequantises the running linear to 16 bits first
        # (`F.dequantize_4bit(B, quant_state).to(A.dtype)`); transformers keeps the LM head 16-bit
        largest_lin = (
            max((lin.in_features * lin.out_features for lin in decoder_linears(model.params)), default=0)
            // lay.tp
        )
        ws = largest_lin * fmt.compute_bytes
        ws_phases = {
            phase: (ws, "max(in x out) / t x 2 B", f"{largest_lin:,} x {fmt.compute_bytes} B = {ws:,} B")
            for phase, tokens in (("prefill", batch * prompt_len), ("decode", seqs))
            if tokens > 1
        }
        if ws_phases:
            b.add(
                "dequant_workspace",
                "16-bit dequantised weight of the running linear",
                "bitsandbytes matmul_4bit / MatMul4Bit.forward (gemv_4bit only for one token)",
                ws_phases,
            )
    if stage.last:
        vocab_local = -(-arch.vocab_size // lay.tp)
        lg_pre = inference_logits(sequences=batch, vocab_local=vocab_local)
        lg_dec = inference_logits(sequences=seqs, vocab_local=vocab_local)
        b.add(
            "logits",
            "last-position logits (fp32 for sampling)",
            LOGITS_SOURCE,
            {"prefill": lg_pre, "decode": lg_dec},
        )
    return ModelFootprint(GENERATE_PHASES, tuple(b.parts), lay.gpu_role(stage), tuple(b.notes), stage)


def _forward(
    rs: ResolvedScenario,
    model: ModelRef,
    stage: Stage,
    role: str | None,
    fmt: WeightFormat,
    batch: int,
    seq: int,
    all_positions: bool,
) -> ModelFootprint:
    lay, arch = rs.layout, model.arch
    loc = _local_params(model, rs, stage)
    b = _Builder(role)
    _static_weights(b, rs, model, fmt, loc, FORWARD_PHASES)
    tr = inference_transient(arch, b=batch, s=seq, act_bytes=fmt.compute_bytes, flash=rs.flash, tp=lay.tp)
    b.add(
        "activations",
        "forward transient (one layer, no autograd)",
        "largest live set inside one layer of a no-grad forward; calibration.INFERENCE_TRANSIENT_*",
        {"forward": tr},
    )
    if stage.last and all_positions:
        vocab_local = -(-arch.vocab_size // lay.tp)
        lg = inference_logits(sequences=batch, vocab_local=vocab_local, positions=seq)
        b.add("logits", "logits of every position (fp32 log-probs)", LOGITS_SOURCE, {"forward": lg})
    return ModelFootprint(FORWARD_PHASES, tuple(b.parts), lay.gpu_role(stage), tuple(b.notes), stage)
