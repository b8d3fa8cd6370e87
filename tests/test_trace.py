"""A trace event is an immutable record, equal, printed and serialised by its fields."""
from __future__ import annotations

import pytest

from afp_dsl.trace import Event


def test_an_event_cannot_be_changed_and_compares_by_its_fields() -> None:
    e = Event(1, "r:1", "run.started", 0, 1, (), None, {"message": "hi"})
    with pytest.raises(AttributeError):
        e.kind = "run.finished"  # type: ignore[misc]
    assert e == Event.from_dict(e.to_dict())
    assert e != Event(1, "r:1", "run.started", 0, 1, (), None, {"message": "ho"})
    assert repr(e).startswith("Event(seq=1, id='r:1', kind='run.started'")
