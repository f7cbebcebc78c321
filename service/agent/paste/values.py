"""Converters from a pasted value (a YAML/JSON scalar or a flag's text) to a Scenario value.

Each raises ValueError for a value it does not understand; the caller lists the key as ignored
(`value_not_understood`). Byte sizes as logs print them are read exactly (Decimal, then rounded to the byte).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

TRUE_WORDS = frozenset({"true", "yes", "on", "1", "y"})
FALSE_WORDS = frozenset({"false", "no", "off", "0", "n", "none", "null"})


def model_name(value: Any) -> str:
    """A model as a command or log names it: a hub id (`Qwen/Qwen2.5-7B-Instruct`) as is; a local directory
    (`/data/models/Qwen2.5-7B-Instruct/`) by its last part, which is how the catalog knows it."""
    text = str(value).strip()
    if text.startswith(("/", "./", "../", "~")):
        return text.rstrip("/").rsplit("/", 1)[-1]
    return text


def as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(f"not a yes/no value: {value!r}")


def as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a yes/no value is not a count")
    if isinstance(value, int):
        return value
    text = str(value).strip().replace("_", "").replace(",", "")
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"\d+(?:\.0*)?|\d+(?:\.\d+)?e\d+", text, re.IGNORECASE):
        number = float(text)
        if number.is_integer():
            return int(number)
    raise ValueError(f"not a whole number: {value!r}")


def as_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("a yes/no value is not a number")
    return float(str(value).strip())


def as_targets(value: Any) -> list[str]:
    """LoRA target modules: a list, or a comma-separated text; `all` / `all-linear` is every linear."""
    items = value if isinstance(value, list) else str(value).split(",")
    names = [str(item).strip() for item in items if str(item).strip()]
    if not names:
        raise ValueError("no module names")
    if any(name.lower() in ("all", "all-linear", "all_linear") for name in names):
        return ["all-linear"]
    return names


_DTYPES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "torch.float16": "fp16",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "torch.float32": "fp32",
    "fp8": "fp8",
}


def as_dtype(value: Any) -> str:
    text = str(value).strip().lower()
    if text in _DTYPES:
        return _DTYPES[text]
    raise ValueError(f"not a dtype: {value!r}")


# HF TrainingArguments `optim` names (transformers/training_args.py OptimizerNames) and their kin
_OPTIMIZERS = {
    "adamw": "adamw",
    "adamw_torch": "adamw",
    "adamw_torch_fused": "adamw",
    "adamw_hf": "adamw",
    "adamw_apex_fused": "adamw",
    "adam": "adamw",
    "torch.optim.adamw": "adamw",
    "torch.optim.adam": "adamw",
    "adamw_bnb_8bit": "adamw_8bit",
    "adamw_8bit": "adamw_8bit",
    "bnb_8bit": "adamw_8bit",
    "bitsandbytes.optim.adamw8bit": "adamw_8bit",
    "paged_adamw_8bit": "paged_adamw_8bit",
    "bitsandbytes.optim.pagedadamw8bit": "paged_adamw_8bit",
    "paged_adamw_32bit": "paged_adamw",
    "paged_adamw": "paged_adamw",
    "bitsandbytes.optim.pagedadamw": "paged_adamw",
    "adafactor": "adafactor",
    "sgd": "sgd",
    "torch.optim.sgd": "sgd",
    "lion": "lion",
    "lion_32bit": "lion",
}


def as_optimizer(value: Any) -> str:
    text = str(value).strip().lower()
    if text in _OPTIMIZERS:
        return _OPTIMIZERS[text]
    raise ValueError(f"not a known optimizer: {value!r}")


def stage_from_name(value: Any) -> int:
    """The ZeRO stage named by a DeepSpeed config's file name (ds_z3_config.json, zero2.json, zero3_bf16)."""
    found = re.search(r"(?:z|zero|stage)[_\-]?([0-3])", str(value), re.IGNORECASE)
    if not found:
        raise ValueError(f"no ZeRO stage in the name {value!r}")
    return int(found.group(1))


_UNITS = {
    "b": 1,
    "bytes": 1,
    "byte": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}
_SIZE = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*([KMGT]i?B|B|bytes?)\s*$", re.IGNORECASE)


def size_bytes(number: str, unit: str) -> int:
    """`12.34` `GiB` -> the bytes that figure names, rounded to the byte (the figure is what was printed)."""
    scale = _UNITS[unit.strip().lower()]
    return int((Decimal(number.replace(",", "")) * scale).to_integral_value())


def parse_size(text: str) -> int:
    found = _SIZE.match(text)
    if not found:
        raise ValueError(f"not a size: {text!r}")
    return size_bytes(found.group(1), found.group(2))
