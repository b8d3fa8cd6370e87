"""Event ids are `<run>:<seq>` whatever the table of seq texts holds (`recorder.seq_text`).

The recorder takes a seq's decimal text from a shared table that grows by replacement; these
tests hold it to `str(seq)` across its growth, past its cap, from several threads at once, and in
the ids of a recorded trace (every way an event is emitted).
"""
from __future__ import annotations

import threading

import pytest

from afp_dsl import ir, recorder
from afp_dsl.recorder import Recorder, seq_text
from afp_dsl.redaction import Redactor
from afp_dsl.trace import Trace


@pytest.fixture
def small_table(monkeypatch):
    """A fresh, short table, so the tests below see it grow."""
    monkeypatch.setattr(recorder, "_SEQ_TEXT", ["0", "1", "2"])
    monkeypatch.setattr(recorder, "_SEQ_CAP", 5000)


def test_seq_texts_are_the_decimal_texts_across_growth_and_past_the_cap(small_table) -> None:
    for seq in [0, 1, 2, 3, 7, 8, 100, 4, 999, 4999, 5000, 5001, 10 ** 9, -1]:
        assert seq_text(seq) == str(seq)
    table = recorder._SEQ_TEXT
    assert len(table) == 5000 and all(text == str(i) for i, text in enumerate(table))


def test_threads_growing_the_table_never_see_a_wrong_text(small_table) -> None:
    wrong: list = []

    def work(start: int) -> None:
        for seq in range(start, 5000, 7):
            if seq_text(seq) != str(seq) or recorder._SEQ_TEXT[seq % 3] != str(seq % 3):
                wrong.append(seq)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_every_emit_path_records_run_colon_seq_ids(small_table) -> None:
    red = Redactor([ir.Redact(name="secrets", keys=("password",))])
    rec = Recorder(Trace("run-7"), red)
    head = ({"policy": "p", "call_id": None, "iteration": None}, ("shape",), None)
    for i in range(40):  # (past the table's first length and its first growths)
        cause = rec.emit("tool.called", {"n": i}, iteration=1)
        rec.emit_shaped("policy.decided", {"policy": "p"}, ("s",), "t", 1, None, cause)
        rec.emit_rows([head, head], "call-1", 1, cause)
        rec.emit_vouched("tool.called", {"n": i}, cause, 1, None, cause)
        rec.emit_vouched_plus("tool.returned", {"n": i}, cause, ("n",), (i,), 1, None, (cause,))
    events = list(rec.trace)
    assert len(events) == 240
    assert [e.id for e in events] == [f"run-7:{e.seq}" for e in events]
    assert [e.seq for e in events] == list(range(1, 241))


def test_a_clock_of_the_host_takes_the_general_row_loop_with_the_same_ids(small_table) -> None:
    class Clock:
        def __init__(self) -> None:
            self.t = 100

        def now(self) -> int:
            self.t += 2
            return self.t

    rec = Recorder(Trace("r"), Redactor([]), clock=Clock())
    head = ({"policy": "p", "call_id": None, "iteration": None}, ("shape",), None)
    rec.emit("tool.called", {"n": 1}, iteration=1)
    rec.emit_rows([head, head, head], "call-1", 1, "r:1")
    events = list(rec.trace)
    assert [e.id for e in events] == ["r:1", "r:2", "r:3", "r:4"]
    assert [e.time for e in events] == [102, 104, 106, 108]
