"""Name normalisation and near-name suggestions for catalog look-ups (stdlib difflib only)."""

from __future__ import annotations

import re

_DROP = re.compile(r"[^a-z0-9.\u4e00-\u9fff]+")
# suffixes people add that do not change the architecture (chat/instruct fine-tunes, HF repo tags)
# and quantised re-uploads (the architecture is the same; the weight dtype is a separate question)
_VARIANT_SUFFIXES = (
    "gptqint4",
    "gptqint8",
    "awq",
    "gptq",
    "gguf",
    "fp8",
    "int4",
    "int8",
    "bnb4bit",
    "4bit",
    "8bit",
    "instruct",
    "chat",
    "it",
    "hf",
    "base",
    "sft",
    "dpo",
    "rl",
    "preview",
)


def normalize(name: str) -> str:
    """'Llama 2 7B', 'llama-2-7b', 'Llama2_7B' -> 'llama27b' (lowercase; keep letters, digits, dots, CJK)."""
    text = name.strip().lower().replace("\u2014", "-")
    text = _DROP.sub("", text)
    return text.strip(".")


def strip_variant(key: str) -> str:
    """Drop one trailing variant tag ('qwen2.57binstruct' -> 'qwen2.57b'); returns key unchanged if none."""
    for suffix in _VARIANT_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix) + 1:
            return key[: -len(suffix)]
    return key


def closest(query: str, candidates: dict[str, str], n: int = 3) -> list[str]:
    """The `n` canonical ids whose normalised names are nearest to `query` (candidates: key -> id)."""
    import difflib  # only for a name the catalog does not know (heapq, ~2 ms at import)

    key = normalize(query)
    ids: list[str] = []
    for match in difflib.get_close_matches(key, list(candidates), n=n * 4, cutoff=0.3):
        canonical = candidates[match]
        if canonical not in ids:
            ids.append(canonical)
        if len(ids) == n:
            break
    return ids
