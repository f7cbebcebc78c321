"""Argument tables: per format, each key (or flag) and what it becomes.

A table maps a key to `To(field, convert)` (one Scenario field), to a handler `(reading, key, value)` for a
key that sets several fields, or to `SKIP` (known, no effect on GPU memory). Keys ending in `.*` match every
key under that prefix. A key no table knows is listed by `Reading.ignore_unknown`, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from service.agent.paste.reading import AUTO_VALUE, NO_MEMORY_EFFECT, VALUE_NOT_UNDERSTOOD, Reading


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class To:
    """A key that becomes one Scenario field, through `convert` (ValueError: value not understood)."""

    field: str
    convert: Callable[[Any], Any] = _same


Handler = Callable[[Reading, str, Any], None]


def _skip(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, NO_MEMORY_EFFECT)


def fact(name: str, convert: Callable[[Any], Any] = str) -> Handler:
    """A handler that keeps the value for the format's finishing step (the task from stage and finetuning
    type, the precision from bf16 and the task, ...); `facts["fact_keys"]` remembers which key gave it."""

    def handler(reading: Reading, key: str, value: Any) -> None:
        reading.facts[name] = convert(value)
        reading.facts.setdefault("fact_keys", {})[name] = key

    return handler


SKIP: Handler = _skip
_skip.takes_auto = True  # type: ignore[attr-defined]
Table = Mapping[str, "To | Handler"]

# keys every training format shares that change nothing on the GPU (paths, logging, data, schedules)
COMMON_SKIP: dict[str, To | Handler] = {
    name: SKIP
    for name in (
        "output_dir",
        "overwrite_output_dir",
        "overwrite_cache",
        "logging_steps",
        "logging_dir",
        "save_steps",
        "save_strategy",
        "save_total_limit",
        "eval_steps",
        "eval_strategy",
        "evaluation_strategy",
        "report_to",
        "run_name",
        "seed",
        "plot_loss",
        "dataset",
        "dataset_dir",
        "template",
        "max_samples",
        "val_size",
        "preprocessing_num_workers",
        "dataloader_num_workers",
        "ddp_timeout",
        "lr_scheduler_type",
        "warmup_ratio",
        "weight_decay",
        "max_grad_norm",
        "trust_remote_code",
        "do_train",
        "do_eval",
        "push_to_hub",
        "hub_model_id",
        "resume_from_checkpoint",
        "wandb_project",
        "wandb_entity",
        "wandb_watch",
        "wandb_name",
        "wandb_log_model",
        "logging_first_step",
        "bf16_full_eval",
        "tf32",
        "adam_beta1",
        "adam_beta2",
        "adam_epsilon",
        "lr_scheduler",
        "datasets",
        "dataset_prepared_path",
        "val_set_size",
        "special_tokens",
        "evals_per_epoch",
        "saves_per_epoch",
        "loss_watchdog_threshold",
        "loss_watchdog_patience",
        "chat_template",
        "remove_unused_columns",
        "dataset_name",
        "dataset_text_field",
        "hub_strategy",
        "beta",
        "pref_beta",
        "pref_loss",
        "temperature",
        "top_p",
        "reward_funcs",
        "log_completions",
    )
}


def _lookup(table: Table, key: str) -> To | Handler | None:
    if key in table:
        return table[key]
    plain = key.lstrip("-").replace("-", "_")
    if plain in table:
        return table[plain]
    for name, handler in table.items():
        if name.endswith(".*") and key.startswith(name[:-1]):
            return handler
    return None


def apply(reading: Reading, items: Iterable[tuple[str, Any]], table: Table) -> None:
    """Each (key, value) through the table: used, handled, skipped or listed as not understood."""
    for key, value in items:
        handler = _lookup(table, key)
        if handler is None:
            reading.ignore_unknown(key)
            continue
        if value is None and handler is not SKIP:
            reading.ignore(key, "unset_value")  # null: the framework's default applies
            continue
        takes_auto = getattr(handler, "takes_auto", False)
        if not takes_auto and isinstance(value, str) and value.strip().lower() == "auto":
            reading.ignore(key, AUTO_VALUE)
            continue
        try:
            if isinstance(handler, To):
                reading.use(key, handler.field, handler.convert(value))
            else:
                handler(reading, key, value)
        except (ValueError, TypeError):
            reading.ignore(key, VALUE_NOT_UNDERSTOOD)


MAX_KEYS = 2000  # a real config has tens to a few hundred keys; YAML aliases can make a paste explode
MAX_DEPTH = 12


def flatten(data: Mapping[str, Any], prefix: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    """Nested mappings as dotted keys (`zero_optimization.stage`); lists and scalars are values. PasteError
    beyond MAX_KEYS keys or MAX_DEPTH levels (a YAML "billion laughs" of aliases, not a config)."""
    from service.agent.paste.reading import PasteError

    if depth > MAX_DEPTH:
        raise PasteError("too_large", f"nested more than {MAX_DEPTH} levels deep")
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out += flatten(value, name + ".", depth + 1)
        else:
            out.append((name, value))
        if len(out) > MAX_KEYS:
            raise PasteError("too_large", f"more than {MAX_KEYS} keys")
    return out
