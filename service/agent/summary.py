"""The short first part of an estimate answer: at most six lines, every figure from the Estimate.

Lines, in order (templates prompts/<lang>/answer.toml [summary]):
1. the verdict and the per-GPU total;
2. the figure the question asked for, when it named one (`focus`: a component such as the KV cache,
   the longest context or the concurrency a server reaches, the fewest GPUs);
3. the two or three biggest components;
3b. a named serving engine: what it reserves and its KV pool, or where llama.cpp puts the layers (its note);
4. the fewest GPUs of this type that fit (the full answer's own line), when it does not fit or was asked;
5. the cheapest change that makes it fit (the planner's first suggestion), when it does not fit;
6. the accuracy bound, once, briefly.
The full cited breakdown follows in the answer; channels show it collapsed or on request.
"""

from __future__ import annotations

from typing import Any

from service.agent import render
from tools.result import Estimate
from tools.units import fmt_gib

MAX_LINES = 6
# what a question can ask for besides the verdict (the parser's `asks`)
FOCUS_COMPONENTS = ("kv_cache", "weights", "activations", "logits", "optimizer_states", "gradients")
FOCUSES = (*FOCUS_COMPONENTS, "max_context", "concurrency", "min_gpus")
# the note a named serving engine leads with (tools/engines/): its reservation and KV pool, or its layers
ENGINE_NOTES = (
    "vllm_pool",
    "sglang_pool",
    "gguf_all_layers_on_gpu",
    "gguf_some_layers_on_gpu",
    "gguf_offload_would_fit",
)


def _s(lang: str, key: str, **values: Any) -> str:
    return render._fill(lang, "summary", key, **values)


def verdict_line(estimate: Estimate, lang: str) -> str:
    values = {
        "total": fmt_gib(estimate.per_gpu.total_bytes),
        "gpu": estimate.gpu.name,
        "gpu_memory": fmt_gib(estimate.gpu.memory_bytes),
        "num_gpus": estimate.scenario.num_gpus or 1,
        "headroom": fmt_gib(estimate.headroom_bytes),
        "short": fmt_gib(-estimate.headroom_bytes),
        "margin": render._margin(estimate.safety_margin),
    }
    return _s(lang, "verdict_fits" if estimate.fits else "verdict_no_fit", **values)


def _focus_line(estimate: Estimate, lang: str, focus: str | None, panels: render.PanelTexts) -> str | None:
    if focus in FOCUS_COMPONENTS:
        parts = [i for i, c in enumerate(estimate.components) if c.name == focus]
        if not parts:
            return None
        label = panels["components"][parts[0]]["label"]
        return _s(lang, "focus", label=label, gib=fmt_gib(sum(estimate.components[i].bytes for i in parts)))
    if focus in ("max_context", "concurrency") and estimate.serving is not None:
        sv = estimate.serving
        seq_len = estimate.scenario.seq_len
        key = "focus_max_context" if focus == "max_context" else "focus_concurrency"
        if key == "focus_max_context" and sv.max_model_len and sv.max_context_at_batch_1 >= sv.max_model_len:
            key = "focus_max_context_window"  # the KV room holds more: the model's window is the limit
        return _s(
            lang,
            key,
            max_context=f"{sv.max_context_at_batch_1:,}",
            max_seqs=f"{sv.max_concurrent_sequences:,}",
            seq_len=f"{seq_len:,}" if seq_len else "?",
        )
    return None


def _biggest_line(estimate: Estimate, lang: str, skip: str | None, panels: render.PanelTexts) -> str:
    components = estimate.components
    ranked = sorted(
        (i for i, c in enumerate(components) if c.bytes > 0 and c.name != skip),
        key=lambda i: -components[i].bytes,
    )[:3]
    joiner = render._tpl(lang, "summary", "part_joiner")
    parts = joiner.join(
        _s(lang, "part", label=panels["components"][i]["label"], gib=fmt_gib(components[i].bytes))
        for i in ranked
    )
    return _s(lang, "biggest", parts=parts)


def min_gpus_line(estimate: Estimate, lang: str) -> str | None:
    """The full answer's fewest-GPUs sentence (same templates, so the two never differ)."""
    s = estimate.scenario
    if estimate.min_gpus is not None:
        how = ""
        if estimate.min_gpus_changes is not None:
            how = render.layout_text(estimate.min_gpus_changes, s, lang)
        key = "min_gpus_how" if how else ("min_gpus_same" if estimate.min_gpus_changes == {} else "min_gpus")
        if how and not estimate.fits and estimate.min_gpus <= (s.num_gpus or 1):
            # the GPUs asked for are enough, but only with another layout: never "fewest: 4" under "4 do not fit"
            key = "min_gpus_relayout"
        line = render._fill(
            lang,
            "text",
            key,
            gpu=estimate.gpu.name,
            min_gpus=estimate.min_gpus,
            how=how,
            num_gpus=s.num_gpus or 1,
        )
        return _with_fix(estimate, lang, line)
    if not estimate.fits:
        return render._fill(lang, "text", "min_gpus_none", gpu=estimate.gpu.name)
    return None


def _with_fix(estimate: Estimate, lang: str, line: str) -> str:
    """The fewest GPUs as configured, and (when a fitting fix needs fewer: the planner's cheap levers) how
    many with it: "8 as configured, 2 with the fix", never a fewest-GPU figure above a fix that needs fewer."""
    from tools.inverse import cheap_fix

    fewer = [
        sg.num_gpus for sg in estimate.suggestions if cheap_fix(sg) and sg.num_gpus < (estimate.min_gpus or 0)
    ]
    if not fewer:
        return line
    from service.agent.asked_text import _fill as asked_fill

    return line + asked_fill(lang, "text", "min_gpus_with_fix", fix_gpus=min(fewer), gpu=estimate.gpu.name)


def _fix_line(estimate: Estimate, lang: str, panels: render.PanelTexts) -> str | None:
    if estimate.fits:
        return None
    fitting = [i for i, s in enumerate(estimate.suggestions) if s.fits]
    if not fitting:
        return None
    sug = estimate.suggestions[fitting[0]]
    return _s(
        lang,
        "fix",
        change=panels["suggestions"][fitting[0]]["change"],
        total=fmt_gib(sug.total_bytes),
        gpus=render.gpus_text(sug.num_gpus, lang),
        verdict=render._tpl(lang, "text", "fits_word"),
    )


def accuracy_line(estimate: Estimate, lang: str, key: str = "accuracy") -> str | None:
    """The estimate's measured error bound (Estimate.accuracy, from benchmarks/accuracy), briefly; `key`
    `accuracy_cli` for a text where no formulas follow."""
    b = estimate.accuracy
    if b is None:
        return None
    return _s(lang, key, typical=b.typical_pct, worst=f"{b.worst_abs_error_pct:.1f}")


def summary_lines(
    estimate: Estimate,
    language: str,
    focus: str | None = None,
    display: render.PanelTexts | None = None,
    lead: str | None = None,
) -> list[str]:
    """At most MAX_LINES lines: verdict, asked-for figure, biggest parts, fewest GPUs, cheapest fix, accuracy.
    Component labels and changes are the panel texts' (`display`, render.display_texts, made when not given).
    `lead`: what was asked, answered (service/agent/asked_text.py): the first line, before the verdict; the
    asked-for figure line is then left out (the lead is that figure)."""
    lang = render._lang(language)
    panels = render.panels_for(estimate, lang, display)
    if lead:
        focus = None
    lines: list[str | None] = [lead, verdict_line(estimate, lang), _focus_line(estimate, lang, focus, panels)]
    lines.append(_biggest_line(estimate, lang, focus if focus in FOCUS_COMPONENTS else None, panels))
    lines.append(next((render.note_text(n, lang) for n in estimate.notes if n.code in ENGINE_NOTES), None))
    if not estimate.fits or focus == "min_gpus":
        lines.append(min_gpus_line(estimate, lang))
    lines.append(_fix_line(estimate, lang, panels))
    lines.append(accuracy_line(estimate, lang))
    out = [line for line in lines if line]
    return out[:MAX_LINES]


def summary_text(estimate: Estimate, language: str, focus: str | None = None) -> str:
    return "\n".join(summary_lines(estimate, language, focus))


def text_summary(text: str) -> str:
    """The summary of an answer without an estimate (a concept, a list): its first lines, at most six."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:MAX_LINES])
