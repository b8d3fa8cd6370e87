"""The IR's values and expressions, and the base every IR class shares.

Role:       the lower half of `ir` (which re-exports every name here): references, regexes,
            texts, data, schemas, and the expression forms guards and rules are made of.
Invariants: immutable; spans take no part in equality, hashing or repr (`Node`).
"""
from __future__ import annotations

from typing import Any, Union

import attrs

from .source import Span

NOSPAN = Span("", 0, 0)


def span_field():
    return attrs.field(default=NOSPAN, eq=False, repr=False)


class Node:
    """Equality, hashing and repr shared by every IR class, written once here: attrs would compile
    these three methods for each of the ~50 classes at import, about half of this module's import
    time, which every `afpc` command pays. Same meaning as attrs' own: a node equals a node of
    the same class whose compared fields are equal; fields declared `eq=False` (spans) take no
    part in equality, hashing or repr."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) == _key(other)

    def __ne__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) != _key(other)

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, _key(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[1])
        return f"{self.__class__.__name__}({shown})"


_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(compared field names, shown field names) of an IR class."""
    names = _NAMES.get(cls)
    if names is None:
        fields = attrs.fields(cls)
        names = _NAMES[cls] = (tuple(f.name for f in fields if f.eq),
                               tuple(f.name for f in fields if f.repr))
    return names


def _key(obj: Node) -> tuple:
    return tuple([getattr(obj, n) for n in _names(obj.__class__)[0]])


node = attrs.frozen(kw_only=True, eq=False, repr=False)


def maker(cls: type) -> Any:
    """A builder of `cls` taking every field positionally, in declaration order (defaults too):
    the object `cls(**fields)` builds, for the front end's hottest paths. Speed: an IR class's
    frozen `__init__` sets each field through `object.__setattr__` (≈ 1 µs for a `Ref`); this
    stores through the slots' own descriptors, without keywords (≈ 0.25 µs). IR classes have no
    validators, converters or post-init hooks (tests/test_ir_maker.py checks every class)."""
    sets = [getattr(cls, f.name).__set__ for f in attrs.fields(cls)]
    return _MAKERS.get(len(sets), _make_many)(cls, object.__new__, *sets)


def _make2(cls, new, s0, s1):
    def make(a, b):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        return o
    return make


def _make3(cls, new, s0, s1, s2):
    def make(a, b, c):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        s2(o, c)
        return o
    return make


def _make4(cls, new, s0, s1, s2, s3):
    def make(a, b, c, d):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        s2(o, c)
        s3(o, d)
        return o
    return make


def _make5(cls, new, s0, s1, s2, s3, s4):
    def make(a, b, c, d, e):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        s2(o, c)
        s3(o, d)
        s4(o, e)
        return o
    return make


def _make7(cls, new, s0, s1, s2, s3, s4, s5, s6):
    def make(a, b, c, d, e, f, g):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        s2(o, c)
        s3(o, d)
        s4(o, e)
        s5(o, f)
        s6(o, g)
        return o
    return make


def _make_many(cls, new, *sets):
    """A builder of any arity (the declarations' many fields): a loop over the slots' setters."""
    def make(*args):
        if len(args) != len(sets):
            raise TypeError(f"{cls.__name__} takes {len(sets)} fields, {len(args)} given")
        o = new(cls)
        for put, value in zip(sets, args):
            put(o, value)
        return o
    return make


_MAKERS = {2: _make2, 3: _make3, 4: _make4, 5: _make5, 7: _make7}


# ---------------------------------------------------------------- values
@node
class Ref(Node):
    """A reference `name` or `alias.name`; `span` covers exactly the written name."""

    name: str
    alias: str | None = None
    span: Span = span_field()

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


@node
class Regex(Node):
    pattern: str
    flags: str = ""
    span: Span = span_field()

    def __str__(self) -> str:
        return f"/{self.pattern}/{self.flags}"


@node
class Text(Node):
    """Prompt text, inline or read from `file(...)` (then `file` names it, relative to the spec)."""

    value: str
    file: str | None = None
    span: Span = span_field()


@node
class Data(Node):
    """Literal JSON data (frozen); `file` is set when read from `file(...)`."""

    value: Any
    file: str | None = None
    span: Span = span_field()


@node
class Schema(Node):
    """A JSON Schema 2020-12 document (frozen), from a schema block, a raw map or a file.

    `pointers` maps JSON pointers inside `json` (e.g. `/properties/city`) to source spans, so
    later stages can underline the field a problem is about.
    """

    json: Any
    origin: str = "block"  # "block" | "map" | "file"
    file: str | None = None
    pointers: tuple[tuple[str, Span], ...] = attrs.field(default=(), eq=False, repr=False)
    span: Span = span_field()

    def span_of(self, pointer: str) -> Span:
        for p, s in self.pointers:
            if p == pointer:
                return s
        return self.span


# ---------------------------------------------------------------- expressions
@node
class Path(Node):
    """`root.seg[0].seg`; segments are field names (str) or indexes (int)."""

    root: str
    segments: tuple[str | int, ...] = ()
    span: Span = span_field()
    root_span: Span = span_field()


@node
class Lit(Node):
    value: Any  # str | int | float | bool | None
    span: Span = span_field()


@node
class ListExpr(Node):
    items: tuple["Expr", ...]
    span: Span = span_field()


@node
class Call(Node):
    """`returned(tool)` or `active(skill)`."""

    func: str
    arg: Ref
    span: Span = span_field()


@node
class Compare(Node):
    """`left OP right`; op is one of == != < <= > >= in `not in` matches mentions."""

    op: str
    left: "Expr"
    right: Union["Expr", Regex]
    span: Span = span_field()


@node
class Invalid(Node):
    """An operand the front end rejected and reported (a map or a value call in a condition,
    AFP106): it stands for no value, and no check claims anything about a comparison holding
    one. Only a program with errors has one, so it never runs."""

    span: Span = span_field()


@node
class And(Node):
    items: tuple["Expr", ...]
    span: Span = span_field()


@node
class Or(Node):
    items: tuple["Expr", ...]
    span: Span = span_field()


@node
class Not(Node):
    item: "Expr"
    span: Span = span_field()


Expr = Union[Path, Lit, ListExpr, Call, Compare, And, Or, Not, Invalid]
