"""Offload (ZeRO-Offload / ZeRO-Infinity, accelerate cpu_offload): what leaves the GPU.

- offload_optimizer: gradient partitions, fp32 master weights and optimizer states live in CPU RAM or
  NVMe (DeepSpeed offload_optimizer); none of them is counted on the GPU.
- offload_params (training, ZeRO-3 only): parameters live off the GPU; only the gathered layers are
  resident (tools/components/zero3.py).
- offload_params (inference, accelerate device_map / cpu_offload): the running layer's weights only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.components.local import LocalParams
from tools.notes import Note, note

if TYPE_CHECKING:
    from tools.resolve import ResolvedScenario

OPTIMIZER_OFFLOADED_NOTE = note("optimizer_offloaded")


def params_offloaded_note(rs: ResolvedScenario) -> Note:
    return note("params_offloaded", target=rs.scenario.offload_params)


def running_layer_share(loc: LocalParams) -> float:
    """accelerate AlignDevicesHook: the share of the local weights on the GPU while one layer runs."""
    return loc.largest_gathered / loc.total if loc.total else 0.0
