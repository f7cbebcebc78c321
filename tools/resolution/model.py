"""Model look-up: the model a scenario names -> ModelRef (name, architecture, exact parameter breakdown)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tools.assumptions import Said, said
from tools.errors import ScenarioError
from tools.model.architecture import Architecture, ParamBreakdown
from tools.notes import Note, note

if TYPE_CHECKING:
    from tools.resolution.defaults import Filled
    from tools.scenario import Scenario


@dataclass(frozen=True, eq=False)
class ModelRef:
    """One model of the job: its name, architecture and exact parameter breakdown. Compared and hashed by
    identity (each is made once per model name and reused: tools/call_memo.py keys on it)."""

    id: str
    name: str
    arch: Architecture
    params: ParamBreakdown
    checkpoint_dtype: str | None = None  # catalog: the official checkpoint's dtype when not 16-bit


@lru_cache(maxsize=256)
def _catalog_model(name: str) -> tuple[ModelRef, tuple[str, dict[str, object]] | None]:
    from tools.catalog.models import resolve_model

    resolved = resolve_model(name)
    spec = resolved.spec
    mid = spec.id if spec else name
    display = spec.name if spec else name
    native = spec.checkpoint_dtype if spec and not resolved.assumed_code else None
    arch = _family_details(spec.family if spec else None, resolved.architecture)
    ref = ModelRef(mid, display, arch, _breakdown(arch), native)
    return ref, (resolved.assumed_code, resolved.assumed_values) if resolved.assumed_code else None


# transformers config defaults of the memory-relevant details the catalog does not store:
# Gemma/Gemma-2/Gemma-3 GemmaRMSNorm (fp32 `x * (1 + w)`); Gemma2Config attn_logit_softcapping=50.0,
# final_logit_softcapping=30.0 (Gemma-3 drops soft-capping for qk-norm).
_FAMILY_DETAILS: dict[str, dict[str, Any]] = {
    "gemma": {"norm_fp32_scale": True},
    "gemma2": {"norm_fp32_scale": True, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0},
    "gemma3": {"norm_fp32_scale": True},
}


def _family_details(family: str | None, arch: Architecture) -> Architecture:
    """The catalog architecture with its family's implementation details (fields left unset)."""
    details = _FAMILY_DETAILS.get(family or "", {})
    update = {k: v for k, v in details.items() if getattr(arch, k) in (None, False)}
    return arch.model_copy(update=update) if update else arch


def _breakdown(arch: Architecture) -> ParamBreakdown:
    from tools.model.params import count_params

    return count_params(arch)


def _size_label(params: int) -> str:
    """'7B', '1.5B', '2000B': the count in billions, never with an exponent ('1e+06B' is no size)."""
    billions = f"{params / 1e9:g}"
    return f"{billions if 'e' not in billions else f'{params / 1e9:f}'.rstrip('0').rstrip('.')}B"


def _config_defaults(arch: Architecture) -> list[Said]:
    """What an explicit config.json left out and the mapping filled (tools/catalog/hf_config.py)."""
    out = []
    for key, default in arch.config_defaults.items():
        if key == "vision_config":
            out.append(said("architecture", default, "architecture.vision_not_counted"))
        else:
            out.append(said("architecture", default, "architecture.config_default", key=key, default=default))
    return out


def resolve_model_ref(
    model: str | None, params: int | None, architecture: Architecture | None
) -> tuple[ModelRef, list[Said], list[Note]]:
    """The model a scenario names (catalog id, bare size, explicit architecture or a parameter count), with
    the assumptions (records, tools/assumptions.py) and notes of how it was read."""
    assumptions: list[Said] = []
    notes: list[Note] = []
    if architecture is not None:
        ref = ModelRef(
            model or "custom", model or "custom architecture", architecture, _breakdown(architecture)
        )
        assumptions.extend(_config_defaults(architecture))
    elif model:
        ref, assumed = _catalog_model(model.strip())
        if assumed:
            assumptions.append(said("model", ref.id, assumed[0], **assumed[1]))
    elif params:
        # an explicit count is honoured exactly: a dense decoder of that many parameters, shapes typical of
        # the size (tools.catalog.sizes.architecture_for_params); 7e9 in fp16 is 14.0 GB of weights
        from tools.catalog.sizes import architecture_for_params

        try:
            arch, shape = architecture_for_params(params)
        except ScenarioError as err:  # the count given is what is wrong
            raise ScenarioError(
                "params", err.message, accepted=err.accepted, code=err.code, values=err.values
            ) from None
        label = _size_label(params)
        ref = ModelRef(label, label, arch, _breakdown(arch))
        assumptions.append(said("model", ref.id, "model.from_params", params=params, **shape))
    else:
        raise ScenarioError(
            "model",
            "no model given",
            accepted="a catalog model (llama-2-7b, Qwen2.5-7B), a size (7B, 70亿), params, or an HF config",
            code="no_model",
        )
    total = ref.params.total
    if params and total and abs(params - total) / total > 0.02:
        notes.append(
            note(
                "params_differ_from_architecture",
                params=params,
                model=ref.name,
                architecture_params=total,
            )
        )
    return ref, assumptions, notes


def look_up_model(sc: Scenario, f: Filled) -> ModelRef:
    """Stage 1: the model, its assumptions and notes; the scenario gets the exact parameter count."""
    ref, assumptions, notes = resolve_model_ref(sc.model, sc.params, sc.architecture)
    f.said.extend(assumptions)
    f.notes.extend(notes)
    f.changes["params"] = ref.params.total
    if sc.model is None and sc.architecture is None:
        f.changes["model"] = ref.id
    return ref
