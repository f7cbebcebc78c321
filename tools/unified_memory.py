"""What an Apple Silicon Mac cannot be told to do: the planner's answer for a job on one.

A Mac's GPU shares the machine's unified memory with the CPU, so moving optimizer states, parameters,
activations or a frozen reference model "to the CPU" frees nothing (the card's memory is already the part of
that memory Metal lets the GPU use: tools/catalog/named_gpus.py); and Macs are not joined the way the
planner's layouts join GPUs: no tensor parallelism or ZeRO across Macs (llama.cpp RPC and exo split layers
between Macs over the network, which no layout here models). Suggestions that rely on either are dropped, and
the fewest-GPU figure is kept only when one Mac is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.planner import PlanResult
    from tools.resolution.defaults import Filled
    from tools.rules.parallel import Layout

# a change that moves memory off the GPU into (the same) unified memory
_OFFLOAD_FIELDS = ("offload_optimizer", "offload_params")
_TO_CPU_FLAGS = ("activation_offloading", "reference_offload")


def _needs_what_a_mac_lacks(changes: dict[str, Any]) -> bool:
    several = any(int(changes.get(k) or 1) > 1 for k in ("num_gpus", "tp", "pp", "cp", "ep"))
    offload = any(changes.get(k) not in (None, "none") for k in _OFFLOAD_FIELDS)
    to_cpu = any(changes.get(k) for k in _TO_CPU_FLAGS)
    return several or offload or to_cpu or int(changes.get("zero_stage") or 0) > 0


def for_the_device(result: PlanResult, vendor: str) -> PlanResult:
    """`result` as it applies to a card of `vendor`: on an Apple Silicon Mac, without offload to the CPU or
    more than one Mac (see the module docstring); any other card's result as it is."""
    if vendor != "apple":
        return result
    suggestions = [sg for sg in result.suggestions if not _needs_what_a_mac_lacks(sg.scenario_changes)]
    one_mac = result.min_gpus == 1 and not _needs_what_a_mac_lacks(result.min_gpus_changes or {})
    return result._replace(
        suggestions=suggestions,
        min_gpus=result.min_gpus if one_mac else None,
        min_gpus_changes=result.min_gpus_changes if one_mac else None,
    )


def mac_notes(vendor: str, layout: Layout, f: Filled) -> None:
    """What a job on Macs asks that Macs do not do (tensor parallelism across Macs; offload to the CPU that shares
    their memory), said in the notes: the estimate stands."""
    if vendor != "apple":
        return
    if layout.num_gpus > 1:
        f.note("several_macs", num_gpus=layout.num_gpus)
    if layout.offload_optimizer or layout.offload_params:
        f.note("unified_memory_offload")
