"""An Ollama Modelfile (`FROM`, `PARAMETER num_ctx`, `PARAMETER num_gpu`) and `OLLAMA_*` variables.

Names: ollama docs/modelfile.md and envconfig/config.go (OLLAMA_CONTEXT_LENGTH, OLLAMA_NUM_PARALLEL,
OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE).
"""

from __future__ import annotations

import re
from typing import Any

from service.agent.paste.reading import NOT_UNDERSTOOD, Reading
from service.agent.paste.serving_flags import POOL_SHARED, gguf_name
from service.agent.paste.values import as_bool, as_int

_LINE = re.compile(r"^\s*(FROM|PARAMETER|TEMPLATE|SYSTEM|ADAPTER|LICENSE|MESSAGE)\s+(.*)$", re.IGNORECASE)
# detection: the instructions as Modelfiles write them (upper case), FROM one model reference
_DETECT_LINE = re.compile(r"^\s*(FROM|PARAMETER|TEMPLATE|SYSTEM|ADAPTER|LICENSE|MESSAGE)\s+\S")
_DETECT_FROM = re.compile(r"^\s*FROM\s+\S+\s*$")
_ENV = re.compile(r"^\s*(?:export\s+)?(OLLAMA_[A-Z_]+)\s*=\s*['\"]?([^'\"\s]*)['\"]?")
# Ollama's library tags: a size and, after it, a quant (`qwen2.5:7b-instruct-q8_0`); no quant = Q4_K_M
_TAG_QUANT = re.compile(r"[-_](q\d(?:_[a-z0-9]+)*|fp16|f16|bf16)$", re.IGNORECASE)


def is_modelfile(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return (
        bool(lines)
        and any(_DETECT_FROM.match(line) for line in lines)
        and all(
            _DETECT_LINE.match(line) or _ENV.match(line) or line.startswith((" ", "\t", '"""', "{{"))
            for line in lines
        )
    )


def has_ollama_variables(text: str) -> bool:
    return any(_ENV.match(line) for line in text.splitlines())


def _from(reading: Reading, value: str) -> None:
    value = value.strip()
    if value.lower().endswith(".gguf"):
        name, quant = gguf_name(value)
        reading.use("FROM", "model", name)
        if quant:
            reading.use("FROM", "weight_dtype", quant)
        return
    name, _, tag = value.partition(":")
    if (
        "/" in name
    ):  # `hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M`: a Hub GGUF repository and its quant
        reading.use("FROM", "model", name.rsplit("/", 1)[-1].removesuffix("-GGUF").removesuffix("-gguf"))
        quant = (tag or "q4_k_m").lower()  # ollama pulls Q4_K_M when the tag names none
        reading.use("FROM", "weight_dtype", quant)
        return
    found = _TAG_QUANT.search(tag)
    size = tag[: found.start()] if found else tag
    size = re.sub(r"-(instruct|chat|text|base)$", "", size)
    reading.use("FROM", "model", f"{name}:{size}" if size else name)
    if found:
        reading.use(
            "FROM",
            "weight_dtype",
            {"fp16": "fp16", "f16": "fp16"}.get(found.group(1).lower(), found.group(1).lower()),
        )
    else:
        reading.fields["weight_dtype"] = "q4_k_m"
        reading.assume("ollama_default_quant")


_KV_TYPES = {"f16": "fp16", "q8_0": "int8"}


def _variable(reading: Reading, name: str, value: str) -> None:
    handlers: dict[str, Any] = {
        "OLLAMA_CONTEXT_LENGTH": lambda: reading.use(name, "seq_len", as_int(value)),
        "OLLAMA_FLASH_ATTENTION": lambda: reading.use(
            name, "attention", "flash" if as_bool(value) else "eager"
        ),
        "OLLAMA_KV_CACHE_TYPE": lambda: reading.use(name, "kv_dtype", _KV_TYPES[value.lower()]),
        "OLLAMA_NUM_PARALLEL": lambda: reading.ignore(name, POOL_SHARED),
        "OLLAMA_MAX_LOADED_MODELS": lambda: reading.ignore(name, NOT_UNDERSTOOD),
        "OLLAMA_GPU_OVERHEAD": lambda: reading.ignore(name, NOT_UNDERSTOOD),
    }
    handler = handlers.get(name)
    if handler is None:
        reading.ignore_unknown(name)
        return
    try:
        handler()
    except (ValueError, KeyError):
        reading.ignore(name, "value_not_understood")


def read_ollama(text: str) -> Reading:
    reading = Reading("ollama-modelfile")
    for line in text.splitlines():
        env = _ENV.match(line)
        if env:
            _variable(reading, env.group(1), env.group(2))
            continue
        found = _LINE.match(line)
        if not found:
            continue
        word, rest = found.group(1).upper(), found.group(2)
        if word == "FROM":
            _from(reading, rest)
        elif word == "PARAMETER":
            _parameter(reading, rest)
        elif word == "ADAPTER":
            reading.ignore("ADAPTER", NOT_UNDERSTOOD)
        else:
            reading.ignore(word, "no_memory_effect")
    reading.fields["task"] = "inference"
    reading.fields["engine"] = "ollama"
    return reading


def _parameter(reading: Reading, rest: str) -> None:
    name, _, value = rest.strip().partition(" ")
    key = f"PARAMETER {name}"
    value = value.strip()
    try:
        if name == "num_ctx":
            reading.use(key, "seq_len", as_int(value))
        elif name == "num_gpu":
            # layers on the GPU (ollama api/types.go Options.NumGPU); the estimate counts every layer there
            reading.ignore(key, "all_layers_on_gpu" if as_int(value) >= 99 else NOT_UNDERSTOOD)
        elif name in ("num_batch",):
            reading.ignore(key, NOT_UNDERSTOOD)
        else:
            reading.ignore(key, "no_memory_effect")
    except ValueError:
        reading.ignore(key, "value_not_understood")
