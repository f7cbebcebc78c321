"""What one paste gave: the Scenario fields read (and from which key), the keys not used and why, what was
assumed, and the figures a log or error states (`observed`, bytes or counts).

Every reader fills one `Reading`; nothing from a paste is executed. `why` of an ignored key is a code whose
text lives in prompts/<lang>/paste.toml (`[why]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from service.agent.asked import IgnoredKey, Source

# the contract's names of the formats (docs/reference.md, "What was asked"), in the order they are listed
FORMATS: tuple[str, ...] = (
    "llamafactory-yaml",
    "llamafactory-cli",
    "axolotl-yaml",
    "hf-trainer-args",
    "deepspeed-json",
    "deepspeed-cli",
    "accelerate-yaml",
    "torchtune-yaml",
    "trl-cli",
    "verl-cli",
    "openrlhf-cli",
    "vllm-cli",
    "sglang-cli",
    "llama.cpp-cli",
    "ollama-modelfile",
    "hf-config-json",
    "cuda-oom",
    "nvidia-smi",
    "vllm-log",
    "llama.cpp-log",
)
LOG_FORMATS: frozenset[str] = frozenset({"cuda-oom", "nvidia-smi", "vllm-log", "llama.cpp-log"})

# Why a key was not used (texts: prompts/<lang>/paste.toml [why])
NO_MEMORY_EFFECT = "no_memory_effect"  # paths, logging, data sets, schedules: nothing on the GPU changes
NOT_UNDERSTOOD = "memory_key_not_understood"  # would change memory, but the estimator has no field for it
VALUE_NOT_UNDERSTOOD = "value_not_understood"  # a known key with a value we cannot map
AUTO_VALUE = "auto_value"  # "auto": the framework decides at run time
OVERRIDDEN = "overridden_by_question"  # the sentence beside the paste says otherwise

# Words of keys that change GPU memory: such a key we do not understand is listed as such, never dropped
_MEMORY_WORDS = re.compile(
    r"batch|len|seq|token|ctx|context|offload|checkpoint|recompute|precision|dtype|bf16|fp16|fp8|fp32|quant|"
    r"bits?\b|lora|rank|zero|fsdp|shard|parallel|tp\b|pp\b|gpu|memory|mem|cache|kv|flash|attn|attention|"
    r"pack|compile|optim|liger|unsloth|vllm|rollout|generation|n_samples|micro|bucket|buffer|persistence|"
    r"live_param|prefetch|layers|ngl|vocab|hidden|expert|num_proc|world|nproc|device",
    re.IGNORECASE,
)


def changes_memory(key: str) -> bool:
    """Whether a key's name says it is about GPU memory (batch, length, precision, sharding, offload...)."""
    return bool(_MEMORY_WORDS.search(key.rsplit(".", 1)[-1]))  # the key's own name, not its section


class PasteError(ValueError):
    """A paste that cannot be read: malformed YAML/JSON (with line and column) or an unknown format."""

    def __init__(self, code: str, message: str, *, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.code = code
        self.line = line
        self.column = column


@dataclass
class Reading:
    """One paste as read: `fields` are Scenario fields; `used` maps each key or flag to the field it became."""

    format: str
    fields: dict[str, Any] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    ignored: list[IgnoredKey] = field(default_factory=list)
    assumed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (code, values)
    observed: dict[str, int | list[int]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)  # what a log says besides figures (processes...)

    def use(self, key: str, scenario_field: str, value: Any) -> None:
        self.fields[scenario_field] = value
        if key in self.used and self.used[key] != scenario_field:
            self.used[key] = f"{self.used[key]}, {scenario_field}"
        else:
            self.used[key] = scenario_field

    def ignore(self, key: str, why: str) -> None:
        if not any(item.key == key for item in self.ignored):
            self.ignored.append(IgnoredKey(key=key, why=why))

    def ignore_unknown(self, key: str) -> None:
        """A key no table knows: listed as memory-relevant when its name says so."""
        self.ignore(key, NOT_UNDERSTOOD if changes_memory(key) else NO_MEMORY_EFFECT)

    def assume(self, code: str, **values: Any) -> None:
        self.assumed.append((code, values))

    def source(self) -> Source:
        return Source(format=self.format, used=dict(self.used), ignored=list(self.ignored))
