"""Which format a paste is, from its text (or named with --format), and reading it with that format's reader.

Order: logs and errors (CUDA OOM, memory_summary, nvidia-smi, vLLM, llama.cpp: their markers are
unmistakable, and a training log's lines may start with "{"), JSON (DeepSpeed, training_args.json,
config.json), an Ollama Modelfile or OLLAMA_* variables, a Python call, a command line,
then YAML (torchtune, accelerate, axolotl, LLaMA-Factory, verl). Malformed YAML/JSON raises PasteError with
the line and column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from service.agent.paste.reading import FORMATS, PasteError, Reading

_CONFIG_FILE_HINT = re.compile(r"^\s*[\w.\-]+\s*:\s*\S", re.MULTILINE)


def _json_reader(data: dict[str, Any]) -> Reading | None:
    from service.agent.paste import json_configs

    if "zero_optimization" in data or "train_micro_batch_size_per_gpu" in data:
        return json_configs.read_deepspeed(data)
    if "per_device_train_batch_size" in data or (
        "gradient_accumulation_steps" in data and "output_dir" in data
    ):
        return json_configs.read_training_args(data)
    if "hidden_size" in data or "n_embd" in data or "text_config" in data:
        return json_configs.read_hf_config(data)
    if "fp16" in data or ("bf16" in data and isinstance(data.get("bf16"), dict)):
        return json_configs.read_deepspeed(data)
    return None


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PasteError("bad_json", f"invalid JSON: {err.msg}", line=err.lineno, column=err.colno) from err


def load_yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        column = mark.column + 1 if mark else None
        raise PasteError(
            "bad_yaml", f"invalid YAML: {err.problem or err.context}", line=line, column=column
        ) from err
    except yaml.YAMLError as err:
        raise PasteError("bad_yaml", f"invalid YAML: {err}") from err


def _read_table(name: str, table: Any, finish: Callable[[Reading], None], data: dict[str, Any]) -> Reading:
    from service.agent.paste.tables import apply, flatten

    reading = Reading(name)
    apply(reading, flatten(data), table)
    finish(reading)
    return reading


def yaml_readers() -> dict[str, Callable[[dict[str, Any]], Reading]]:
    """The reader of each YAML format, by its `source.format` name."""
    from service.agent.paste import launcher_yaml, rl_flags, training_yaml

    return {
        "llamafactory-yaml": lambda data: _read_table(
            "llamafactory-yaml", training_yaml.LLAMAFACTORY, training_yaml.finish_llamafactory, data
        ),
        "axolotl-yaml": lambda data: _read_table(
            "axolotl-yaml", training_yaml.AXOLOTL, training_yaml.finish_axolotl, data
        ),
        "accelerate-yaml": launcher_yaml.read_accelerate,
        "torchtune-yaml": launcher_yaml.read_torchtune,
        "verl-cli": lambda data: _read_table("verl-cli", rl_flags.VERL, rl_flags.finish_verl, data),
    }


def _yaml_format(data: dict[str, Any]) -> str | None:
    """Which YAML format a mapping is, by the keys only that format has."""
    from service.agent.paste.tables import flatten

    keys = set(data)
    if any(key.endswith("_component_") for key, _ in flatten(data)):
        return "torchtune-yaml"
    if {"distributed_type", "compute_environment"} & keys:
        return "accelerate-yaml"
    if "base_model" in keys and {"micro_batch_size", "sequence_len", "adapter", "datasets"} & keys:
        return "axolotl-yaml"
    if (
        "model_name_or_path" in keys
        and {"finetuning_type", "stage", "cutoff_len", "template", "lora_target"} & keys
    ):
        return "llamafactory-yaml"
    if "actor_rollout_ref" in keys:
        return "verl-cli"
    return None


def _yaml_reader(data: dict[str, Any]) -> Reading | None:
    name = _yaml_format(data)
    if name is not None:
        return yaml_readers()[name](data)
    if "per_device_train_batch_size" in data:
        from service.agent.paste import json_configs

        return json_configs.read_training_args(data)
    return None


def _log_reader(text: str) -> Reading | None:
    from service.agent.paste import engine_logs, oom, smi

    if oom.SUMMARY_MARK.search(text):
        return oom.read_memory_summary(text)
    if oom.OOM_MARK.search(text) and "Tried to allocate" in text:
        return oom.read_cuda_oom(text)
    if smi.SMI_MARK.search(text) and re.search(r"MiB\s*/\s*\d+MiB", text):
        return smi.read_nvidia_smi(text)
    if engine_logs.LLAMA_CPP_MARK.search(text):
        return engine_logs.read_llama_cpp_log(text)
    if engine_logs.VLLM_MARK.search(text) and re.search(
        r"KV cache|GPU blocks|Model loading took|Maximum concurrency|Free memory on device", text
    ):
        return engine_logs.read_vllm_log(text)
    return None


def detect_and_read(text: str) -> Reading | None:
    """The paste read in the format its text shows; None when it is no format we know."""
    from service.agent.paste import command_line, ollama, python_call

    stripped = text.strip()
    if not stripped:
        return None
    log = _log_reader(stripped)  # first: a training log's lines may start with "{" ({'loss': ...})
    if log is not None:
        return log
    if stripped[0] in "{[":
        data = _load_json(stripped)
        return _json_reader(data) if isinstance(data, dict) else None
    if ollama.is_modelfile(stripped) or (
        ollama.has_ollama_variables(stripped) and "\n" not in stripped.strip()
    ):
        return ollama.read_ollama(stripped)
    if command_line.looks_like_command(stripped):
        return command_line.read_command(stripped)
    if python_call.CALLS.search(stripped):
        return python_call.read_python_call(stripped)
    if ollama.has_ollama_variables(stripped):
        return ollama.read_ollama(stripped)
    if _CONFIG_FILE_HINT.search(stripped):
        data = load_yaml(stripped)
        if isinstance(data, dict):
            return _yaml_reader(data)
    return None


def _named_readers() -> dict[str, Callable[[str], Reading | None]]:
    from service.agent.paste import command_line, engine_logs, json_configs, ollama, oom, smi

    def yaml_as(expected: str) -> Callable[[str], Reading | None]:
        def read(text: str) -> Reading | None:
            data = load_yaml(text)
            if not isinstance(data, dict):
                raise PasteError("bad_yaml", "expected a YAML mapping of keys to values", line=1, column=1)
            return yaml_readers()[expected](data)  # the named format's own table

        return read

    def json_as(read: Callable[[dict[str, Any]], Reading]) -> Callable[[str], Reading | None]:
        def reader(text: str) -> Reading | None:
            data = _load_json(text)
            if not isinstance(data, dict):
                raise PasteError("bad_json", "expected a JSON object", line=1, column=1)
            return read(data)

        return reader

    def hf_args(text: str) -> Reading | None:
        from service.agent.paste import python_call

        stripped = text.strip()
        if stripped.startswith("{"):
            return json_as(json_configs.read_training_args)(stripped)
        if python_call.CALLS.search(stripped):
            return python_call.read_python_call(stripped)
        return command_line.read_command(stripped)

    def verl(text: str) -> Reading | None:  # overrides on a command line, or the same keys as YAML
        return (
            command_line.read_command(text)
            if command_line.looks_like_command(text)
            else yaml_as("verl-cli")(text)
        )

    def oom_or_summary(text: str) -> Reading | None:
        return oom.read_memory_summary(text) if oom.SUMMARY_MARK.search(text) else oom.read_cuda_oom(text)

    readers: dict[str, Callable[[str], Reading | None]] = {
        name: yaml_as(name)
        for name in ("llamafactory-yaml", "axolotl-yaml", "accelerate-yaml", "torchtune-yaml")
    }
    readers.update(
        {
            name: command_line.read_command
            for name in (
                "llamafactory-cli",
                "deepspeed-cli",
                "trl-cli",
                "openrlhf-cli",
                "vllm-cli",
                "sglang-cli",
                "llama.cpp-cli",
            )
        }
    )
    readers.update(
        {
            "hf-trainer-args": hf_args,
            "verl-cli": verl,
            "deepspeed-json": json_as(json_configs.read_deepspeed),
            "hf-config-json": json_as(json_configs.read_hf_config),
            "ollama-modelfile": ollama.read_ollama,
            "cuda-oom": oom_or_summary,
            "nvidia-smi": smi.read_nvidia_smi,
            "vllm-log": engine_logs.read_vllm_log,
            "llama.cpp-log": engine_logs.read_llama_cpp_log,
        }
    )
    return readers


def _read_paste(text: str, format_name: str | None) -> Reading:
    if format_name is not None:
        if format_name not in FORMATS:
            raise PasteError("unknown_format", f"unknown format '{format_name}'")
        reading = _named_readers()[format_name](text)
        if reading is None:
            raise PasteError("not_this_format", f"the paste is not {format_name}")
        return reading
    reading = detect_and_read(text)
    if reading is None:
        raise PasteError("unknown_format", "the paste is in none of the formats read")
    return reading


def read_paste(text: str, format_name: str | None = None) -> Reading:
    """Read `text` in the named format, or the one detected; PasteError when neither works (also for a paste
    nested too deep for the parsers)."""
    try:
        return _read_paste(text, format_name)
    except RecursionError as err:
        raise PasteError("too_large", "nested too deep to read") from err
