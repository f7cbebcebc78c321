"""Which `org/name` strings are Hugging Face repo ids the Hub accepts (huggingface_hub's own rule), and the
422 for one that is not (`org/a--b`, `org/a..b`, `org/name-`, `org/name.git` raised huggingface_hub's
HFValidationError deep in a look-up: a 500)."""

from __future__ import annotations

import re

from tools.errors import ScenarioError

# huggingface_hub's validate_repo_id (utils/_validators.py): each part starts and ends with a letter, digit or
# "_", at most 96 characters; no "--" or ".."; not ending in ".git"
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"^{_PART}/{_PART}$")
REPO_ID_ACCEPTED = (
    "org/name with letters, digits, '-', '_' and '.', each part starting and ending with a letter or digit, "
    "no '--' or '..', not ending in '.git'"
)


def looks_like_repo_id(name: str | None) -> bool:
    text = (name or "").strip()
    return bool(_REPO_ID.match(text)) and ".." not in text and "--" not in text and not text.endswith(".git")


def repo_id_problem(name: str) -> ScenarioError | None:
    """A name written as `org/name` that the Hub would refuse as a repo id (`org/a--b`, `org/name.git`):
    a 422 saying what a repo id may hold, instead of huggingface_hub's HFValidationError (a 500)."""
    text = name.strip()
    if text.count("/") != 1 or looks_like_repo_id(text):
        return None
    return ScenarioError(
        "model",
        f"'{text[:200]}' is not a catalog model, nor a Hugging Face repo id the Hub accepts",
        accepted=f"a catalog model, or {REPO_ID_ACCEPTED}",
        code="bad_repo_id",
        values={"repo": text[:200]},
    )
