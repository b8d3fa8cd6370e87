"""The collector around a check: paused while it runs, its result settled in the oldest
generation after (api.gc_paused), the host's own collector settings and frozen objects kept."""
from __future__ import annotations

import gc

import pytest

from afp_dsl import api

SPEC = """
agent a {
  system = "Help."
  tools = [t]
}
tool t {
  description = "A tool."
  input { id: string }
}
"""


@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def _in_generation(obj, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_the_checked_program_goes_straight_to_the_oldest_generation(collector):
    program, diags = api.analyse(SPEC)
    assert not [d for d in diags if d.is_error]
    assert _in_generation(program, 2)
    assert _in_generation(program.modules[0], 2)
    assert gc.get_freeze_count() == 0  # nothing left frozen


def test_objects_the_host_froze_stay_frozen(collector):
    kept = [{"a": 1} for _ in range(10)]
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)
    program, _ = api.analyse(SPEC)
    assert gc.get_freeze_count() == frozen
    assert not _in_generation(kept[0], 2)  # still in the permanent generation


def test_a_disabled_collector_stays_disabled(collector):
    gc.disable()
    api.analyse(SPEC)
    assert not gc.isenabled()


def test_cycles_left_by_a_check_are_still_freed():
    program, _ = api.analyse(SPEC)
    del program
    gc.collect()
    assert not gc.garbage
