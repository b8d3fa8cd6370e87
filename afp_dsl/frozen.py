"""Immutable JSON values for the IR: maps become `FrozenMap`, lists become tuples.

Role:       lets literal data (fact maps, schemas, stub results) live inside the frozen IR.
Invariants: `thaw(freeze(x)) == x` for any JSON value; FrozenMap keeps insertion order.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


class FrozenMap(Mapping):
    """A hashable, read-only, insertion-ordered mapping (the stdlib has none)."""

    __slots__ = ("_d", "_h")

    def __init__(self, items: Any = ()):
        self._d = dict(items)
        self._h: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    # The Mapping mixins would go through __getitem__ and exceptions; schemas and facts are
    # read in every check and tool call, so these delegate straight to the dict.
    def __contains__(self, key: object) -> bool:
        return key in self._d

    def get(self, key: str, default: Any = None) -> Any:
        return self._d.get(key, default)

    def keys(self):  # noqa: ANN201 - a dict view, read-only
        return self._d.keys()

    def values(self):  # noqa: ANN201
        return self._d.values()

    def items(self):  # noqa: ANN201
        return self._d.items()

    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(tuple(self._d.items()))
        return self._h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._d == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


def is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, answered without the abstract-class machinery for the two
    mappings JSON data here comes as (FrozenMap, dict) and for scalars; checks ask it a lot."""
    t = type(value)
    if t is FrozenMap or t is dict:
        return True
    if t is str or t is int or t is float or t is bool or t is tuple or t is list or value is None:
        return False
    return isinstance(value, Mapping)


def freeze(value: Any) -> Any:
    """Deep-convert JSON-like data to hashable immutable data."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value  # the common leaves, without the costly abstract-class checks below
    if isinstance(value, Mapping):
        return FrozenMap((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """A deep copy as plain JSON shapes: any mapping → dict (string keys), lists and tuples →
    lists; scalars as they are. The one conversion every stage uses (`thaw` is its name for IR)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


thaw = plain
