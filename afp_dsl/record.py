"""Equality, hashing and repr written once for frozen attrs classes (`Record`, `record`).

Role:       the base of the frozen value classes the check path loads (diagnostics, source
            files, the checks' findings), as `ir_expr.Node` is the IR's.
            Speed: attrs compiles `__eq__`, `__hash__` and `__repr__` for each class it builds,
            about half of what building a small class costs, and every `afpc` command pays it
            at import for every class it loads.
Invariants: attrs' own methods, to the letter: a record equals a record of the same class whose
            compared fields are equal, field by field; fields declared `eq=False` take no part
            in equality or hashing, `repr=False` none in repr (`tests/test_record.py` compares
            every record class with an attrs-built twin).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform

import attrs


class Record:
    """Equality, hashing and repr from the attrs fields of the class (see the module header).
    A class gets them by subclassing `Record` and being built with `record`."""

    __slots__ = ()

    def __eq__(self, other: object) -> Any:
        # attrs' `self.a == other.a and self.b == other.b ...`: field by field, no identity
        # shortcut (NaN differs from itself), the first false result or else the last one.
        if other.__class__ is not self.__class__:
            return NotImplemented
        result: Any = True
        for name in _names(self.__class__)[0]:
            result = getattr(self, name) == getattr(other, name)
            if not result:
                return result
        return result

    def __ne__(self, other: object) -> Any:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, *[getattr(self, n) for n in _names(self.__class__)[0]]))

    def __repr__(self) -> str:
        # attrs' too: the class's own name, and "..." for a record met again inside itself.
        seen = _REPRING.__dict__.setdefault("ids", set())
        if id(self) in seen:
            return "..."
        seen.add(id(self))
        try:
            shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[1])
            return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({shown})"
        finally:
            seen.discard(id(self))


if TYPE_CHECKING:  # what type checkers read: a frozen attrs class whose fields are its arguments
    _C = TypeVar("_C")

    @dataclass_transform(frozen_default=True, field_specifiers=(attrs.field,))
    def record(cls: type[_C]) -> type[_C]: ...
else:
    record = attrs.frozen(eq=False, repr=False)
_REPRING = threading.local()  # the records whose repr is being built, per thread

_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(compared field names, shown field names) of a record class."""
    names = _NAMES.get(cls)
    if names is None:
        fields = attrs.fields(cls)
        names = _NAMES[cls] = (tuple(f.name for f in fields if f.eq),
                               tuple(f.name for f in fields if f.repr))
    return names
