"""The model catalog: real HF architectures of popular open models, with published counts.

`models.json` holds one entry per model: the architecture (config.json keys), the published
parameter count and where it comes from. Counts are recomputed from the architecture by
`tools.model.params.count_params`; tests pin them against the published figures.
"""

from __future__ import annotations

import json
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from tools.catalog.fuzzy import closest, normalize, strip_variant
from tools.errors import ScenarioError, quote
from tools.model.architecture import Architecture, ParamBreakdown

MODELS_JSON = Path(__file__).with_name("models.json")
MODEL_ACCEPTED = "a catalog id (see GET /v1/catalog/models), a bare size like 7B / 70亿, or an HF config.json"


class ContextExtension(BaseModel):
    """RoPE scaling the model card supports beyond the shipped config's window (e.g. Qwen2.5/Qwen3 YaRN)."""

    model_config = ConfigDict(frozen=True)

    method: str  # rope_scaling type, e.g. "yarn"
    factor: float = Field(gt=1)
    original_max_position_embeddings: int = Field(gt=0)
    source: str  # the model card that says so

    @property
    def max_tokens(self) -> int:
        """The context the scaling allows: factor x original window (transformers YaRN rope_init)."""
        return int(self.factor * self.original_max_position_embeddings)


class ModelSpec(BaseModel):
    """One catalog model."""

    model_config = ConfigDict(frozen=True)

    id: str  # lowercase canonical id, e.g. llama-2-7b
    name: str  # display name, e.g. Llama-2-7B
    aliases: list[str] = Field(default_factory=list)
    family: str
    hf_repo: str
    architecture: Architecture
    published_params: int
    published_source: str  # model card / safetensors index total_size / paper table
    # parameters the published checkpoint stores twice (a tied lm_head saved as its own tensor): the
    # published safetensors count = params + stored_duplicate_params
    stored_duplicate_params: int = 0
    notes: str = ""
    # the dtype the official checkpoint ships in when it is not 16-bit (DeepSeek-V3/R1: "fp8",
    # block-scaled e4m3): what serving engines load as is, so the inference default
    checkpoint_dtype: str | None = None
    # what rope scaling the model card supports beyond max_position_embeddings (None: nothing stated)
    context_extension: ContextExtension | None = None

    @cached_property
    def breakdown(self) -> ParamBreakdown:  # computed once per (immutable) catalog entry
        from tools.model.params import count_params

        return count_params(self.architecture)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def params(self) -> int:
        return self.breakdown.total

    @computed_field  # type: ignore[prop-decorator]
    @property
    def active_params(self) -> int:
        return self.breakdown.active_per_token


class ResolvedModel(BaseModel):
    """What a model reference resolved to: a catalog entry, or a bare size mapped to one."""

    spec: ModelSpec | None
    architecture: Architecture
    params: int
    # set when an architecture was assumed for the user (bare size): an Assumption's code and values
    # (tools/assumptions.py), said in every language by the service
    assumed_code: str | None = None
    assumed_values: dict[str, object] = Field(default_factory=dict)

    @property
    def spec_or_none(self) -> ModelSpec | None:
        return self.spec


# An estimate needs one catalog entry: the index of names is read from the JSON as is and an entry is
# validated (its architecture checked field by field, ~0.1 ms each) only when it is asked for, so that
# `vramwise estimate` does not validate all ~115 architectures at start-up (~10 ms).
@lru_cache(maxsize=1)
def _raw() -> dict[str, dict[str, Any]]:
    """catalog id -> its models.json entry, not validated yet."""
    raw = json.loads(MODELS_JSON.read_text(encoding="utf-8"))
    return {entry["id"]: entry for entry in raw["models"]}


@cache
def _spec(model_id: str) -> ModelSpec:
    """One validated catalog entry (the same object on every call)."""
    return ModelSpec.model_validate(_raw()[model_id])


@lru_cache(maxsize=1)
def _load() -> tuple[ModelSpec, ...]:
    return tuple(_spec(model_id) for model_id in _raw())


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """normalised name -> canonical id, over ids, names, aliases, HF repos and repo basenames."""
    index: dict[str, str] = {}
    for model_id, entry in _raw().items():
        repo_base = entry["hf_repo"].rsplit("/", 1)[-1]
        for name in (model_id, entry["name"], entry["hf_repo"], repo_base, *entry.get("aliases", ())):
            index.setdefault(normalize(name), model_id)
    return index


def list_models() -> list[ModelSpec]:
    return list(_load())


def get_model(model_id: str) -> ModelSpec:
    if model_id not in _raw():
        raise KeyError(model_id)
    return _spec(model_id)


def lookup_model(name: str) -> ModelSpec | None:
    """Catalog match (case/punctuation-insensitive, '-instruct'/'-chat'/'-it' variants accepted) or None."""
    index = _index()
    key = normalize(name)
    if "/" in name:  # an HF repo path: also try its basename
        key_base = normalize(name.rsplit("/", 1)[-1])
        candidates = [key, key_base]
    else:
        candidates = [key]
    for cand in list(candidates):
        stripped = strip_variant(cand)
        while stripped != cand:
            candidates.append(stripped)
            cand, stripped = stripped, strip_variant(stripped)
    for cand in candidates:
        if cand in index:
            return get_model(index[cand])
    return None


def model_suggestions(name: str, n: int = 3) -> list[str]:
    return closest(name, _index(), n=n)


def find_model(name: str) -> ModelSpec:
    """The catalog model `name` refers to; ScenarioError(field='model') with near ids otherwise."""
    spec = lookup_model(name) if name and name.strip() else None
    if spec is None:
        raise ScenarioError(
            "model",
            f"unknown model '{quote(name)}'",
            accepted=MODEL_ACCEPTED,
            suggestions=model_suggestions(name or ""),
            code="unknown_model",
            values={"name": quote(name)},
        )
    return spec


def resolve_model(name_or_size: str) -> ResolvedModel:
    """Catalog model first, then a bare size ('7B', '70亿', '8x7B') mapped to a typical architecture."""
    spec = lookup_model(name_or_size) if name_or_size and name_or_size.strip() else None
    if spec is not None:
        return ResolvedModel(spec=spec, architecture=spec.architecture, params=spec.params)
    from tools.catalog.sizes import resolve_bare_size  # only for bare sizes (keeps process start light)

    bare = resolve_bare_size(name_or_size)
    if bare is not None:
        typical, arch, assumed = bare
        if typical is not None:
            return ResolvedModel(
                spec=typical,
                architecture=arch,
                params=typical.params,
                assumed_code=assumed[0],
                assumed_values=assumed[1],
            )
        from tools.model.params import count_params

        return ResolvedModel(
            spec=None,
            architecture=arch,
            params=count_params(arch).total,
            assumed_code=assumed[0],
            assumed_values=assumed[1],
        )
    raise ScenarioError(
        "model",
        f"unknown model '{quote(name_or_size)}'",
        accepted=MODEL_ACCEPTED,
        suggestions=model_suggestions(name_or_size or ""),
        code="unknown_model",
        values={"name": quote(name_or_size)},
    )
