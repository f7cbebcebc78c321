"""Calls repeated with the same inputs inside one computation, made once.

Two memos share a `memo_scope()` (one per RL estimate, one per planner search: a search's scope is kept by
the RL estimates inside it, so its candidates share their steps):

- `memo_same_input(fn)`: an RL job composes several footprints of the same resolved scenario, and with
  the critic and reward model defaulting to the policy's, several of them are the same call (the
  reference's, the reward model's and the critic's no-grad forwards over the rollouts; with full
  fine-tuning the actor's and the critic's training steps). Key: the identity of the first argument and
  the keyword arguments (same type and value: 1, 1.0 and True differ in a formula's text; values that
  cannot be hashed, such as the catalog's model references, by identity, held by the memo so that an
  identity is not reused); an entry is used only while none of the first argument's attributes has been
  reassigned since it was made (each attribute is the same object as then), so filling a default between
  two calls is seen.
- `memo_args(fn)`: a pure function of its arguments (stage activations, a GPU's slice of the model, a
  trainable set), keyed by the arguments themselves with their types: the candidates of a planner search
  ask it with the same arguments again and again.

No memo outlives its scope, and outside a scope every call runs as before. Results are shared between
callers: they must be immutable (ModelFootprint and PhasedComponent are named tuples, the rules' results
frozen). A memo keyed on every field each call reads, recorded per call, was measured here and cost more
(recording every read, hashing the layouts) than the footprints it saved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from operator import is_
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_SCOPE: ContextVar[dict[Any, Any] | None] = ContextVar("call_memo", default=None)
_BY_IDENTITY: set[type] = set()  # types whose values could not be hashed: keyed by identity


@contextmanager
def memo_scope() -> Iterator[None]:
    """A memo for the calls made inside the block: a fresh one, or the enclosing block's (a planner search
    shares one memo across its candidates; every entry stays sound for as long as the memo lives)."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _key(value: object, keep: list[object]) -> object:
    """A hashable key equal for values that behave alike (see the module docstring)."""
    kind = type(value)
    if kind is tuple:
        return (tuple, tuple(_key(v, keep) for v in value))  # type: ignore[union-attr]
    if kind not in _BY_IDENTITY:
        try:
            hash(value)
            return (kind, value)
        except TypeError:
            _BY_IDENTITY.add(kind)  # identity is a sound key for any value; this type's is cheaper to find
    keep.append(value)
    return ("id", id(value))


_PLAIN = frozenset({int, float, bool, str, type(None)})


def _arguments_key(kwargs: dict[str, Any], keep: list[object]) -> tuple[object, ...]:
    """`_key` of each keyword argument, plain scalars (the common case) without a call per value."""
    out = []
    for name, value in kwargs.items():
        kind = type(value)
        out.append((name, kind, value) if kind in _PLAIN else (name, _key(value, keep)))
    return tuple(out)


_MISS = object()


def memo_args(fn: F) -> F:
    """Memoise a pure function `fn(*args, **kwargs)` inside a memo scope, keyed by its arguments: hashable
    ones by value with their type (1, 1.0 and True differ; a tuple's items by value), any argument that
    cannot be hashed makes the whole key `_key`'s (such values by identity, kept alive by the memo).
    Outside a scope every call runs as before."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        table = _SCOPE.get()
        if table is None:
            return fn(*args, **kwargs)
        # the arguments themselves with their types (the key holds them: nothing is freed and reused)
        call: Any = (fn, args, tuple(map(type, args)), *kwargs.items(), tuple(map(type, kwargs.values())))
        try:
            got = table.get(call, _MISS)
        except TypeError:  # an argument that cannot be hashed: keyed as `_key` says
            keep: list[object] = []
            call = (
                fn,
                tuple((type(a), a) if type(a) in _PLAIN else _key(a, keep) for a in args),
                _arguments_key(kwargs, keep),
            )
            got = table.get(call, _MISS)
            if got is _MISS:
                table[(call, "keep")] = keep
        if got is _MISS:
            got = table[call] = fn(*args, **kwargs)
        return got

    return wrapper  # type: ignore[return-value]


def memo_same_input(fn: F) -> F:
    """Memoise `fn(first, **kwargs)` inside a memo scope (see the module docstring)."""

    @wraps(fn)
    def wrapper(first: Any, /, **kwargs: Any) -> Any:
        table = _SCOPE.get()
        if table is None:
            return fn(first, **kwargs)
        keep: list[object] = [first]
        call = (fn, id(first), _arguments_key(kwargs, keep))
        got = table.get(call)
        now = tuple(vars(first).values())
        if got is not None and len(got[0]) == len(now) and all(map(is_, got[0], now)):
            return got[1]
        result = fn(first, **kwargs)
        table[call] = (now, result, keep)
        return result

    return wrapper  # type: ignore[return-value]
