"""PyTorch's CUDA out-of-memory messages (both forms) and `torch.cuda.memory_summary()`.

Message forms: c10/cuda/CUDACachingAllocator.cpp (PyTorch >= 2.1: "Tried to allocate X. GPU 0 has a total
capacity of X of which X is free. [Process N has X memory in use.] Including non-PyTorch memory, this process
has X memory in use. Of the allocated memory X is allocated by PyTorch, and X is reserved by PyTorch but
unallocated."; before: "(GPU 0; X total capacity; X already allocated; X free; X reserved in total by
PyTorch)"). Sizes are printed by `format_size` (bytes, KiB, MiB, GiB with two decimals); each figure is
taken as printed, to the byte. memory_summary: torch/cuda/memory.py `memory_summary` / `_format_size`
(whole numbers of B/KiB/MiB/GiB; releases before 1.10 wrote KB/MB/GB for the same binary units).
"""

from __future__ import annotations

import re

from service.agent.paste.reading import Reading
from service.agent.paste.values import size_bytes

_SIZE = r"([0-9][0-9.,]*)\s*(bytes|[KMGT]iB)"
_NEW = {
    "requested_bytes": re.compile(r"Tried to allocate " + _SIZE),
    "capacity_bytes": re.compile(r"total capacity of " + _SIZE),
    "free_bytes": re.compile(r"of which " + _SIZE + r" is free"),
    "in_use_bytes": re.compile(r"this process has " + _SIZE + r" memory in use"),
    "allocated_bytes": re.compile(_SIZE + r" is allocated by PyTorch"),
    "reserved_unallocated_bytes": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
}
_PROCESS = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")
_GPU = re.compile(r"GPU (\d+)")
_OLD = re.compile(
    r"Tried to allocate "
    + _SIZE
    + r"\s*\(GPU (\d+);\s*"
    + _SIZE
    + r" total capacity;\s*"
    + _SIZE
    + r" already allocated;\s*"
    + _SIZE
    + r" free;\s*(?:"
    + _SIZE
    + r" allowed;\s*)?"
    + _SIZE
    + r" reserved in total by PyTorch"
)
OOM_MARK = re.compile(r"CUDA out of memory|OutOfMemoryError", re.IGNORECASE)


def _bytes(found: re.Match[str], first: int) -> int:
    return size_bytes(found.group(first), found.group(first + 1))


def read_cuda_oom(text: str) -> Reading:
    reading = Reading("cuda-oom")
    old = _OLD.search(text)
    if old:
        _read_old(reading, old)
    else:
        for name, pattern in _NEW.items():
            found = pattern.search(text)
            if found:
                reading.observed[name] = _bytes(found, 1)
        processes = [(int(m.group(1)), _bytes(m, 2)) for m in _PROCESS.finditer(text)]
        if processes and "in_use_bytes" not in reading.observed and len(processes) == 1:
            # PyTorch 2.1-2.2 wrote this process as "Process N has X memory in use"
            reading.observed["in_use_bytes"] = processes[0][1]
        elif processes:
            reading.observed["other_processes_bytes"] = sum(size for _, size in processes)
            reading.facts["processes"] = processes
        gpu = _GPU.search(text)
        if gpu:
            reading.facts["device"] = int(gpu.group(1))
    reading.facts["kind"] = "oom"
    return reading


def _read_old(reading: Reading, found: re.Match[str]) -> None:
    reading.observed["requested_bytes"] = _bytes(found, 1)
    reading.facts["device"] = int(found.group(3))
    reading.observed["capacity_bytes"] = _bytes(found, 4)
    reading.observed["allocated_bytes"] = _bytes(found, 6)
    reading.observed["free_bytes"] = _bytes(found, 8)
    reading.observed["reserved_bytes"] = _bytes(found, 12)
    reading.observed["reserved_unallocated_bytes"] = (
        reading.observed["reserved_bytes"] - reading.observed["allocated_bytes"]
    )


_SUMMARY_SIZE = r"(\d+)\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)"
_SUMMARY_ROW = re.compile(
    r"^\|\s*(Allocated memory|GPU reserved memory|Reserved memory|Non-releasable memory|Requested memory)\s*\|"
    r"\s*" + _SUMMARY_SIZE + r"\s*\|\s*" + _SUMMARY_SIZE + r"\s*\|",
    re.MULTILINE,
)
_SUMMARY_OOMS = re.compile(r"CUDA OOMs:\s*(\d+)\s*\|\s*cudaMalloc retries:\s*(\d+)")
_SUMMARY_NAMES = {
    "Allocated memory": ("allocated_bytes", "peak_allocated_bytes"),
    "GPU reserved memory": ("reserved_bytes", "peak_reserved_bytes"),
    "Reserved memory": ("reserved_bytes", "peak_reserved_bytes"),
    "Non-releasable memory": ("non_releasable_bytes", "peak_non_releasable_bytes"),
    "Requested memory": ("requested_memory_bytes", "peak_requested_memory_bytes"),
}
SUMMARY_MARK = re.compile(r"PyTorch CUDA memory summary")


def _summary_bytes(number: str, unit: str) -> int:
    binary = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "B": "bytes"}.get(unit, unit)
    return size_bytes(number, binary)


def read_memory_summary(text: str) -> Reading:
    reading = Reading("cuda-oom")
    for row in _SUMMARY_ROW.finditer(text):
        current, peak = _SUMMARY_NAMES[row.group(1)]
        reading.observed[current] = _summary_bytes(row.group(2), row.group(3))
        reading.observed[peak] = _summary_bytes(row.group(4), row.group(5))
    counts = _SUMMARY_OOMS.search(text)
    if counts:
        reading.observed["oom_count"] = int(counts.group(1))
        reading.observed["malloc_retries"] = int(counts.group(2))
    if "reserved_bytes" in reading.observed and "allocated_bytes" in reading.observed:
        reading.observed["reserved_unallocated_bytes"] = (
            reading.observed["reserved_bytes"] - reading.observed["allocated_bytes"]
        )
    device = re.search(r"device ID (\d+)", text)
    if device:
        reading.facts["device"] = int(device.group(1))
    reading.facts["kind"] = "memory_summary"
    return reading
