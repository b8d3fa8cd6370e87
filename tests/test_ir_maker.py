"""`ir.maker`'s positional builders make the very object an IR class's own `__init__` makes:
every field (spans too) set to what was given, in declaration order, frozen afterwards; and no
IR class has what `__init__` would do besides setting fields (validators, converters, a
post-init hook), which the builders skip."""
from __future__ import annotations

import attrs
import pytest

from afp_dsl import ir
from afp_dsl.source import Span

CLASSES = sorted({c for c in vars(ir).values() if isinstance(c, type) and attrs.has(c)}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_init_only_sets_fields(cls) -> None:
    assert not hasattr(cls, "__attrs_post_init__") and not hasattr(cls, "__attrs_pre_init__")
    for f in attrs.fields(cls):
        assert f.validator is None and f.converter is None, (cls, f.name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_made_node_is_what_init_makes(cls) -> None:
    names = [f.name for f in attrs.fields(cls)]
    values = [Span("f.afp", i, i + 1) if n.endswith("span") else (n, i) for i, n in enumerate(names)]
    made = ir.maker(cls)(*values)
    built = cls(**dict(zip(names, values)))
    assert type(made) is cls
    assert [getattr(made, n) for n in names] == [getattr(built, n) for n in names] == values
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(made, names[0], None)


def test_a_builder_of_many_fields_takes_exactly_its_fields() -> None:
    assert len(attrs.fields(ir.Agent)) not in (2, 3, 4, 5, 7)  # (the loop, not a fixed arity)
    with pytest.raises(TypeError, match="Agent takes"):
        ir.maker(ir.Agent)("name")


def test_a_wrong_order_would_show() -> None:
    ref = ir.maker(ir.Ref)("name", "alias", Span("f.afp", 1, 2))
    assert (ref.name, ref.alias, ref.span) == ("name", "alias", Span("f.afp", 1, 2))
    assert ref != ir.maker(ir.Ref)("alias", "name", Span("f.afp", 1, 2))
