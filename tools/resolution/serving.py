"""KV dtype, the serving reservation and the safety margin.

Defaults: kv_dtype the compute dtype; gpu_memory_utilization 0.9 (vLLM default) for the serving figure;
safety_margin 0.10 of the card: Fujii et al. 2024 (arXiv 2411.06465) found no OOM for runs whose
estimate stayed under 80% of the card; 10% covers allocator fragmentation beyond our slack term and
framework buffers we do not model, without rejecting configurations that do run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.resolution.defaults import DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_SAFETY_MARGIN, Filled

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuSpec
    from tools.scenario import Scenario

KV_DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def kv_dtype_bytes(sc: Scenario, training: bool, weight_dtype: str, gpu: GpuSpec, f: Filled) -> int:
    kv_default = (
        "fp32" if weight_dtype == "fp32" else ("fp16" if weight_dtype == "fp16" or not gpu.bf16 else "bf16")
    )
    kv_dtype = sc.kv_dtype
    if kv_dtype is None and not training:
        kv_dtype = f.fill("kv_dtype", kv_default, "kv_dtype.compute")
    return KV_DTYPE_BYTES[kv_dtype or kv_default]


def memory_reservation(sc: Scenario, training: bool, f: Filled) -> tuple[float, float]:
    """(gpu_memory_utilization, safety_margin)."""
    gmu = sc.gpu_memory_utilization
    if gmu is None:
        gmu = DEFAULT_GPU_MEMORY_UTILIZATION
        if not training:
            f.fill("gpu_memory_utilization", gmu, "gpu_memory_utilization.vllm_default")
    margin = sc.safety_margin
    if margin is None:
        # Fujii et al. 2024: runs estimated under 80% never OOMed
        margin = f.fill("safety_margin", DEFAULT_SAFETY_MARGIN, "safety_margin.default")
    return gmu, margin
