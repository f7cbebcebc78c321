"""The /vram subcommand registry: words of both languages, `help` only on its own, anything else a question."""

from __future__ import annotations

from typing import Any

from service.slack.commands import Subcommands


async def _noop(rest: str, language: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"text": rest}


def registry() -> Subcommands:
    s = Subcommands()
    s.register("help", _noop, alone=True)
    s.register("quiz", _noop)
    return s


def test_words_of_both_languages() -> None:
    s = registry()
    assert s.match("help") == ("help", "")
    assert s.match("Help?") == ("help", "")
    assert s.match("帮助") == ("help", "")
    assert s.match("quiz lora") == ("quiz", "lora")
    assert s.match("练习") == ("quiz", "")


def test_questions_are_not_subcommands() -> None:
    s = registry()
    assert s.match("help me size llama-2-7b on a 4090") is None  # help only on its own
    assert s.match("Can I LoRA llama-2-7b on a 4090?") is None
    assert s.match("在一张 4090 上能微调 Llama-3-8B 吗？") is None


def test_a_new_mode_is_one_register_call() -> None:
    s = Subcommands()
    assert s.match("quiz") is None
    s.register("quiz", _noop)
    assert s.match("quiz") == ("quiz", "")
