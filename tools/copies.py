"""`copy_with`: `model.model_copy(update=...)` for plain models, without its generic steps; `instance`: the
model instance both it and model_construct end with, for callers that hold every value.

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
    return instance(type(model), {**model.__dict__, **update}, model.__pydantic_fields_set__ | update.keys())


def instance(
    cls: type[M], fields: dict[str, Any], fields_set: set[str], private: dict[str, Any] | None = None
) -> M:
    """An instance of `cls` holding `fields` as they are (no validation, no defaults looked up), with
    `fields_set` marked as set, no extra fields and the private attributes `private`: what model_construct
    and model_copy end with, for callers that already hold every value (tools.result.constructed,
    `copy_with`, service/api/sse_wire.py's decoding)."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    object.__setattr__(obj, "__pydantic_fields_set__", fields_set)
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", private)
    return obj
