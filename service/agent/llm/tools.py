"""The estimator exposed as LangChain tools, with pydantic argument schemas.

Tools are built per request (`build_tools(recorder)`): each one records what it produced in
the request's `ToolRecorder`, so the agent can stream ScenarioEvent/EstimateEvent and the
grounding check knows every figure the model was shown. Bad arguments never raise through the
agent: the model gets a clear error string (status "error") it can correct its call from.
No arithmetic about memory here: figures come from `tools.estimator`, formatting from `tools.units`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from service.agent.assumption_text import assumption_text
from service.agent.component_text import component_label_text, component_note_text, gpu_role_text
from service.agent.llm.stated import Overruled, side_with_question
from service.agent.llm.tool_schema import SAME_AS_ESTIMATE, compact_schema
from service.agent.suggestion_text import change_words
from tools.errors import ScenarioError
from tools.result import Assumption, Estimate
from tools.scenario import Scenario
from tools.units import fmt_count, fmt_gib

# the model gets this many attempts to fix bad tool arguments before the agent gives up on it
MAX_CONSECUTIVE_TOOL_FAILURES = 3  # the first call + 2 corrections


class ToolArgumentsExhausted(RuntimeError):
    """The model kept sending arguments the tools rejected: the agent falls back."""


@dataclass
class ToolRun:
    tool: str
    args: dict[str, Any]
    output: str  # exactly what the model saw
    estimate: Estimate | None = None
    scenario: Scenario | None = None  # the stated scenario the estimate is for (what the user asked)
    error: str | None = None
    figures: list[int] = field(default_factory=list)  # every byte count in `output`


@dataclass
class ToolRecorder:
    """Everything the tools produced for one request (no state shared across requests)."""

    previous_scenario: Scenario | None = None  # the conversation's last scenario (follow-ups)
    question: str = ""  # the question as asked (its stated job fields win: service.agent.llm.stated)
    question_fields: dict[str, Any] = field(default_factory=dict)
    overruled: list[Overruled] = field(default_factory=list)  # where the question's words won
    runs: list[ToolRun] = field(default_factory=list)
    consecutive_failures: int = 0
    max_consecutive_failures: int = MAX_CONSECUTIVE_TOOL_FAILURES

    @property
    def estimates(self) -> list[Estimate]:
        return [r.estimate for r in self.runs if r.estimate is not None]

    def record(self, run: ToolRun) -> None:
        self.runs.append(run)

    def note_result(self, ok: bool, detail: str = "") -> None:
        """Count consecutive failed tool calls; raise once the model cannot fix its arguments."""
        if ok:
            self.consecutive_failures = 0
            return
        self.consecutive_failures += 1
        if self.consecutive_failures >= self.max_consecutive_failures:
            raise ToolArgumentsExhausted(
                f"{self.consecutive_failures} consecutive tool calls failed; last error: {detail[:300]}"
            )


# ---- argument schemas -----------------------------------------------------------------------------


class EstimateArgs(Scenario):
    """A Scenario, plus whether it modifies the conversation's previous scenario."""

    follow_up: bool = Field(
        default=False,
        description=(
            "true when the question changes the previous scenario of this conversation "
            "('what about with LoRA?', '那如果用两张卡呢?'): give only the changed fields, "
            "the rest is taken from the previous scenario"
        ),
    )


class LookupModelArgs(BaseModel):
    name: str = Field(description="model name, HF repo, alias or bare size: 'Qwen2.5-7B', 'llama-3-8b', '7B'")


class ListGpusArgs(BaseModel):
    vendor: str | None = Field(default=None, description="optional filter: nvidia, amd, huawei, ...")


# ---- compact JSON views (what the model sees) --------------------------------------------------


def _tradeoffs(suggestion: Any, est: Estimate) -> str:
    """What a suggestion costs, in words ('steps ~33% slower (recompute)'), not the planner's ranks."""
    from service.agent.render import suggestion_tradeoffs

    return suggestion_tradeoffs(suggestion, est.scenario, "en").removeprefix("; ")


def _bytes_view(n: int) -> dict[str, Any]:
    return {"bytes": n, "gib": fmt_gib(n)}


def estimate_view(est: Estimate) -> dict[str, Any]:
    """The Estimate as compact JSON: every figure as exact bytes and as the GiB text to quote."""
    from service.agent.formula_text import symbol_meanings
    from service.agent.render import accuracy_text, no_effect_text, note_text

    components = []
    for c in est.components:
        item: dict[str, Any] = {
            "name": c.name,
            "label": c.label or component_label_text(c, "en") or c.name,
            "kind": c.kind,
            **_bytes_view(c.bytes),
            "formula": c.formula,
            "substituted": c.substituted,
            "source": c.source,
        }
        if c.model_role:
            item["model_role"] = c.model_role
        remark = component_note_text(c, "en")
        if remark:
            item["note"] = remark
        components.append(item)
    view: dict[str, Any] = {
        "scenario": est.scenario.model_dump(
            exclude_none=True, exclude_defaults=True, exclude={"architecture"}
        ),
        "params": {
            "total": fmt_count(est.params_total),
            "trainable": fmt_count(est.params_trainable),
            "active_per_token": fmt_count(est.params_active_per_token),
        },
        "gpu": {"id": est.gpu.id, "name": est.gpu.name, "memory": _bytes_view(est.gpu.memory_bytes)},
        "per_gpu": {
            "total": _bytes_view(est.per_gpu.total_bytes),
            "tensor_peak": _bytes_view(est.per_gpu.tensor_peak_bytes),
            "peak_phase": est.per_gpu.peak_phase,
        },
        "components": components,
        "formula_symbols": symbol_meanings(est.components, "en"),  # what the formulas' symbols mean
        "verdict": {
            "fits": est.fits,
            "num_gpus": est.scenario.num_gpus,
            "safety_margin": est.safety_margin,
            "headroom": _bytes_view(est.headroom_bytes),
            "min_gpus": est.min_gpus,
            "min_gpus_layout": est.min_gpus_changes,  # how min_gpus fits ({} = as stated)
        },
        "suggestions": [
            {
                "change": change_words(s, "en"),
                "total": _bytes_view(s.total_bytes),
                "fits": s.fits,
                "num_gpus": s.num_gpus,
                **({"tradeoffs": t} if (t := _tradeoffs(s, est)) else {}),
            }
            for s in est.suggestions
        ],
        "assumptions": [
            {"field": a.field, "value": a.value, "reason": a.reason or assumption_text(a, "en")}
            for a in est.assumptions
        ],
        "no_effect": [
            {"field": n.field, "value": n.value, "explanation": no_effect_text(n, "en")}
            for n in est.no_effect
        ],
    }
    role = gpu_role_text(est.per_gpu, "en")
    if role:
        view["per_gpu"]["gpu_role"] = role
    if est.gpu.alias_note:
        view["gpu"]["alias_note"] = est.gpu.alias_note
    if est.notes:
        view["notes"] = [note_text(n, "en") for n in est.notes]
    if est.accuracy is not None:
        view["accuracy_note"] = accuracy_text(est.accuracy, "en")
    if est.serving is not None:
        sv = est.serving
        view["serving"] = {
            "gpu_memory_utilization": sv.gpu_memory_utilization,
            "reserved": _bytes_view(sv.reserved_bytes),
            "kv_cache": _bytes_view(sv.kv_cache_bytes),
            "kv_bytes_per_token": sv.kv_bytes_per_token,
            "max_kv_tokens": sv.max_kv_tokens,
            "max_concurrent_sequences": sv.max_concurrent_sequences,
            "max_context_at_batch_1": sv.max_context_at_batch_1,
        }
    return view


def plan_view(est: Estimate) -> dict[str, Any]:
    """What to change to fit: the verdict, then the planner's changes cheapest first."""
    return {
        "current": {
            "total": _bytes_view(est.per_gpu.total_bytes),
            "gpu": est.gpu.name,
            "gpu_memory": _bytes_view(est.gpu.memory_bytes),
            "num_gpus": est.scenario.num_gpus,
            "fits": est.fits,
            "headroom": _bytes_view(est.headroom_bytes),
            "min_gpus": est.min_gpus,
            "min_gpus_layout": est.min_gpus_changes,  # how min_gpus fits ({} = as stated)
        },
        "changes_that_fit": [
            {
                "change": change_words(s, "en"),
                "scenario_changes": s.scenario_changes,
                "total": _bytes_view(s.total_bytes),
                "num_gpus": s.num_gpus,
                **({"tradeoffs": t} if (t := _tradeoffs(s, est)) else {}),
            }
            for s in est.suggestions
            if s.fits
        ],
        "other_changes": [
            {
                "change": change_words(s, "en"),
                "total": _bytes_view(s.total_bytes),
                "fits": s.fits,
                "num_gpus": s.num_gpus,
            }
            for s in est.suggestions
            if not s.fits
        ],
    }


def _byte_counts(obj: Any) -> Iterator[int]:
    """Every integer under a key naming bytes (`bytes`, `reserved_bytes`, `kv_bytes_per_token`) of a JSON view."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, int) and not isinstance(value, bool) and "bytes" in key:
                yield value
            else:
                yield from _byte_counts(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from _byte_counts(item)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _error_text(err: Exception) -> str:
    if isinstance(err, ScenarioError):
        body = err.render()
    elif isinstance(err, ValidationError):
        body = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
        )
    else:
        body = str(err)
    return f"ERROR {body} -- fix the arguments and call the tool again."


# ---- the tools ------------------------------------------------------------------------------------


def _scenario_from(args: dict[str, Any], recorder: ToolRecorder) -> Scenario:
    """The stated scenario: the model's arguments, merged into the previous one for a follow-up.

    Merging reuses the offline agent's follow-up rules (service.agent.offline.followup): only
    stated fields carry over, and fields that stop making sense when the task changes are dropped.
    The job fields the question states win over the model's (service.agent.llm.stated).
    """
    from service.agent.offline.followup import merge_followup

    previous = recorder.previous_scenario
    follow_up = bool(args.pop("follow_up", False))
    stated = {k: v for k, v in args.items() if v is not None and not (k == "dora" and v is False)}
    if follow_up and previous is not None:
        change = SimpleNamespace(intent="estimate", scenario=stated, followup=True)
        stated = merge_followup(previous, change)  # type: ignore[arg-type]
    stated, overruled = side_with_question(stated, recorder.question_fields, recorder.question)
    scenario = Scenario.model_validate(stated)
    recorder.overruled += [o for o in overruled if o not in recorder.overruled]
    return scenario


def build_tools(recorder: ToolRecorder) -> list[BaseTool]:
    """The four tools for one request, all recording into `recorder`."""
    from service.hub import estimate_any_model  # catalog first, then the Hub for `org/name` ids
    from tools import catalog  # lazy: keeps `import service.agent` light

    def _run(name: str, args: dict[str, Any], produce: Any) -> str:
        try:
            output, est, scenario = produce()
        except (ScenarioError, ValidationError, ValueError) as err:
            text = _error_text(err)
            recorder.record(ToolRun(tool=name, args=args, output=text, error=text))
            raise ToolException(text) from err
        figures = list(_byte_counts(json.loads(output)))
        recorder.record(
            ToolRun(tool=name, args=args, output=output, estimate=est, scenario=scenario, figures=figures)
        )
        return output

    async def estimate_memory(**kwargs: Any) -> str:
        args = dict(kwargs)

        def produce() -> tuple[str, Estimate, Scenario]:
            scenario = _scenario_from(dict(args), recorder)
            est = estimate_any_model(scenario, plan=True)
            return _dumps(estimate_view(est)), est, scenario

        return _run("estimate_memory", args, produce)

    async def plan_fit(**kwargs: Any) -> str:
        args = dict(kwargs)

        def produce() -> tuple[str, Estimate, Scenario]:
            scenario = _scenario_from(dict(args), recorder)
            est = estimate_any_model(scenario, plan=True)
            return _dumps(plan_view(est)), est, scenario

        return _run("plan_fit", args, produce)

    async def lookup_model(name: str) -> str:
        def produce() -> tuple[str, None, None]:
            resolved = catalog.resolve_model(name)
            arch = resolved.architecture.model_dump(exclude_defaults=True)
            view: dict[str, Any] = {
                "params": resolved.params,
                "params_human": fmt_count(resolved.params),
                "architecture": arch,
            }
            if resolved.spec is not None:
                view |= {"id": resolved.spec.id, "name": resolved.spec.name, "hf_repo": resolved.spec.hf_repo}
                if resolved.spec.architecture.is_moe:
                    view["active_params_per_token"] = fmt_count(resolved.spec.active_params)
            if resolved.assumed_code:
                said = Assumption(
                    field="model", value=name, code=resolved.assumed_code, values=resolved.assumed_values
                )
                view["assumed"] = assumption_text(said, "en")
            return _dumps(view), None, None

        return _run("lookup_model", {"name": name}, produce)

    async def list_gpus(vendor: str | None = None) -> str:
        def produce() -> tuple[str, None, None]:
            rows = []
            for g in catalog.list_gpus():
                g_vendor = getattr(g, "vendor", None)
                if vendor and g_vendor and vendor.lower() not in str(g_vendor).lower():
                    continue
                rows.append(
                    {
                        "id": g.id,
                        "name": g.name,
                        "memory": fmt_gib(g.memory_bytes),
                        "memory_bytes": g.memory_bytes,
                        **({"marketed": g.marketed} if getattr(g, "marketed", None) else {}),
                        **({"vendor": g_vendor} if g_vendor else {}),
                    }
                )
            return _dumps(rows), None, None

        return _run("list_gpus", {"vendor": vendor}, produce)

    common: dict[str, Any] = {"handle_tool_error": True}
    return [
        StructuredTool.from_function(
            coroutine=estimate_memory,
            name="estimate_memory",
            description=(
                "Estimate per-GPU memory for one training / fine-tuning / RL / inference job. Returns every "
                "component (bytes, GiB, formula with numbers, source), the total, the verdict for the GPU, "
                "suggestions that make it fit, the assumptions and settings with no effect. Call it for "
                "EVERY memory figure you state."
            ),
            args_schema=compact_schema(EstimateArgs),
            **common,
        ),
        StructuredTool.from_function(
            coroutine=plan_fit,
            name="plan_fit",
            description=(
                "What to change so the job fits: the current total and verdict, then the cheapest changes "
                "(LoRA/QLoRA, gradient checkpointing, ZeRO, more GPUs, smaller batch...) with their totals. "
                "Arguments: the same as estimate_memory's."
            ),
            args_schema=SAME_AS_ESTIMATE,
            **common,
        ),
        StructuredTool.from_function(
            coroutine=lookup_model,
            name="lookup_model",
            description="Look up a model: exact parameter count and architecture, or near names if unknown.",
            args_schema=LookupModelArgs,
            **common,
        ),
        StructuredTool.from_function(
            coroutine=list_gpus,
            name="list_gpus",
            description="The GPU catalog: ids, names and memory (GiB).",
            args_schema=ListGpusArgs,
            **common,
        ),
    ]
