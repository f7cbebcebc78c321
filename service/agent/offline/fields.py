"""Scenario fields stated in free text, one small extractor per field family.

Each extractor reads the normalised lower-case question and returns only what the user
actually said (a dict of Scenario fields); nothing here fills a default -- the estimator
does that and lists it as an assumption. The families live in their own modules:
task_fields, precision_fields, lora_fields, shape_fields, rl_fields, parallel_fields, offload_fields,
training_fields, architecture_fields (field_common holds the value forms and negation).
"""

from __future__ import annotations

from service.agent.offline.architecture_fields import shape_overrides
from service.agent.offline.field_common import Extractor, Fields
from service.agent.offline.lora_fields import lora_fields
from service.agent.offline.numbers import plain_int
from service.agent.offline.offload_fields import offload_fields
from service.agent.offline.parallel_fields import activation_fields, parallel_fields
from service.agent.offline.precision_fields import dtype_fields, optimizer_fields
from service.agent.offline.shape_fields import shape_fields
from service.agent.offline.task_fields import (
    FULL_MENTION,
    LORA_MENTION,
    QLORA_MENTION,
    RL_LORA_DEFAULT_RANK,
    task_fields,
)
from service.agent.offline.training_fields import implies_training, no_effect_fields
from tools.scenario import RL_TASKS

__all__ = [
    "EXTRACTORS",
    "FULL_MENTION",
    "LORA_MENTION",
    "QLORA_MENTION",
    "RL_LORA_DEFAULT_RANK",
    "RL_TASKS",
    "implies_training",
    "parse_int",
    "shape_overrides",
    "stated_fields",
]

EXTRACTORS: tuple[Extractor, ...] = (
    task_fields,
    dtype_fields,
    optimizer_fields,
    lora_fields,
    shape_fields,
    activation_fields,
    parallel_fields,
    offload_fields,
    no_effect_fields,
)


def stated_fields(low: str) -> Fields:
    """All fields the question states, merged over the extractors."""
    out: Fields = {}
    for extract in EXTRACTORS:
        out.update(extract(low))
    return out


def parse_int(text: str) -> int | None:
    return plain_int(text)
