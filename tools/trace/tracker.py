"""Live-storage tracker: the exact peak of tensor memory of real model code, without a GPU.

A `TorchDispatchMode` sees every ATen op after autograd and autocast. Each output's untyped
storage is registered once (keyed by storage identity; PyTorch preserves the Python storage
object while its StorageImpl lives), its size rounded up to the CUDA caching allocator's
512-byte block (c10/cuda/CUDACachingAllocator.cpp `kMinBlockSize = 512`, `round_size`), and
subtracted when the storage dies (a `weakref.finalize` on the storage object). Under
`torch._subclasses.fake_tensor.FakeTensorMode` nothing is allocated, so a 70B step traces on a
laptop; on real CPU tensors the same tracker measures the same program (the validation test).

At every new peak the live set is snapshotted (serial -> bytes); after the run the snapshot is
split into categories using the known storages: parameters, gradients, optimizer states,
autocast weight copies (a `_to_copy` of a parameter), KV cache, and by phase for the rest
(activations in forward/prefill/decode, backward temporaries, optimizer-step temporaries).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# c10/cuda/CUDACachingAllocator.cpp: every block is a multiple of kMinBlockSize (512 bytes).
CUDA_BLOCK_BYTES = 512

PARAMETERS = "parameters"
GRADIENTS = "gradients"
OPTIMIZER_STATES = "optimizer_states"
MASTER_WEIGHTS = "master_weights"
AUTOCAST_COPIES = "autocast_weight_copies"
ACTIVATIONS = "activations"
KV_CACHE = "kv_cache"
BACKWARD_TEMPORARIES = "backward_temporaries"
OPTIMIZER_TEMPORARIES = "optimizer_step_temporaries"
CATEGORIES = (
    PARAMETERS,
    GRADIENTS,
    OPTIMIZER_STATES,
    MASTER_WEIGHTS,
    AUTOCAST_COPIES,
    ACTIVATIONS,
    KV_CACHE,
    BACKWARD_TEMPORARIES,
    OPTIMIZER_TEMPORARIES,
)

# What a storage allocated in a phase is, when it is none of the known sets.
_PHASE_DEFAULT = {
    "setup": ACTIVATIONS,
    "forward": ACTIVATIONS,
    "prefill": ACTIVATIONS,
    "decode": ACTIVATIONS,
    "backward": BACKWARD_TEMPORARIES,
    "optimizer": OPTIMIZER_TEMPORARIES,
}

_ATTENTION_OP_WORDS = ("attention", "softmax", "baddbmm", "bmm")


def block_bytes(nbytes: int, block: int = CUDA_BLOCK_BYTES) -> int:
    """Bytes the CUDA caching allocator hands out for a request of `nbytes` (512-byte blocks)."""
    return -(-int(nbytes) // block) * block


@dataclass
class PhaseRecord:
    """Peak and end-of-phase bytes the tracker saw in one phase."""

    name: str
    peak_bytes: int = 0
    end_bytes: int = 0


# A live storage: (bytes in 512-byte blocks, phase it was allocated in, is it an autocast weight copy)
_Live = tuple[int, str, bool]


@dataclass
class TraceReport:
    """What the tracker measured. All byte figures are integers (bytes, 512-byte blocks)."""

    peak_bytes: int
    peak_phase: str
    breakdown: dict[str, int]
    phases: list[PhaseRecord]
    attention_ops: list[str]
    storages_tracked: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_bytes": self.peak_bytes,
            "peak_phase": self.peak_phase,
            "breakdown": dict(self.breakdown),
            "phases": [
                {"name": p.name, "peak_bytes": p.peak_bytes, "end_bytes": p.end_bytes} for p in self.phases
            ],
            "attention_ops": list(self.attention_ops),
            "storages_tracked": self.storages_tracked,
        }


class MemoryTracker(TorchDispatchMode):
    """Counts every live storage created while active (plus those registered explicitly)."""

    def __init__(self, block: int = CUDA_BLOCK_BYTES) -> None:
        """`block`: allocation granularity (512 = CUDA caching allocator; 1 = exact tensor bytes)."""
        super().__init__()
        self.block = block
        self.live_bytes = 0
        self.peak_bytes = 0
        self.phase = "setup"
        self._serial_by_id: dict[int, int] = {}
        self._live: dict[int, _Live] = {}
        self._next_serial = 0
        self._peak_snapshot: dict[int, _Live] = {}
        self._peak_phase = "setup"
        self._phases: list[PhaseRecord] = [PhaseRecord("setup")]
        self._known: dict[str, set[int]] = {c: set() for c in CATEGORIES}
        self._param_serials: set[int] = set()
        self._attention_ops: set[str] = set()
        self._autocast_active = False

    # --- registration --------------------------------------------------------------------------
    def _serial_of(self, storage: torch.UntypedStorage) -> int | None:
        return self._serial_by_id.get(id(storage))

    def register_storage(self, storage: torch.UntypedStorage, autocast_copy: bool = False) -> int:
        """Count a storage once; update its size if it was resized in place."""
        sid = id(storage)
        nbytes = block_bytes(storage.nbytes(), self.block)
        serial = self._serial_by_id.get(sid)
        if serial is not None:
            old, phase, cast = self._live[serial]
            if old != nbytes:  # resize_ / out= ops grow storages in place
                self._live[serial] = (nbytes, phase, cast)
                self._add(nbytes - old)
            return serial
        serial = self._next_serial
        self._next_serial += 1
        self._serial_by_id[sid] = serial
        self._live[serial] = (nbytes, self.phase, autocast_copy)
        weakref.finalize(storage, self._release, sid, serial)
        self._add(nbytes)
        return serial

    def register_tensors(self, tensors: Iterable[torch.Tensor]) -> None:
        for t in tensors:
            self.register_storage(t.untyped_storage())

    def _release(self, sid: int, serial: int) -> None:
        entry = self._live.pop(serial, None)
        if self._serial_by_id.get(sid) == serial:
            del self._serial_by_id[sid]
        if entry is not None:
            self.live_bytes -= entry[0]

    def _add(self, nbytes: int) -> None:
        self.live_bytes += nbytes
        current = self._phases[-1]
        current.peak_bytes = max(current.peak_bytes, self.live_bytes)
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
            self._peak_phase = self.phase
            self._peak_snapshot = dict(self._live)

    # --- phases and known sets -----------------------------------------------------------------
    def mark(self, phase: str) -> None:
        """Start a new phase (forward, backward, optimizer, prefill, decode...)."""
        self._phases[-1].end_bytes = self.live_bytes
        self.phase = phase
        self._phases.append(PhaseRecord(phase, peak_bytes=self.live_bytes))

    def set_autocast(self, active: bool) -> None:
        self._autocast_active = active

    def note(self, category: str, tensors: Iterable[torch.Tensor | None]) -> None:
        """Record that these (live) tensors' storages belong to `category`."""
        for t in tensors:
            if t is None:
                continue
            serial = self.register_storage(t.untyped_storage())
            self._known[category].add(serial)
            if category == PARAMETERS:
                self._param_serials.add(serial)

    # --- dispatch --------------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        if any(w in name for w in _ATTENTION_OP_WORDS) and "log_softmax" not in name:
            self._attention_ops.add(str(func))
        is_weight_cast = False
        if self._autocast_active and func is torch.ops.aten._to_copy.default and args:
            src = args[0]
            if isinstance(src, torch.Tensor):
                is_weight_cast = self._serial_of(src.untyped_storage()) in self._param_serials
        flat, _ = tree_flatten(out)
        for t in flat:
            if isinstance(t, torch.Tensor):
                self.register_storage(t.untyped_storage(), autocast_copy=is_weight_cast)
        return out

    # --- result ------------------------------------------------------------------------------------
    def _category(self, serial: int, entry: _Live) -> str:
        for category in (PARAMETERS, GRADIENTS, OPTIMIZER_STATES, MASTER_WEIGHTS, KV_CACHE):
            if serial in self._known[category]:
                return category
        _nbytes, phase, autocast_copy = entry
        if autocast_copy:
            return AUTOCAST_COPIES
        return _PHASE_DEFAULT.get(phase, ACTIVATIONS)

    def report(self) -> TraceReport:
        self._phases[-1].end_bytes = self.live_bytes
        breakdown = dict.fromkeys(CATEGORIES, 0)
        for serial, entry in self._peak_snapshot.items():
            breakdown[self._category(serial, entry)] += entry[0]
        return TraceReport(
            peak_bytes=self.peak_bytes,
            peak_phase=self._peak_phase,
            breakdown=breakdown,
            phases=[p for p in self._phases if p.name != "setup" or p.peak_bytes],
            attention_ops=sorted(self._attention_ops),
            storages_tracked=self._next_serial,
        )
