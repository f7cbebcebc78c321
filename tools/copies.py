"""`copy_with`: `model.model_copy(update=...)` for plain models, without its generic steps.

Pydantic's copy goes through `copy.copy` three times per object. Copies are made often: each of a planner
search's candidate scenarios (tools/scenario.py `Scenario.updated`), and every component, assumption and
suggestion of an answer's Estimate when the service adds its English words (the estimator's objects are
never changed in place; a tenth of an answer's text work). A plain model (no extra fields, no private
attributes) is copied here in one step; any other model goes through `model_copy`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def copy_with(model: M, update: dict[str, Any]) -> M:
    """`model.model_copy(update=update)` (a shallow copy with `update`'s fields set, not validated)."""
    if model.__pydantic_extra__ is not None or model.__pydantic_private__ is not None:
        return model.model_copy(update=update)
    cls = type(model)
    copied = cls.__new__(cls)
    object.__setattr__(copied, "__dict__", {**model.__dict__, **update})
    object.__setattr__(copied, "__pydantic_extra__", None)
    object.__setattr__(copied, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    object.__setattr__(copied, "__pydantic_private__", None)
    return copied
