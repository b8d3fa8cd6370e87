"""Audit regression: `message matches /x/` beside `not message matches /x/` never holds
(exactly one of them does on any text). Before, the solver only tried candidate strings and
called it unknown, so a repeated policy rule passed silently (AFP401) and so did a
contradictory `when` (AFP208).
"""
from __future__ import annotations

from check_support import analyse


def test_a_text_condition_and_its_negation_never_both_hold():
    spec = ('agent a { policies = [p] }\npolicy p { input { deny when message matches /x/ '
            'because "a"  deny when message matches /x/ because "b" } }\n')
    assert [d.code for d in analyse(spec, "t.afp")[1]] == ["AFP401"]
    spec = ('agent a { context = [i] }\ninstruction i { prompt = "p" when = message mentions '
            '"x" and not message mentions "x" }\n')
    assert [d.code for d in analyse(spec, "t.afp")[1]] == ["AFP208"]
    spec = ('agent a { context = [i] }\ninstruction i { prompt = "p" when = message mentions '
            '"x" and not message mentions "y" }\n')
    assert [d.code for d in analyse(spec, "t.afp")[1]] == []
