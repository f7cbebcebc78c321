"""Command lines read with `shlex` and one argument table per tool (nothing is executed).

The tool is found from the words themselves: `vllm serve`, `python -m sglang.launch_server`, `llama-server`,
`llamafactory-cli train`, `trl grpo`, OpenRLHF's `openrlhf.cli.train_*`, verl's `key=value` overrides; a
launcher (`deepspeed`, `torchrun`, `accelerate launch`) in front gives the number of GPUs, and the script's
flags are read as HF TrainingArguments (or TRL's when the script is a TRL trainer).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from service.agent.paste.reading import NOT_UNDERSTOOD, PasteError, Reading
from service.agent.paste.tables import apply
from service.agent.paste.values import model_name

_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_WRAPPERS = frozenset({"nohup", "uv", "run", "exec", "time", "sudo", "env", "$", "poetry"})
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?$")
_LAUNCHERS = {"deepspeed", "torchrun", "accelerate", "torch.distributed.run", "torch.distributed.launch"}
# launcher flags that give the number of GPUs of the job
_LAUNCHER_GPUS = frozenset({"num_gpus", "nproc_per_node", "num_processes", "nproc-per-node", "num-gpus"})


def tokens_of(text: str) -> list[str]:
    joined = re.sub(r"\\\r?\n", " ", text)
    try:
        return shlex.split(joined, comments=True)
    except ValueError as err:  # an unclosed quote
        raise PasteError("bad_command", f"the command line cannot be split into words: {err}") from err


def flag_items(
    words: list[str], booleans: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, Any]], list[str]]:
    """`--flag value`, `--flag=value`, `-c 4096`, bare `--flag` (True) -> (flag, value) pairs; the words
    that are not flags (positionals, `key=value` overrides) come back apart."""
    items: list[tuple[str, Any]] = []
    rest: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") or re.fullmatch(r"-\d+(?:\.\d+)?", word):
            rest.append(word)
            continue
        name, equals, value = word.partition("=")
        key = name.lstrip("-").replace("-", "_")
        if equals:
            items.append((key, value))
            continue
        following = words[index] if index < len(words) else None
        takes_value = following is not None and (
            not following.startswith("-") or re.fullmatch(r"-\d+(?:\.\d+)?", following)
        )
        if key in booleans:
            takes_value = following is not None and following.lower() in (
                "true",
                "false",
                "on",
                "off",
                "1",
                "0",
            )
        if takes_value:
            items.append((key, following))
            index += 1
        else:
            items.append((key, True))
    return items, rest


def _strip_front(words: list[str]) -> list[str]:
    """Environment assignments, wrappers (nohup, uv run, `ray job submit ... --`) and `python [-m]` in front of
    the tool."""
    if words and words[0] == "ray" and "--" in words:
        words = words[words.index("--") + 1 :]
    index = 0
    while index < len(words):
        word = words[index]
        if _ENV.match(word) or word in _WRAPPERS:
            index += 1
        elif _PYTHON.match(word.rsplit("/", 1)[-1]):
            index += 1
            if index < len(words) and words[index] == "-m":
                index += 1
        else:
            break
    return words[index:]


def _launcher(words: list[str], reading: Reading) -> list[str]:
    """A launcher's own flags (the GPU count) up to the script; returns the script and its words."""
    head = words[0].rsplit("/", 1)[-1]
    start = 2 if head == "accelerate" and len(words) > 1 and words[1] == "launch" else 1
    index = start
    while index < len(words):
        word = words[index]
        if word == "-m" or not word.startswith("-"):
            break
        key, equals, value = word.lstrip("-").partition("=")
        if key == "module":  # `deepspeed --module openrlhf.cli.train_dpo`: the script is a module
            return words[index + 1 :]
        if not equals and index + 1 < len(words) and not words[index + 1].startswith("-"):
            value = words[index + 1]
            index += 1
        index += 1
        if key.replace("-", "_") in {k.replace("-", "_") for k in _LAUNCHER_GPUS} and value.isdigit():
            reading.use(f"{head} --{key}", "num_gpus", int(value))
        elif key in ("config_file", "deepspeed_config_file"):
            reading.ignore(f"{head} --{key}", "file_not_pasted")
        else:
            reading.ignore(
                f"{head} --{key}", NOT_UNDERSTOOD if key in ("num_nodes", "nnodes") else "no_memory_effect"
            )
    if index < len(words) and words[index] == "-m":
        index += 1
    return words[index:]


def identify(words: list[str]) -> tuple[str, str]:
    """(format, the tool's word) for the words after the front matter, or ("", "")."""
    if not words:
        return "", ""
    head = words[0].rsplit("/", 1)[-1]
    second = words[1] if len(words) > 1 else ""
    if (head == "vllm" and second == "serve") or head.startswith("vllm.entrypoints"):
        return "vllm-cli", head
    if head.startswith("sglang.launch_server") or (head == "sglang" and second in ("serve", "launch_server")):
        return "sglang-cli", head
    if head.startswith("llama-") or head in ("llama-server", "llama-cli", "server", "main"):
        return "llama.cpp-cli", head
    if head == "llamafactory-cli" or head == "lmf":
        return "llamafactory-cli", head
    if head == "trl" and second in ("sft", "dpo", "grpo", "rloo", "kto"):
        return "trl-cli", second
    if head.startswith("openrlhf.cli."):
        return "openrlhf-cli", head
    if head.startswith("verl.trainer") or any(
        w.startswith(("actor_rollout_ref.", "+actor_rollout_ref.")) for w in words
    ):
        return "verl-cli", head
    if head in _LAUNCHERS:
        return "launcher", head
    if head.endswith(".py"):
        return "script", head
    return "", ""


def looks_like_command(text: str) -> bool:
    try:
        words = _strip_front(tokens_of(text))
    except PasteError:
        return False
    return bool(identify(words)[0])


def read_command(text: str) -> Reading:
    words = _strip_front(tokens_of(text))
    kind, head = identify(words)
    if not kind:
        raise PasteError("unknown_format", "not a command line of a known tool")
    reading = Reading(kind if kind not in ("launcher", "script") else "hf-trainer-args")
    if kind == "launcher":
        launcher = head
        words = _strip_front(_launcher(words, reading))
        kind, head = identify(words)
        if kind in ("", "launcher"):
            kind, head = "script", words[0] if words else ""
        reading.format = "deepspeed-cli" if launcher == "deepspeed" and kind == "script" else reading.format
        if kind not in ("script",):
            reading.format = kind
    _read_tool(reading, kind, head, words)
    return reading


def _leftover(reading: Reading, words: list[str]) -> None:
    """Words that are neither a flag nor its value: listed, and kept apart (a sentence typed after a command,
    "vllm serve X on a 4090?", is read as the question's words)."""
    for word in words:
        reading.ignore(word, "not_a_flag")
    reading.facts.setdefault("leftover", []).extend(words)


def _read_tool(reading: Reading, kind: str, head: str, words: list[str]) -> None:
    from service.agent.paste import rl_flags, serving_flags
    from service.agent.paste.hf_args import HF_TRAINER, finish_hf

    booleans = serving_flags.BOOLEAN_FLAGS
    tables = {
        "sglang-cli": (serving_flags.SGLANG, "sglang"),
        "llama.cpp-cli": (serving_flags.LLAMA_CPP, "llama.cpp"),
    }
    if kind == "vllm-cli":
        items, rest = flag_items(words[2:] if words[0].endswith("vllm") else words[1:], booleans)
        if rest:
            reading.use("model", "model", model_name(rest[0]))
        _leftover(reading, rest[1:])
        apply(reading, items, serving_flags.VLLM)
        serving_flags.finish_serving(reading, "vllm")
    elif kind in tables:
        table, engine = tables[kind]
        items, rest = flag_items(words[1:], booleans)
        _leftover(reading, rest)
        apply(reading, items, table)
        serving_flags.finish_serving(reading, engine)
    elif kind == "llamafactory-cli":
        _read_llamafactory(reading, words[1:])
    elif kind in ("trl-cli", "script") and _is_trl(head, words):
        reading.format = "trl-cli" if reading.format != "deepspeed-cli" else reading.format
        command = head if kind == "trl-cli" else _trl_command(head)
        items, rest = flag_items(words[2:] if kind == "trl-cli" else words[1:])
        _leftover(reading, rest)
        apply(reading, items, rl_flags.TRL)
        rl_flags.finish_trl(reading, command)
    elif kind == "openrlhf-cli":
        items, rest = flag_items(words[1:])
        _leftover(reading, rest)
        apply(reading, items, rl_flags.OPENRLHF)
        rl_flags.finish_openrlhf(reading, head)
    elif kind == "verl-cli":
        apply(reading, _overrides(words), rl_flags.VERL)
        _leftover(reading, [w for w in words[1:] if "=" not in w])
        rl_flags.finish_verl(reading)
    else:
        items, rest = flag_items(words[1:])
        _leftover(reading, rest)
        apply(reading, items, HF_TRAINER)
        finish_hf(reading)


def _is_trl(head: str, words: list[str]) -> bool:
    if head in ("sft", "dpo", "grpo", "rloo", "kto"):
        return True
    trl_flags = ("--num_generations", "--max_completion_length", "--use_vllm", "--max_prompt_length")
    return bool(re.search(r"(grpo|dpo|rloo)", head)) or any(w.split("=")[0] in trl_flags for w in words)


def _trl_command(script: str) -> str:
    found = re.search(r"(grpo|dpo|rloo|sft)", script.lower())
    return found.group(1) if found else "grpo"


def _overrides(words: list[str]) -> list[tuple[str, Any]]:
    """Hydra overrides `key=value` (`+key=value`, `++key=value`)."""
    out = []
    for word in words[1:]:
        key, equals, value = word.lstrip("+").partition("=")
        if equals:
            out.append((key, value))
    return out


def _read_llamafactory(reading: Reading, words: list[str]) -> None:
    from service.agent.paste.training_yaml import LLAMAFACTORY, finish_llamafactory

    action = words[0] if words else ""
    items, rest = flag_items(words[1:])
    for word in rest:
        key, equals, value = word.partition("=")
        if equals:
            items.append((key, value))
        elif word.endswith((".yaml", ".yml", ".json")):
            reading.ignore(word, "file_not_pasted")
    if action not in ("train", ""):
        reading.ignore(action, "no_memory_effect")
    apply(reading, items, LLAMAFACTORY)
    finish_llamafactory(reading)
