"""Runtime overhead per GPU (kind="overhead"): memory nvidia-smi shows that no tensor accounts for.

- cuda_context: CUDA context, cuBLAS/cuDNN handles and workspaces (calibration.CUDA_CONTEXT_BYTES).
- allocator_slack: PyTorch caching allocator reserved-but-unallocated memory at the peak
  (calibration.ALLOCATOR_SLACK_FRACTION of the tensor peak, capped).
- nccl_buffers: one set of NCCL channel buffers per process group this GPU communicates in
  (TP, PP, CP, EP; DP only when training) (calibration.NCCL_BYTES_PER_COMMUNICATOR).
"""

from __future__ import annotations

from tools import calibration as cal
from tools.result import Component, constructed
from tools.rules.parallel import Layout
from tools.units import MiB


def allocator_slack_bytes(tensor_peak_bytes: int) -> int:
    """PyTorch caching allocator slack at the peak: a fraction of the tensor peak, capped (calibration)."""
    return min(int(tensor_peak_bytes * cal.ALLOCATOR_SLACK_FRACTION), cal.ALLOCATOR_SLACK_MAX_BYTES)


def overhead_bytes(layout: Layout, *, tensor_peak_bytes: int, training: bool) -> int:
    """The sum of `overhead_components` (same terms), without building them: what the planner compares."""
    return (
        cal.CUDA_CONTEXT_BYTES
        + allocator_slack_bytes(tensor_peak_bytes)
        + layout.communicator_count(training=training) * cal.NCCL_BYTES_PER_COMMUNICATOR
    )


def overhead_components(layout: Layout, *, tensor_peak_bytes: int, training: bool) -> list[Component]:
    out = [
        constructed(
            Component,
            name="cuda_context",
            bytes=cal.CUDA_CONTEXT_BYTES,
            kind="overhead",
            formula="M_context",
            substituted=f"{cal.CUDA_CONTEXT_BYTES // MiB} MiB",
            source="calibration.CUDA_CONTEXT_BYTES (vLLM profiler non-torch memory; llm-d per-GPU overhead)",
            label=None,
            label_code="cuda_context",
            label_values={},
            model_role=None,
            note_code=None,
            note=None,
        )
    ]
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
