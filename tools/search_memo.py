"""Work shared by the calls of one search, memoised on exactly what each call read.

A planner search's candidates differ from each other in one or two scenario fields, and an RL job
composes several footprints of the same model (its reference, reward and critic forwards over the same
sequences are one computation). `memo_in_search(fn)` memoises such a pure function inside a
`search_scope()` (one per `tools.planner.plan` call, or one per RL estimate made outside a search;
outside a scope every call runs as before):

- a call that misses runs `fn` on a recording view of its first argument (`ReadLog`): every attribute
  read, and every field read of a nested object listed in `NESTED` (the scenario), is logged once with
  the value it gave; assigning through the view raises (a memoised function cannot change its input),
  and so does any use of the view other than reading attributes (comparing, hashing, iterating);
- the reads are stored in the order they were made, as a trie per set of keyword arguments: a later call
  with the same keyword arguments follows it, read by read, on its own input and is answered when every
  read gives the same value (same type and value: 1, 1.0 and True differ in a formula's text; objects
  that cannot be hashed, such as the catalog's model references, by identity, and the memo holds them
  so that an identity is not reused). `fn` is deterministic in what it reads, so equal reads mean the
  same course of reads and the same result: the key is what the call did read, never a hand-written
  list of fields that could go stale.

Results are shared between callers: they must be immutable (ModelFootprint, PhasedComponent are frozen).
No memo outlives its scope: separate searches (and separate questions) always compute afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# attributes of the recorded object whose own attribute reads are logged one by one (a scenario differs
# between candidates as a whole, field by field it mostly does not)
NESTED = frozenset({"scenario"})

_SCOPE: ContextVar[dict[Any, Any] | None] = ContextVar("search_memo", default=None)
_MISSING = object()


@contextmanager
def search_scope(*, join: bool = False) -> Iterator[None]:
    """A fresh memo for the calls made inside the block (one planner search); `join`: the enclosing
    block's memo when there is one (one estimate inside a search shares the search's)."""
    if join and _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


class ReadLog:
    """A read-only view of `obj` logging each attribute read: path -> value (see the module docstring)."""

    def __init__(self, obj: object, log: dict[tuple[str, ...], object], prefix: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> object:
        value = getattr(self._obj, name)
        path = (*self._prefix, name)
        if not self._prefix and name in NESTED:
            value = ReadLog(value, self._log, path)
        else:
            self._log[path] = value
        # later reads of `name` find it in the view's own dict (no __getattr__ call): one log entry per name
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: object) -> None:
        raise TypeError(f"a memoised computation may not set {name!r} on its input")

    def _unlogged(self, *_: object) -> object:
        raise TypeError("a memoised computation reads its input by attribute only (this use is not logged)")

    __eq__ = __hash__ = __bool__ = __iter__ = __len__ = _unlogged  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ReadLog({self._obj!r})"


def _key(value: object, keep: list[object]) -> object:
    """A hashable key equal for values that behave alike: type and value (1, 1.0 and True differ in a
    formula's text), tuples element by element, unhashable objects by identity (held in `keep`)."""
    if isinstance(value, tuple):
        return (tuple, tuple(_key(v, keep) for v in value))
    try:
        hash(value)
    except TypeError:
        keep.append(value)
        return ("id", id(value))
    return (type(value), value)


def _read(obj: object, path: tuple[str, ...]) -> object:
    for name in path:
        obj = getattr(obj, name, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


class _Leaf:
    __slots__ = ("result",)

    def __init__(self, result: object) -> None:
        self.result = result


class _Node:
    """A read the memoised calls made at this point, and where each value it gave leads (a trie over the
    calls' reads in the order they were made: equal reads so far mean the same next read)."""

    __slots__ = ("kids", "path")

    def __init__(self, path: tuple[str, ...]) -> None:
        self.path = path
        self.kids: dict[object, _Node | _Leaf] = {}


def _look_up(node: _Node | _Leaf | None, first: object) -> object:
    now: list[object] = []  # `first` is alive during the look-up: the ids of its objects are its own
    while isinstance(node, _Node):
        node = node.kids.get(_key(_read(first, node.path), now))
    return _MISSING if node is None else node.result


def _insert(
    root: list[_Node | _Leaf | None], log: dict[tuple[str, ...], object], result: object, held: list
) -> None:
    """Add the path of reads `log` (in the order made) ending at `result` to the trie under `root[0]`."""
    reads = list(log.items())
    if not reads:
        root[0] = _Leaf(result)
        return
    if root[0] is None:
        root[0] = _Node(reads[0][0])
    node = root[0]
    for i, (path, value) in enumerate(reads):
        if not isinstance(node, _Node) or node.path != path:  # not the same course of reads: left unstored
            return
        k = _key(value, held)
        nxt = node.kids.get(k)
        if nxt is None:
            nxt = node.kids[k] = _Node(reads[i + 1][0]) if i + 1 < len(reads) else _Leaf(result)
        node = nxt


def memo_in_search(fn: F) -> F:
    """Memoise `fn(first, **kwargs)` inside a search scope on the reads it made of `first` and on its
    keyword arguments (see the module docstring)."""

    @wraps(fn)
    def wrapper(first: Any, /, **kwargs: Any) -> Any:
        table = _SCOPE.get()
        if table is None:
            return fn(first, **kwargs)
        held: list[object] = []
        call = (fn, tuple(sorted((k, _key(v, held)) for k, v in kwargs.items())))
        entry = table.get(call)
        if entry is None:
            entry = table[call] = ([None], held)  # (the trie's root, objects whose ids key it)
        got = _look_up(entry[0][0], first)
        if got is not _MISSING:
            return got
        log: dict[tuple[str, ...], object] = {}
        result = fn(ReadLog(first, log), **kwargs)
        _insert(entry[0], log, result, entry[1])
        return result

    return wrapper  # type: ignore[return-value]
