"""The diagnosis of a pasted error or log: the figures it states, reconciled with our estimate of the job
where the job is known, and the cheapest changes.

Levers: PyTorch's own advice (c10/cuda/CUDACachingAllocator.cpp: "If reserved but unallocated memory is
large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), vLLM's ("Try increasing
`gpu_memory_utilization` or decreasing `max_model_len`", vllm/v1/core/kv_cache_utils.py), the processes
nvidia-smi lists, llama.cpp's -ngl/-c/-ctk; the planner's own levers follow in the estimate's answer.
Every line is (section, code, values); texts in prompts/<lang>/paste.toml.
"""

from __future__ import annotations

from typing import Any

from service.agent.paste.reading import Reading
from tools.result import Estimate
from tools.units import fmt_gib

Line = tuple[str, str, dict[str, Any]]
VLLM_BLOCK_TOKENS = 16  # vLLM's default KV block size on CUDA (tools/serving.py VLLM_DEFAULT_BLOCK_SIZE)
FRAGMENTED_SHARE = 0.05  # reserved-but-unallocated above 5% of the card (or above the request): fragmentation
OTHER_PROCESS_BYTES = (
    512 << 20
)  # memory held by other processes worth naming (a CUDA context is ~0.3-0.5 GiB)


def _gib(value: int) -> str:
    return fmt_gib(value)


def diagnose(reading: Reading, estimate: Estimate | None) -> list[Line]:
    kind = reading.facts.get("kind")
    if kind == "oom":
        return _oom(reading.observed, estimate)
    if kind == "memory_summary":
        return _summary(reading.observed, estimate)
    if kind == "nvidia-smi":
        return _smi(reading, estimate)
    if kind in ("vllm-error", "vllm-log"):
        return _vllm(reading, estimate)
    if kind == "llama.cpp-log":
        return _llama(reading.observed, estimate)
    return []


def _oom(seen: dict[str, Any], estimate: Estimate | None) -> list[Line]:
    lines: list[Line] = []
    shown = {k: _gib(v) for k, v in seen.items() if isinstance(v, int)}
    if {"requested_bytes", "capacity_bytes", "free_bytes", "allocated_bytes"} <= set(seen):
        code = "oom" if "in_use_bytes" in seen else "oom_old"
        lines.append(("diagnosis", code, {k.removesuffix("_bytes"): v for k, v in shown.items()}))
    if estimate is not None and "allocated_bytes" in seen and "requested_bytes" in seen:
        lines += _reconcile(seen["allocated_bytes"], seen["requested_bytes"], estimate)
    unallocated = seen.get("reserved_unallocated_bytes", 0)
    capacity = seen.get("capacity_bytes", 0)
    if unallocated and (
        unallocated >= seen.get("requested_bytes", 0) or unallocated > FRAGMENTED_SHARE * capacity
    ):
        lines.append(("lever", "expandable_segments", {"reserved_unallocated": _gib(unallocated)}))
    other = seen.get("other_processes_bytes")
    if other is None and {"capacity_bytes", "free_bytes", "in_use_bytes"} <= set(seen):
        other = seen["capacity_bytes"] - seen["free_bytes"] - seen["in_use_bytes"]
    if other is not None and other > OTHER_PROCESS_BYTES:
        lines.append(("lever", "other_process", {"other": _gib(other)}))
    if estimate is not None:
        lines.append(("lever", "planner", {}))
    return lines


def _reconcile(allocated: int, requested: int, estimate: Estimate) -> list[Line]:
    peak = estimate.per_gpu.tensor_peak_bytes
    lines: list[Line] = [
        (
            "diagnosis",
            "ours",
            {"peak": _gib(peak), "total": _gib(estimate.per_gpu.total_bytes), "card": estimate.gpu.name},
        ),
        ("diagnosis", "ours_parts", {"parts": _parts(estimate)}),
    ]
    held = allocated + requested
    values = {
        "allocated": _gib(allocated),
        "requested": _gib(requested),
        "sum": _gib(held),
        "peak": _gib(peak),
    }
    if held > peak:
        lines.append(("diagnosis", "more_than_ours", {**values, "diff": _gib(held - peak)}))
    else:
        lines.append(("diagnosis", "below_ours", values))
    return lines


def _parts(estimate: Estimate) -> str:
    tensors = sorted((c for c in estimate.components if c.kind == "tensor"), key=lambda c: -c.bytes)[:4]
    return ", ".join(f"{c.name} {_gib(c.bytes)}" for c in tensors)


def _summary(seen: dict[str, Any], estimate: Estimate | None) -> list[Line]:
    lines: list[Line] = []
    if {"allocated_bytes", "reserved_bytes"} <= set(seen):
        lines.append(
            (
                "diagnosis",
                "summary",
                {k.removesuffix("_bytes"): _gib(v) for k, v in seen.items() if k.endswith("_bytes")},
            )
        )
    if estimate is not None and "peak_allocated_bytes" in seen:
        # the summary's peak "Allocated memory" is torch.cuda.max_memory_allocated(): what our tensor peak predicts
        peak, ours = seen["peak_allocated_bytes"], estimate.per_gpu.tensor_peak_bytes
        share = f"{(ours - peak) / peak:+.1%}" if peak else "n/a"
        lines.append(("diagnosis", "summary_ours", {"peak": _gib(peak), "ours": _gib(ours), "share": share}))
        lines.append(("diagnosis", "ours_parts", {"parts": _parts(estimate)}))
    if seen.get("malloc_retries") or seen.get("oom_count"):
        lines.append(
            (
                "diagnosis",
                "summary_retries",
                {"retries": seen.get("malloc_retries", 0), "ooms": seen.get("oom_count", 0)},
            )
        )
    unallocated = seen.get("reserved_unallocated_bytes", 0)
    if unallocated and (
        unallocated > FRAGMENTED_SHARE * seen.get("reserved_bytes", 0) or seen.get("malloc_retries")
    ):
        lines.append(("lever", "expandable_segments", {"reserved_unallocated": _gib(unallocated)}))
    return lines


def _smi(reading: Reading, estimate: Estimate | None) -> list[Line]:
    used = list(reading.observed.get("used_bytes", []))  # type: ignore[arg-type]
    capacity = list(reading.observed.get("capacity_bytes", []))  # type: ignore[arg-type]
    names = reading.facts.get("cards", [])
    lines: list[Line] = []
    for index, (in_use, total) in enumerate(zip(used, capacity, strict=False)):
        name = names[index] if index < len(names) else "?"
        lines.append(
            (
                "diagnosis",
                "smi_card",
                {
                    "index": index,
                    "name": name,
                    "used": _gib(in_use),
                    "capacity": _gib(total),
                    "free": _gib(total - in_use),
                },
            )
        )
    for process in reading.facts.get("processes", []):
        lines.append(("diagnosis", "smi_process", {**process, "size": _gib(process["bytes"])}))
    if estimate is not None and used and capacity:
        lines.append(
            (
                "diagnosis",
                "smi_ours",
                {
                    "used": _gib(used[0]),
                    "free": _gib(capacity[0] - used[0]),
                    "total": _gib(estimate.per_gpu.total_bytes),
                },
            )
        )
    for index, in_use in enumerate(used):
        if in_use > OTHER_PROCESS_BYTES:
            lines.append(("lever", "smi_other", {"index": index, "used": _gib(in_use)}))
    return lines


def _vllm(reading: Reading, estimate: Estimate | None) -> list[Line]:
    seen = reading.observed
    lines: list[Line] = []
    if "kv_needed_bytes" in seen:
        lines.append(
            (
                "diagnosis",
                "vllm_error",
                {
                    "kv_needed": _gib(seen["kv_needed_bytes"]),
                    "kv_available": _gib(seen["kv_available_bytes"]),
                    "max_model_len": seen["max_model_len"],
                },
            )
        )
    elif "kv_available_bytes" in seen:
        lines.append(
            (
                "diagnosis",
                "vllm_pool",
                {
                    "weights": _gib(seen.get("weights_bytes", 0)),
                    "kv_available": _gib(seen["kv_available_bytes"]),
                    "kv_tokens": f"{seen.get('kv_cache_tokens', 0):,}",
                },
            )
        )
    elif "weights_bytes" in seen:
        lines.append(("diagnosis", "vllm_weights", {"weights": _gib(seen["weights_bytes"])}))
    if "gpu_blocks" in seen:
        # vLLM's KV blocks hold block_size tokens each: 16 by default on CUDA (vllm/config CacheConfig.block_size)
        blocks = seen["gpu_blocks"]
        lines.append(
            (
                "diagnosis",
                "vllm_blocks",
                {"blocks": f"{blocks:,}", "tokens": f"{blocks * VLLM_BLOCK_TOKENS:,}"},
            )
        )
    if "max_concurrency" in reading.facts:
        lines.append(
            (
                "diagnosis",
                "vllm_concurrency",
                {"max_model_len": seen.get("max_model_len"), "concurrency": reading.facts["max_concurrency"]},
            )
        )
    if "free_bytes" in seen and "requested_bytes" in seen:
        lines.append(
            (
                "diagnosis",
                "vllm_free",
                {k.removesuffix("_bytes"): _gib(v) for k, v in seen.items() if k.endswith("_bytes")},
            )
        )
    if estimate is not None and estimate.serving is not None:
        lines += _vllm_ours(seen, estimate)
    if "max_model_len_estimate" in seen:
        lines.append(("lever", "max_model_len", {"length": seen["max_model_len_estimate"]}))
    if "kv_needed_bytes" in seen:
        utilization = reading.fields.get(
            "gpu_memory_utilization", 0.9
        )  # vLLM's default (vllm/config/cache.py)
        lines.append(("lever", "gpu_memory_utilization", {"utilization": utilization}))
    if "free_bytes" in seen and "capacity_bytes" in seen and "requested_bytes" in seen:
        lines.append(
            ("lever", "vllm_free", {"utilization": f"{seen['free_bytes'] / seen['capacity_bytes']:.2f}"})
        )
    return lines


def _vllm_ours(seen: dict[str, Any], estimate: Estimate) -> list[Line]:
    serving = estimate.serving
    assert serving is not None
    weights = estimate.component("weights")
    lines: list[Line] = [
        (
            "diagnosis",
            "vllm_ours",
            {
                "weights": _gib(weights.bytes) if weights else "?",
                "kv_cache": _gib(serving.kv_cache_bytes),
                "tokens": f"{serving.max_kv_tokens:,}",
                "sequences": serving.max_concurrent_sequences,
                "seq_len": estimate.scenario.seq_len,
            },
        )
    ]
    if "weights_bytes" in seen and weights is not None:
        lines.append(
            (
                "diagnosis",
                "weights_vs_ours",
                {"observed": _gib(seen["weights_bytes"]), "ours": _gib(weights.bytes)},
            )
        )
    return lines


def _llama(seen: dict[str, Any], estimate: Estimate | None) -> list[Line]:
    lines: list[Line] = []
    if "layers_offloaded" in seen:
        lines.append(
            (
                "diagnosis",
                "llama_layers",
                {"layers_offloaded": seen["layers_offloaded"], "layers_total": seen["layers_total"]},
            )
        )
    buffers = [seen.get(k, 0) for k in ("model_buffer_bytes", "kv_buffer_bytes", "compute_buffer_bytes")]
    if any(buffers):
        lines.append(
            (
                "diagnosis",
                "llama_buffers",
                {
                    "model": _gib(buffers[0]),
                    "kv": _gib(buffers[1]),
                    "compute": _gib(buffers[2]),
                    "sum": _gib(sum(buffers)),
                },
            )
        )
    if "requested_bytes" in seen:
        lines.append(("diagnosis", "llama_malloc", {"requested": _gib(seen["requested_bytes"])}))
    if estimate is not None:
        weights, kv = estimate.component("weights"), estimate.component("kv_cache")
        lines.append(
            (
                "diagnosis",
                "llama_ours",
                {
                    "weights": _gib(weights.bytes) if weights else "?",
                    "kv": _gib(kv.bytes) if kv else "?",
                    "seq_len": estimate.scenario.seq_len,
                },
            )
        )
    if seen.get("layers_offloaded", 0) < seen.get("layers_total", 0):
        lines.append(("lever", "llama_layers", {}))
    if (
        "requested_bytes" in seen
        or seen.get("kv_buffer_bytes", 0) > seen.get("model_buffer_bytes", 1 << 62) / 2
    ):
        lines.append(("lever", "llama_kv", {}))
    return lines
