"""A card the catalog does not list, named with its memory ("MX450 2G", "Radeon RX 6800 16GB", "M1 8GB"): that
card, at that size, under its own name. Never another card, never a default card.

The vendor is read from the name (it decides the runtime overhead: tools/rules/overhead.py); an Apple Silicon
Mac's GPU may use only part of its unified memory, Metal's `recommendedMaxWorkingSetSize` (the rule the
catalog's apple-<N>gb entries follow: about 2/3 below 64 GB, 3/4 from 64 GB up).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuAlias, GpuSpec

# name words -> vendor; the first that matches decides
_VENDOR_WORDS = (
    ("apple", re.compile(r"apple|mac|\bm[1-5](?:\s*(?:pro|max|ultra))?\b|苹果")),
    ("amd", re.compile(r"amd|radeon|\brx\s*\d|instinct|\bmi\d{3}|\bw\d{4}|\d{4}\s*(?:xtx|xt|gre)\b")),
    ("intel", re.compile(r"intel|\barc\b|gaudi")),
    ("huawei", re.compile(r"ascend|昇腾|huawei|\b910")),
    ("nvidia", re.compile(r"nvidia|geforce|rtx|gtx|\bmx\s*\d|quadro|tesla|titan")),
)
# "MX450 2G", "rx 6800-16gb", "M1 Pro (16 GB)": a name, a separator, the memory
_NAMED_SIZE = re.compile(
    r"^\s*(?P<card>.*?[a-z\u4e00-\u9fff].*?)[\s\-_(]+(?P<gb>\d{1,4})\s*(?:gb|g|gib)\s*\)?\s*$", re.IGNORECASE
)
# "apple-24gb" style ids: the vendor word glued to the size
_VENDOR_SIZE = re.compile(r"^\s*(?P<card>apple|mac)[\s\-_]*(?P<gb>\d{1,4})\s*(?:gb|g|gib)\s*$", re.IGNORECASE)
_APPLE_BIG_MEMORY_GB = (
    64  # at and above: 3/4 of unified memory; below: 2/3 (Metal recommendedMaxWorkingSetSize)
)


def vendor_of(name: str) -> str:
    low = name.lower()
    return next((vendor for vendor, words in _VENDOR_WORDS if words.search(low)), "unknown")


def apple_usable_bytes(gb: int) -> int:
    """The part of a Mac's `gb` GB of unified memory its GPU may use (Metal recommendedMaxWorkingSetSize, as
    llama.cpp and Ollama report it; gpus.json apple-<N>gb entries)."""
    fraction = (3, 4) if gb >= _APPLE_BIG_MEMORY_GB else (2, 3)
    return gb * 2**30 * fraction[0] // fraction[1]


def named_card_size(name: str) -> tuple[str, int] | None:
    """('MX450', 2) for 'MX450 2G'; None when the name states no memory."""
    m = _NAMED_SIZE.match(name or "") or _VENDOR_SIZE.match(name or "")
    if m is None or not 0 < int(m.group("gb")) <= 4096:
        return None
    return m.group("card").strip(" -_("), int(m.group("gb"))


def named_card(card: str, gb: int) -> tuple[GpuSpec, GpuAlias]:
    """The named card at the memory stated (N GB taken as N GiB, as the catalog's stated sizes are; a Mac: the
    part of N GB its GPU may use)."""
    from tools.catalog.gpus import GpuAlias, GpuSpec

    vendor = vendor_of(card)
    memory = apple_usable_bytes(gb) if vendor == "apple" else gb * 2**30
    slug = re.sub(r"[^a-z0-9]+", "-", card.lower()).strip("-") or "gpu"
    source = (
        f"stated by the user: {gb} GB of unified memory, of which Metal lets the GPU use {memory / 2**30:.1f} GiB"
        if vendor == "apple"
        else f"stated by the user: {gb} GB, taken as {gb} GiB"
    )
    spec = GpuSpec(
        id=f"{slug}-{gb}gb",
        name=f"{card} ({gb} GB as stated)",
        memory_bytes=memory,
        memory_source=source,
        marketed=f"{gb} GB (stated)",
        vendor=vendor,
        bf16=vendor != "apple",  # Metal on M1 has no bf16: fp16 assumed, as the catalog's Macs
        fp8=False,
        notes="not in the GPU catalog: named by the user with its memory",
    )
    values: dict[str, object] = {"card": card, "gb": gb, "gib": round(memory / 2**30, 2), "vendor": vendor}
    return spec, GpuAlias("gpu.named_at_stated_size", values)
