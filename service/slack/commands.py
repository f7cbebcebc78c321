"""`/vram` subcommands: a small registry, so that a new mode (e.g. the coach) is one `register` call.

`/vram help` (or `帮助`), `/vram quiz` (or `练习`): the first word of the command's text, matched
against the words of prompts/<lang>/slack.toml [commands] in both languages; anything else is a question.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from service.agent.prompt_files import LANGUAGES, load_toml

# (rest of the text, language, the slash command's body) -> the message to answer with ({"text", "blocks"})
Subcommand = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class Subcommands:
    handlers: dict[str, Subcommand] = field(default_factory=dict)

    def register(self, name: str, handler: Subcommand) -> None:
        """`name` is a key of slack.toml [commands] (its words in every language call `handler`)."""
        self.handlers[name] = handler

    def match(self, text: str) -> tuple[str, str] | None:
        """(name, rest of the text) when `text` starts with a subcommand's word, else None."""
        first, _, rest = text.strip().partition(" ")
        said = {first.lower(), first.lower().strip("!?？！。.")} - {""}
        for name in self.handlers:
            for lang in LANGUAGES:
                words = load_toml(lang, "slack.toml").get("commands", {}).get(name, [])
                if said & {str(w).lower() for w in words}:
                    return name, rest.strip()
        return None
