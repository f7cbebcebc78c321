"""The catalogs the estimator knows: LLMs (`/v1/catalog/models`) and GPUs (`/v1/gpus`).

`/v1/models` is deliberately NOT the model catalog: it keeps OpenAI's meaning for SDKs
(see openai_compat.py).
"""

from __future__ import annotations

from fastapi import APIRouter

from tools.catalog.gpus import GpuSpec, list_gpus
from tools.catalog.models import ModelSpec, list_models

router = APIRouter(tags=["catalog"])


@router.get(
    "/v1/catalog/models",
    summary="The LLMs the estimator knows (ids, aliases, architecture, published parameter counts)",
    response_model=list[ModelSpec],
)
async def catalog_models() -> list[ModelSpec]:
    return list_models()


@router.get(
    "/v1/gpus",
    summary="The GPUs the estimator knows (ids, aliases, memory in bytes and its source)",
    response_model=list[GpuSpec],
)
async def catalog_gpus() -> list[GpuSpec]:
    return list_gpus()
