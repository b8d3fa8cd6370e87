"""`record.Record` gives frozen attrs classes the equality, hashing and repr attrs would build.

Each record class (the frozen value classes of the check path) is compared with an attrs-built twin
(same fields, attrs' own methods) on generated field values; and no frozen attrs class of the
package is left with identity equality (built `eq=False` without subclassing `Record`).
"""
from __future__ import annotations

import importlib
import pkgutil

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import afp_dsl
from afp_dsl.record import Record

SKIP = {"afp_dsl.store_postgres"}  # (needs a driver that may be missing)


def package_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(afp_dsl.__path__, "afp_dsl."):
        if info.name in SKIP:
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:
            continue
        found += [v for v in vars(mod).values()
                  if isinstance(v, type) and attrs.has(v) and v.__module__ == info.name]
    return sorted(set(found), key=lambda c: (c.__module__, c.__qualname__))


CLASSES = package_classes()
RECORDS = [c for c in CLASSES if issubclass(c, Record)]


def twin(cls: type) -> type:
    """`cls`'s fields in a class attrs builds with its own `__eq__`, `__hash__` and `__repr__`."""
    fields = {f.name: attrs.field(eq=f.eq, repr=f.repr) for f in attrs.fields(cls)}
    return attrs.make_class(cls.__name__, fields, frozen=True, kw_only=True)


def build(cls: type, values: list) -> object:
    obj = object.__new__(cls)
    for f, v in zip(attrs.fields(cls), values):
        object.__setattr__(obj, f.name, v)
    return obj


values = st.sampled_from([0, 1, 1.0, True, -2, "a", "b", "", None, (), (1,), ("a", 1), frozenset({1}),
                          float("nan")])


def test_the_check_path_s_classes_are_records() -> None:
    names = {c.__qualname__ for c in RECORDS}
    assert {"Diagnostic", "Label", "SourceFile", "Env", "Verdict", "Code", "LoadResult"} <= names


def test_no_frozen_class_has_identity_equality() -> None:
    """A class built `eq=False` must get its equality from `Record` (or define its own)."""
    identity = [c.__qualname__ for c in CLASSES
                if c.__setattr__ is not object.__setattr__ and c.__eq__ is object.__eq__]
    assert not identity, identity


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
@settings(derandomize=True, deadline=None, max_examples=60, database=None)
@given(data=st.data())
def test_a_record_compares_hashes_and_shows_as_attrs_would(cls, data) -> None:
    n = len(attrs.fields(cls))
    a, b = (data.draw(st.lists(values, min_size=n, max_size=n)) for _ in range(2))
    if data.draw(st.booleans()):  # often equal in the compared fields
        b = [x if f.eq else y for f, x, y in zip(attrs.fields(cls), a, b)]
    T = twin(cls)
    ours, theirs = (build(cls, a), build(cls, b)), (build(T, a), build(T, b))
    assert same(ours[0] == ours[1], theirs[0] == theirs[1])
    assert same(ours[0] != ours[1], theirs[0] != theirs[1])
    assert (ours[0] == theirs[0]) is False  # another class: never equal
    assert repr(ours[0]) == repr(theirs[0])
    if ours[0] == ours[1]:
        assert hash(ours[0]) == hash(ours[1])


def same(x: object, y: object) -> bool:
    return type(x) is type(y) and (x == y or x is y)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_generic_methods_are_exact_for_the_record(cls) -> None:
    """No field asks for what the generic methods do not do (a comparison key, a custom repr,
    a field left out of `__init__`)."""
    assert all(f.init and f.eq_key is None and f.repr in (True, False) for f in attrs.fields(cls))


def test_a_record_inside_itself_shows_as_in_attrs() -> None:
    from afp_dsl.diagnostics import Label
    box: list = []
    ours = Label(box, "m")
    box.append(ours)
    theirs = build(twin(Label), [[], "m", True])
    theirs.span.append(theirs)
    assert repr(ours) == repr(theirs) == "Label(span=[...], message='m', primary=True)"
