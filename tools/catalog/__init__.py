"""Offline catalogs: models (real HF architectures, published counts) and GPUs (usable memory).

Importing this package is cheap (pydantic + stdlib); the JSON files load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.catalog.gpus import GpuSpec, find_gpu, get_gpu, list_gpus
from tools.catalog.models import (
    ModelSpec,
    ResolvedModel,
    find_model,
    get_model,
    list_models,
    lookup_model,
    resolve_model,
)

if TYPE_CHECKING:
    from tools.catalog.hf_config import architecture_from_hf_config
    from tools.catalog.sizes import parse_bare_size

# Imported on first use: `vramwise estimate` on a catalog model needs neither (process start time).
_LAZY = {
    "architecture_from_hf_config": "tools.catalog.hf_config",
    "parse_bare_size": "tools.catalog.sizes",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tools.catalog' has no attribute {name!r}")


__all__ = [
    "GpuSpec",
    "ModelSpec",
    "ResolvedModel",
    "architecture_from_hf_config",
    "find_gpu",
    "find_model",
    "get_gpu",
    "get_model",
    "list_gpus",
    "list_models",
    "lookup_model",
    "parse_bare_size",
    "resolve_model",
]
