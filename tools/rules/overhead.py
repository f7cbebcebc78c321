"""Runtime overhead per GPU (kind="overhead"): memory nvidia-smi shows that no tensor accounts for.

- the runtime's context, one per GPU runtime (`RUNTIME_CONTEXTS`, chosen by the card's vendor):
  cuda_context: CUDA context, cuBLAS/cuDNN handles and workspaces (calibration.CUDA_CONTEXT_BYTES);
  hip_runtime: AMD GPUs under ROCm, the HIP runtime with rocBLAS/hipBLASLt (calibration.ROCM_RUNTIME_BYTES);
  none on an Apple Silicon Mac (Metal allocates in unified memory; the card's memory is already the part
  Metal lets the GPU use, tools/catalog/named_gpus.py).
- allocator_slack: PyTorch caching allocator reserved-but-unallocated memory at the peak
  (calibration.ALLOCATOR_SLACK_FRACTION of the tensor peak, capped).
- nccl_buffers: one set of NCCL channel buffers per process group this GPU communicates in
  (TP, PP, CP, EP; DP only when training) (calibration.NCCL_BYTES_PER_COMMUNICATOR).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

from tools import calibration as cal
from tools.result import Component, constructed
from tools.rules.parallel import Layout
from tools.units import MiB

T = TypeVar("T", bound=Any)  # a dataclass with name, bytes, formula, source and label (EngineTerm)


class RuntimeContext(NamedTuple):
    """What one GPU runtime holds on each GPU before any tensor: a component of its own."""

    name: str  # the component's name and label code
    bytes: int
    formula: str
    source: str


RUNTIME_CONTEXTS: dict[str, RuntimeContext | None] = {
    "cuda": RuntimeContext(
        "cuda_context",
        cal.CUDA_CONTEXT_BYTES,
        "M_context",
        "calibration.CUDA_CONTEXT_BYTES (vLLM profiler non-torch memory; llm-d per-GPU overhead)",
    ),
    "rocm": RuntimeContext(
        "hip_runtime",
        cal.ROCM_RUNTIME_BYTES,
        "M_hip",
        "calibration.ROCM_RUNTIME_BYTES (HIP runtime, rocBLAS/hipBLASLt code objects and workspace: PyTorch "
        "aten/src/ATen/cuda/CUDABlas.cpp HIPBLASLT_WORKSPACE_SIZE; not yet measured on a ROCm card)",
    ),
    "metal": None,  # Apple Silicon: no device context reserved in the GPU's share of unified memory
}
# the runtime of a card's vendor; every other accelerator is counted with the CUDA context's figure
_VENDOR_RUNTIMES = {"amd": "rocm", "apple": "metal"}


def runtime_of(vendor: str) -> str:
    """The GPU runtime whose context a card of `vendor` pays (Layout.runtime)."""
    return _VENDOR_RUNTIMES.get(vendor, "cuda")


def engine_terms_on(terms: Iterable[T], runtime: str) -> list[T]:
    """A serving engine's terms (tools/serving.py EngineTerm) on a card of `runtime`: its `cuda_context` term
    (the non-torch memory the engine sees) is the runtime's context (hip_runtime under ROCm), and on a Mac,
    where there is none, it is dropped when nothing else is in it."""
    context = RUNTIME_CONTEXTS[runtime]
    out = []
    for term in terms:
        if term.name == "cuda_context" and runtime != "cuda":
            if context is None and term.bytes == 0:
                continue
            if context is not None:
                term = replace(
                    term,
                    name=context.name,
                    label=context.name,
                    formula=context.formula,
                    source=context.source,
                )
        out.append(term)
    return out


def context_bytes(runtime: str) -> int:
    context = RUNTIME_CONTEXTS[runtime]
    return context.bytes if context else 0


def allocator_slack_bytes(tensor_peak_bytes: int) -> int:
    """PyTorch caching allocator slack at the peak: a fraction of the tensor peak, capped (calibration)."""
    return min(int(tensor_peak_bytes * cal.ALLOCATOR_SLACK_FRACTION), cal.ALLOCATOR_SLACK_MAX_BYTES)


def overhead_bytes(layout: Layout, *, tensor_peak_bytes: int, training: bool) -> int:
    """The sum of `overhead_components` (same terms), without building them: what the planner compares."""
    return (
        context_bytes(layout.runtime)
        + allocator_slack_bytes(tensor_peak_bytes)
        + layout.communicator_count(training=training) * cal.NCCL_BYTES_PER_COMMUNICATOR
    )


def overhead_components(layout: Layout, *, tensor_peak_bytes: int, training: bool) -> list[Component]:
    context = RUNTIME_CONTEXTS[layout.runtime]
    out = []
    if context is not None:
        out.append(
            constructed(
                Component,
                name=context.name,
                bytes=context.bytes,
                kind="overhead",
                formula=context.formula,
                substituted=f"{context.bytes // MiB} MiB",
                source=context.source,
                label=None,
                label_code=context.name,
                label_values={},
                model_role=None,
                note_code=None,
                note=None,
            )
        )
    slack = allocator_slack_bytes(tensor_peak_bytes)
    out.append(
        constructed(
            Component,
            name="allocator_slack",
            bytes=slack,
            kind="overhead",
            formula=f"min({cal.ALLOCATOR_SLACK_FRACTION} x M_tensor_peak, {cal.ALLOCATOR_SLACK_MAX_BYTES // MiB} MiB)",
            substituted=(
                f"{cal.ALLOCATOR_SLACK_FRACTION} x {tensor_peak_bytes:,} B = {slack:,} B"
                if slack < cal.ALLOCATOR_SLACK_MAX_BYTES
                else f"min({cal.ALLOCATOR_SLACK_FRACTION} x {tensor_peak_bytes:,} B, "
                f"{cal.ALLOCATOR_SLACK_MAX_BYTES // MiB} MiB) = {slack:,} B"
            ),
            source="PyTorch caching allocator (reserved - allocated); calibration.ALLOCATOR_SLACK_FRACTION",
            label=None,
            label_code="allocator_slack",
            label_values={},
            model_role=None,
            note_code=None,
            note=None,
        )
    )
    groups = layout.communicators(training=training)
    if groups:
        nccl = len(groups) * cal.NCCL_BYTES_PER_COMMUNICATOR
        out.append(
            constructed(
                Component,
                name="nccl_buffers",
                bytes=nccl,
                kind="overhead",
                formula="n_comm x M_nccl",
                substituted=f"{len(groups)} ({', '.join(groups)}) x {cal.NCCL_BYTES_PER_COMMUNICATOR // MiB} MiB = {nccl:,} B",
                source="NCCL docs (NCCL_BUFFSIZE 4 MiB x channels); calibration.NCCL_BYTES_PER_COMMUNICATOR",
                label=None,
                label_code="nccl_buffers",
                label_values={},
                model_role=None,
                note_code=None,
                note=None,
            )
        )
    return out
