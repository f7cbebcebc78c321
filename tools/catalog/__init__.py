"""Offline catalogs: models (real HF architectures, published counts) and GPUs (usable memory).

Importing this package is cheap (pydantic + stdlib); the JSON files load on first use.
"""

from __future__ import annotations

from tools.catalog.gpus import GpuSpec, find_gpu, get_gpu, list_gpus
from tools.catalog.hf_config import architecture_from_hf_config
from tools.catalog.models import (
    ModelSpec,
    ResolvedModel,
    find_model,
    get_model,
    list_models,
    lookup_model,
    resolve_model,
)
from tools.catalog.sizes import parse_bare_size

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
