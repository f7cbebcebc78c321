"""Weights and their quantisation metadata on one GPU.

- training, every weight trained: P_local x B_w (the recipe's weight bytes; tools/rules/precision.py);
- training with adapters (LoRA/QLoRA): the frozen base stored in its format (tools/rules/quant.py: linears at
  the format's rate, other parameters at the compute dtype, fp32 under PEFT's k-bit preparation) plus
  the adapters at B_w;
- ZeRO-3: / N (DP ranks); parameter offload: nothing resident (tools/components/offload.py);
- inference / frozen forward: the stored format (offloaded: the running layer only).
"""

from __future__ import annotations

from tools import calibration as cal
from tools.components.local import format_bytes, rates
from tools.components.offload import params_offloaded_note, running_layer_share
from tools.components.phased import TRAIN_PHASES, PhasedComponent, Texts, cite, phased, same
from tools.components.step import ModelStep, TrainStep
from tools.model.lora import decoder_linears
from tools.notes import Note, note
from tools.rules.quant import WeightFormat

QUANT_METADATA_LABEL = "quant_metadata"  # label code (tools/labels.py)


def training_weights(ts: TrainStep, notes: list[Note]) -> list[PhasedComponent | None]:
    """The trained model's weights (+ quantisation metadata of a frozen quantised base)."""
    lay, recipe = ts.lay, ts.recipe
    if ts.adapters:
        w_total, meta, base_texts = _base_and_adapters(ts, notes)
        w_label, w_values = "weights.frozen_base", {"format": ts.fmt.name}
    else:
        meta = 0
        w_total = ts.loc.total * recipe.weight_bytes

        def base_texts() -> tuple[str, str]:
            return f"P_local x {recipe.weight_bytes} B", f"{ts.loc.total:,} x {recipe.weight_bytes} B"

        w_label, w_values = "weights.bits", {"bits": recipe.weight_bytes * 8}
    w_div = lay.weights_divisor
    zero3, n = w_div > 1 and not lay.offload_params, ts.dp
    if lay.offload_params:
        w_total, meta = 0, 0
        notes.append(params_offloaded_note(ts.rs))
    elif zero3:
        w_total, meta = w_total // w_div, meta // w_div

    def w_texts() -> tuple[str, str]:
        w_formula, w_subst = base_texts()
        if zero3:
            w_formula += " / N (ZeRO-3)"
            w_subst += f" / {ts.dp}"
        return w_formula, f"{w_subst} = {w_total:,} B"

    weights = phased(
        "weights",
        w_label,
        _weights_source(ts.fmt, recipe.source, ts.adapters),
        same(TRAIN_PHASES, w_total, w_texts),
        ts.role,
        **w_values,
    )
    if not meta:
        return [weights]
    metadata = phased(
        "quant_metadata",
        QUANT_METADATA_LABEL,
        ts.fmt.source,
        same(
            TRAIN_PHASES,
            meta,
            lambda: (
                rates(ts.fmt)[1] + (" / N (ZeRO-3)" if zero3 else ""),
                f"{ts.loc.linear_local:,}" + (f" / {n}" if zero3 else "") + f" -> {meta:,} B",
            ),
        ),
        ts.role,
    )
    return [weights, metadata]


def _base_and_adapters(ts: TrainStep, notes: list[Note]) -> tuple[int, int, Texts]:
    """(bytes, metadata bytes, (formula, substituted) on demand) of a frozen base in its format + adapters."""
    fmt, recipe, loc = ts.fmt, ts.recipe, ts.loc
    other_bytes = fmt.compute_bytes
    if fmt.quantised and ts.rs.task in ("qlora", "lora") and cal.QLORA_UPCAST_NON_QUANTIZED_TO_FP32:
        other_bytes = 4
        notes.append(note("peft_kbit_fp32_upcast"))
    base_w, meta = format_bytes(ts.model, fmt, loc, other_bytes)
    adapter_w = ts.trainable_local * recipe.weight_bytes

    def texts() -> tuple[str, str]:
        data_rate = rates(fmt)[0]
        formula = f"P_linear x {data_rate} ({fmt.name}) + P_other x {other_bytes} B + P_adapter x {recipe.weight_bytes} B"
        subst = (
            f"{loc.linear_local:,} x {data_rate} + {loc.other:,} x {other_bytes} B"
            f" + {ts.trainable_local:,} x {recipe.weight_bytes} B"
        )
        return formula, subst

    return base_w + adapter_w, meta, texts


def _weights_source(fmt: WeightFormat, recipe_source: str, adapters: bool) -> str:
    if adapters:
        extra = "adapters in fp32 (PEFT autocast_adapter_dtype)"
        if fmt.quantised and cal.QLORA_UPCAST_NON_QUANTIZED_TO_FP32:
            extra = "PEFT prepare_model_for_kbit_training (non-quantised params to fp32); " + extra
        return cite(fmt.source, extra)
    return recipe_source


def _format_label(fmt: WeightFormat) -> tuple[str, dict[str, object]]:
    """(label code, values) of weights stored in `fmt`: GGUF names its block mix, EXL2 its bits."""
    from tools.rules.gguf import Exl2Format, GgufFormat, mix_label_values

    if isinstance(fmt, Exl2Format):
        return "weights.exl2", {"bpw": float(fmt.bits)}
    if isinstance(fmt, GgufFormat):
        return "weights.gguf", mix_label_values(fmt.name)
    return "weights.format", {"format": fmt.name}


def stored_weights(ms: ModelStep, phases: tuple[str, ...]) -> list[PhasedComponent | None]:
    """Frozen or inference weights in their stored format (+ quantisation metadata)."""
    fmt, loc = ms.fmt, ms.loc
    w, meta = format_bytes(ms.model, fmt, loc, fmt.compute_bytes)
    if ms.lay.offload_params and not ms.rs.training:
        return _running_layer_weights(ms, phases, w, meta)

    def w_texts() -> tuple[str, str]:
        data_rate = rates(fmt)[0]
        if hasattr(fmt, "non_linear_bytes"):  # GGUF / EXL2: per-tensor block types (tools/rules/gguf.py)
            rate = fmt.effective_bpw(decoder_linears(ms.model.params))
            w_formula = f"P_linear x {rate:.2f}/8 B + W_other ({fmt.label})"
            w_subst = f"{loc.linear_local:,} x {rate:.2f}/8 B + {fmt.non_linear_bytes(loc):,} B = {w:,} B"
        elif fmt.quantised:
            w_formula = f"P_linear x {data_rate} ({fmt.name}) + P_other x {fmt.compute_bytes} B"
            w_subst = f"{loc.linear_local:,} x {data_rate} + {loc.other:,} x {fmt.compute_bytes} B = {w:,} B"
        else:
            w_formula = f"P_local x {data_rate}"
            w_subst = f"{loc.total:,} x {data_rate} = {w:,} B"
        return w_formula, w_subst

    at = same(phases, w, w_texts)
    code, values = _format_label(fmt)
    out = [phased("weights", code, fmt.source, at, ms.role, **values)]
    if meta:
        at = same(phases, meta, lambda: (rates(fmt)[1], f"{loc.linear_local:,} -> {meta:,} B"))
        out.append(phased("quant_metadata", QUANT_METADATA_LABEL, fmt.source, at, ms.role))
    return out


def _running_layer_weights(
    ms: ModelStep, phases: tuple[str, ...], w: int, meta: int
) -> list[PhasedComponent | None]:
    """Inference with offloaded weights: only the running layer's weights are on the GPU."""
    share = running_layer_share(ms.loc)
    w_on, meta = round(w * share), round(meta * share)
    fmt = ms.fmt
    out = [
        phased(
            "weights",
            "weights.offloaded",
            "accelerate big_modeling cpu_offload (AlignDevicesHook moves each module's weights at forward)",
            same(
                phases,
                w_on,
                lambda: (f"P_largest_layer ({fmt.name})", f"{ms.loc.largest_gathered:,} -> {w_on:,} B"),
            ),
            ms.role,
            format=fmt.name,
        )
    ]
    if meta:
        out.append(
            phased(
                "quant_metadata",
                QUANT_METADATA_LABEL,
                fmt.source,
                same(phases, meta, lambda: ("P_largest_layer", f"{meta:,} B")),
                ms.role,
            )
        )
    return out
