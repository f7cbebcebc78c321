"""An `nvidia-smi` table: the cards, how many, memory in use on each and the processes holding it.

Rows as nvidia-smi prints them (the GPU row `|   0  NVIDIA A100-SXM4-80GB   On | ...`, the memory cell
`40123MiB /  81920MiB`, and the Processes table `|    0   N/A  N/A   12345   C   python   40110MiB |`);
MiB are binary (2**20 bytes).
"""

from __future__ import annotations

import re
from typing import Any

from service.agent.paste.reading import Reading

_GPU_ROW = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|", re.MULTILINE)
_MEMORY = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")
_PROCESS_ROW = re.compile(
    r"^\|\s+(\d+)\s+(?:\S+\s+\S+\s+)?(\d+)\s+([CGM+]+)\s+(.+?)\s+(\d+)MiB\s*\|", re.MULTILINE
)
SMI_MARK = re.compile(r"NVIDIA-SMI|\d+MiB\s*/\s*\d+MiB")
MIB = 1 << 20


def read_nvidia_smi(text: str) -> Reading:
    from tools.catalog import find_gpu
    from tools.errors import ScenarioError

    reading = Reading("nvidia-smi")
    names = [m.group(2).strip() for m in _GPU_ROW.finditer(text)]
    memory = [(int(m.group(1)), int(m.group(2))) for m in _MEMORY.finditer(text)]
    reading.observed["used_bytes"] = [used * MIB for used, _ in memory]
    reading.observed["capacity_bytes"] = [total * MIB for _, total in memory]
    processes = [
        {
            "gpu": int(m.group(1)),
            "pid": int(m.group(2)),
            "name": m.group(4).strip(),
            "bytes": int(m.group(5)) * MIB,
        }
        for m in _PROCESS_ROW.finditer(text)
    ]
    reading.facts["processes"] = processes
    reading.facts["cards"] = names
    if memory:
        reading.fields["num_gpus"] = len(memory)
        reading.used["GPU rows"] = "num_gpus"
    if names and memory:
        reading.use("Name", "gpu", _card(names[0], memory[0][1] * MIB, find_gpu, ScenarioError))
    reading.facts["kind"] = "nvidia-smi"
    return reading


def _card(name: str, capacity: int, find_gpu: Any, error: type[Exception]) -> str:
    """The catalog card of that name whose memory is what nvidia-smi shows (within 3%: "Tesla V100-SXM2..."
    with 16160MiB is the 16 GB card); else the card's size as stated (`16gb`), which the estimator accepts."""
    gib = round(capacity / 2**30)
    for candidate in (name, f"{name} {gib}gb", f"{name.split('-')[0]} {gib}gb"):
        try:
            spec, _ = find_gpu(candidate.replace("...", ""))
        except error:
            continue
        if abs(spec.memory_bytes - capacity) <= 0.03 * capacity:
            return str(spec.id)
    return f"{gib}gb"
