"""Read text files under `prompts/<language>/` (templates, labels, knowledge base).

Through importlib.resources, falling back to the package's directories when `prompts` is
seen as a namespace package (an editable install made before prompts/__init__.py existed).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

LANGUAGES: tuple[str, ...] = ("en", "zh")


def _dirs() -> list[Path]:
    import prompts

    return [Path(p) for p in getattr(prompts, "__path__", [])]


def read_prompt(language: str, *parts: str) -> str:
    try:
        return resources.files("prompts").joinpath(language, *parts).read_text(encoding="utf-8")
    except (NotADirectoryError, FileNotFoundError, TypeError):
        for base in _dirs():
            candidate = base.joinpath(language, *parts)
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        raise


def list_prompt_dir(language: str, *parts: str) -> list[str]:
    """File names in prompts/<language>/<parts...>, sorted."""
    for base in _dirs():
        folder = base.joinpath(language, *parts)
        if folder.is_dir():
            return sorted(p.name for p in folder.iterdir() if p.is_file())
    return []


@lru_cache(maxsize=16)
def load_toml(language: str, name: str) -> dict[str, Any]:
    """A TOML template/label file of one language (parsed once; treat the result as read-only)."""
    return tomllib.loads(read_prompt(language, name))
