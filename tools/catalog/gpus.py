"""The GPU catalog: usable memory as the driver reports it, plus dtype support and speeds.

`memory_bytes` is the total the management tool shows (nvidia-smi `memory.total` in MiB,
rocm-smi / npu-smi for AMD and Ascend); `memory_source` says where each figure comes from.
PyTorch's `torch.cuda.mem_get_info()` total can be a few hundred MiB lower on ECC cards.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, computed_field

from tools.catalog.fuzzy import closest, normalize
from tools.catalog.named_gpus import named_card, named_card_size, vendor_of
from tools.errors import ScenarioError, quote

GPUS_JSON = Path(__file__).with_name("gpus.json")
GPU_ACCEPTED = (
    "a catalog GPU id or common name (a100-80gb, 4090, H100, H20, 910B, MI300X, 7900 XTX; see GET /v1/gpus), "
    "or any card with its memory stated (MX450 2GB, M2 Max 32GB, 24GB)"
)

# Words that never distinguish one card from another ("NVIDIA GeForce RTX 4090" = "4090").
_NOISE = re.compile(r"nvidia|geforce|tesla|rtx|instinct|huawei|amd|gpu|显卡|colab|kaggle")


class AliasVariant(BaseModel):
    """An alias several cards share: the variant it is taken as, and how to name the others."""

    model_config = ConfigDict(frozen=True)

    variant: str  # "80 GB SXM"
    others: list[str] = Field(default_factory=list)  # ["H100 PCIe", "H100 NVL (94 GB)"]


class GpuAlias(NamedTuple):
    """How a GPU name was read, as an assumption's code and values (tools/assumptions.py)."""

    code: str
    values: dict[str, object]


class GpuSpec(BaseModel):
    """One accelerator model."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    memory_bytes: int = Field(gt=0)
    memory_source: str
    marketed: str
    vendor: str
    aliases: list[str] = Field(default_factory=list)
    bf16: bool
    fp8: bool
    bandwidth_gbps: float | None = None
    bf16_tflops: float | None = None  # dense tensor throughput, spec sheet
    notes: str = ""
    ambiguous_aliases: dict[str, AliasVariant] = Field(default_factory=dict)  # alias -> the variant taken

    @computed_field  # type: ignore[prop-decorator]
    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30


def gpu_key(name: str) -> str:
    """Normalised GPU name: noise words dropped, '80GB'/'80G' alike, 昇腾 = ascend."""
    text = name.lower().replace("昇腾", "ascend")
    text = normalize(_NOISE.sub(" ", text))
    return text.replace("gb", "g")


@lru_cache(maxsize=1)
def _load() -> tuple[GpuSpec, ...]:
    raw = json.loads(GPUS_JSON.read_text(encoding="utf-8"))
    return tuple(GpuSpec.model_validate(entry) for entry in raw["gpus"])


@lru_cache(maxsize=1)
def _index() -> dict[str, tuple[str, GpuAlias | None]]:
    """normalised name -> (gpu id, how an ambiguous alias is read, or None)."""
    index: dict[str, tuple[str, GpuAlias | None]] = {}
    for spec in _load():
        notes = {gpu_key(alias): _alias(alias, spec.id, v) for alias, v in spec.ambiguous_aliases.items()}
        for name in (spec.id, spec.name, *spec.aliases):
            key = gpu_key(name)
            if key:
                index.setdefault(key, (spec.id, notes.get(key)))
    return index


def _alias(alias: str, card: str, v: AliasVariant) -> GpuAlias:
    values: dict[str, object] = {"alias": alias.upper(), "variant": v.variant, "card": card}
    if len(v.others) > 1:
        return GpuAlias("gpu.alias_others", {**values, "others": v.others[:-1], "last": v.others[-1]})
    if v.others:
        return GpuAlias("gpu.alias_other", {**values, "other": v.others[0]})
    return GpuAlias("gpu.alias", values)


def list_gpus() -> list[GpuSpec]:
    return list(_load())


def get_gpu(gpu_id: str) -> GpuSpec:
    for spec in _load():
        if spec.id == gpu_id:
            return spec
    raise KeyError(gpu_id)


# "24GB", "my 12GB card", "24G显存": a size with no card name
_BARE_MEMORY = re.compile(
    r"^\s*(?:my\s+|a\s+|an\s+)?(\d{1,4})\s*(?:gb|g|gib)\s*(?:of\s+)?(?:vram|显存|cards?|gpus?|显卡|卡|的卡|的显卡)?\s*$",
    re.IGNORECASE,
)


def _at_stated_size(base: GpuSpec | None, gb: int) -> tuple[GpuSpec, GpuAlias]:
    """A card taken at the memory the user stated: a modded card, or a size with no card name.

    A card sold as N GB holds N GiB of memory chips (nvidia-smi shows N x 1024 MiB less at most a few
    hundred MiB), so the stated N GB is taken as N GiB.
    """
    memory = gb * 2**30
    if base is None:
        spec = GpuSpec(
            id=f"{gb}gb",
            name=f"{gb} GB GPU",  # a figure and a unit: read the same in every language
            memory_bytes=memory,
            memory_source=f"stated by the user: {gb} GB, taken as {gb} GiB",
            marketed=f"{gb} GB",
            vendor="unknown",
            bf16=True,
            fp8=False,
            notes="no card named: bf16 support assumed, no fp8",
        )
        return spec, GpuAlias("gpu.stated_size", {"gb": gb, "gib": memory / 2**30})
    spec = base.model_copy(
        update={
            "id": f"{base.id}-{gb}gb",
            "name": f"{base.name} ({gb} GB as stated)",
            "memory_bytes": memory,
            "memory_source": f"stated by the user: {gb} GB, taken as {gb} GiB (the catalog's card has {base.marketed})",
            "marketed": f"{gb} GB (stated)",
            "aliases": [],
            "ambiguous_aliases": {},
        }
    )
    values: dict[str, object] = {
        "card": base.name,
        "gb": gb,
        "gib": memory / 2**30,
        "marketed": base.marketed,
    }
    return spec, GpuAlias("gpu.stated_size_of_card", values)


def _match_with_memory(
    key: str, index: dict[str, tuple[str, GpuAlias | None]]
) -> tuple[GpuSpec, GpuAlias | None] | None:
    """'4090 24GB' -> the 4090 when its memory is about 24 GB; another stated size -> the card at that size."""
    if not key.endswith("g"):
        return None
    for width in (1, 2, 3):  # "509032g" = "5090" + "32g"; "b200192g" = "b200" + "192g"
        base, digits = key[: -width - 1], key[-width - 1 : -1]
        if digits.isdigit() and base in index and not digits.startswith("0"):
            break
    else:
        return None
    gpu_id, _ = index[base]
    spec, stated = get_gpu(gpu_id), int(digits)
    # marketed GB vs reported GiB differ by up to ~7% (80 GB HBM -> 79.6 GiB; 48 GB ECC -> 45 GiB)
    if abs(spec.memory_bytes / 10**9 - stated) <= 0.1 * stated or f"{stated} GB" in spec.marketed:
        return spec, None
    # a size the catalog does not sell (a modded 48 GB 4090, a 22 GB 2080 Ti): taken at the stated size
    return _at_stated_size(spec, stated)


@lru_cache(
    maxsize=512
)  # a pure function of the name over the constant catalog (the planner asks per candidate)
def find_gpu(name: str) -> tuple[GpuSpec, GpuAlias | None]:
    """(card, how the name was read when it was not plain: an ambiguous alias, a stated size) for a GPU
    name people type; ScenarioError(field='gpu') with near ids otherwise."""
    index = _index()
    key = gpu_key(name or "")
    hit = index.get(key)
    if hit is None:
        # tolerate interface/form-factor words: "A100-SXM4-80GB", "H100 80GB HBM3", "L40S PCIe"
        trimmed = re.sub(r"sxm\d?|pcie|hbm\d?e?|oam|nvlink", "", key)
        hit = index.get(trimmed)
    if hit is None:
        bare = _BARE_MEMORY.match(name or "")
        if bare and 0 < int(bare.group(1)) <= 4096:
            return _at_stated_size(None, int(bare.group(1)))
        sized = _match_with_memory(key, index) or _match_with_memory(
            re.sub(r"sxm\d?|pcie|hbm\d?e?|oam|nvlink", "", key), index
        )
        if sized is not None:
            return sized
        named = named_card_size(name or "")
        if named is not None:  # a card the catalog lacks, with its memory: that card at that size
            return _named(*named)
    if hit is None and vendor_of(name or "") != "unknown":
        # a card named by its vendor's words (an MX450, a MacBook) the catalog lacks: its memory is asked for
        raise ScenarioError(
            "gpu",
            f"'{quote(name)}' is not in the GPU catalog: how much memory does it have?",
            accepted=f"the card with its memory stated (e.g. '{quote(name)} 8GB'), or {GPU_ACCEPTED}",
            suggestions=closest(key, {k: v[0] for k, v in index.items()}),  # or a typo of a catalog card
            code="gpu_memory_needed",
            values={"name": quote(name)},
        )
    if hit is None:
        raise ScenarioError(
            "gpu",
            f"unknown GPU '{quote(name)}'",
            accepted=GPU_ACCEPTED,
            suggestions=closest(key, {k: v[0] for k, v in index.items()}),
            code="unknown_gpu",
            values={"name": quote(name)},
        )
    gpu_id, note = hit
    return get_gpu(gpu_id), note


def _named(card: str, gb: int) -> tuple[GpuSpec, GpuAlias | None]:
    """A named card the catalog lacks at its stated memory; a Mac of a size the catalog lists is that entry."""
    if vendor_of(card) == "apple":
        try:
            return get_gpu(f"apple-{gb}gb"), None
        except KeyError:
            pass
    return named_card(card, gb)
