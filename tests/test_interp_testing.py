"""`afpc test` semantics: scripts, stubs, follow-ups, decisions, expectations, reports."""
from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl.testing import FileProblem, TestResult, run_files
from afp_dsl.testing_report import _visible, junit, report

SPEC = """
agent desk { tools = [lookup, refund] graph = m policies = [guard] }
tool lookup { description = "look" input { id: string } }
tool refund { description = "refund" input { amount: number } }
skill a { description = "A" tools = [lookup] }
skill b { description = "B" tools = [refund] }
graph m {
  entry a
  route a -> b on lookup when result.found == true
}
policy guard { before refund { ask when args.amount > 100 because "needs a person" } }
"""


def write(tmp_path, body: str, name: str = "t.afp"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(SPEC) + textwrap.dedent(body))
    return f


def run(tmp_path, body: str, pattern=None):
    results, problems = run_files([write(tmp_path, body)], pattern)
    assert problems == []
    return results


def test_a_passing_test_with_stubs_route_cursor_and_counts(tmp_path):
    (r,) = run(tmp_path, """
    test ok {
      user "find X1"
      model calls lookup { id: "X1" }
      tool lookup returns { found: true }
      model says "found it"
      expect answer == "found it"
      expect route a -> b
      expect cursor b
      expect called lookup 1
      expect not called refund
      expect outcome answered
      expect trace route.evaluated
    }
    """)
    assert r.passed, r.failures


def test_failures_show_expected_actual_and_events(tmp_path):
    (r,) = run(tmp_path, """
    test bad {
      user "find X1"
      model calls lookup { id: "X1" }
      tool lookup returns { found: false }
      model says "nope"
      expect cursor b
      expect answer matches /found/
      expect called lookup 2
    }
    """)
    assert not r.passed and len(r.failures) == 3
    assert "expected: b" in r.failures[0] and "actual:   a" in r.failures[0]
    assert "last events of run" in r.failures[0] and "run.finished" in r.failures[0]
    text = report([r], [])
    assert "FAILED" in text and "0 passed, 1 failed" in text


def test_approve_answers_the_pending_check_in(tmp_path):
    (r,) = run(tmp_path, """
    test asks_a_person {
      user "refund 500"
      model calls refund { amount: 500 }
      approve by "maya"
      tool refund returns "refunded"
      model says "done"
      expect outcome answered
      expect called refund 1
      expect trace checkin.decided
    }
    """)
    assert r.passed, r.failures


def test_decline_and_paused_outcome(tmp_path):
    (r,) = run(tmp_path, """
    test paused_then_declined {
      user "refund 500"
      model calls refund { amount: 500 }
      expect outcome paused
      decline note "no"
      model says "ok, not refunded"
      expect not called refund
      expect outcome answered
    }
    """)
    assert r.passed, r.failures


def test_second_user_is_a_follow_up_in_the_same_conversation(tmp_path):
    (r,) = run(tmp_path, """
    test follow_up {
      user "hello"
      model says "hi"
      user "again"
      model says "hi again"
      expect answer == "hi again"
    }
    """)
    assert r.passed, r.failures


def test_unused_script_lines_fail(tmp_path):
    (r,) = run(tmp_path, """
    test extra {
      user "hello"
      model says "hi"
      model says "never used"
      tool lookup returns "never used"
    }
    """)
    assert not r.passed
    assert any("never used" in f or "were never used" in f for f in r.failures)
    assert any("stub for `lookup`" in f for f in r.failures)


def test_missing_reply_fails_naming_the_call(tmp_path):
    (r,) = run(tmp_path, """
    test short {
      user "find X1"
      model calls lookup { id: "X1" }
      tool lookup returns { found: false }
      expect outcome answered
    }
    """)
    assert not r.passed and "LLM call #2" in r.failures[0]


def test_k_selects_and_junit_is_xml(tmp_path):
    body = """
    test alpha_one { user "a" model says "x" }
    test beta_two { user "b" model says "y" expect answer == "nope" }
    """
    results = run(tmp_path, body, pattern="alpha")
    assert [r.name for r in results] == ["alpha_one"]
    results = run(tmp_path, body, pattern="not alpha")
    assert [r.name for r in results] == ["beta_two"]
    import xml.etree.ElementTree as ET
    root = ET.fromstring(junit(run(tmp_path, body), []))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    assert root.find("testcase/failure") is not None
    assert root.get("time") is None and root.find("testcase").get("time") is None


def test_junit_times_come_from_the_clock_passed_in(tmp_path):
    """Durations are measured only with an injected clock; each case gets its own, the suite
    their sum, and a file that does not load has none."""
    import xml.etree.ElementTree as ET
    f = write(tmp_path, 'test one { user "a" model says "x" }\ntest two { user "b" model says "y" }\n')
    (tmp_path / "bad.afp").write_text("agent { ")
    ticks = iter([10.0, 10.25, 20.0, 20.5])
    seconds: dict[str, float] = {}
    results, problems = run_files([f, tmp_path / "bad.afp"], clock=lambda: next(ticks),
                                  seconds=seconds)
    assert seconds == {f"{f}::one": 0.25, f"{f}::two": 0.5}
    root = ET.fromstring(junit(results, problems, seconds))
    assert root.get("time") == "0.750"
    assert [c.get("time") for c in root.findall("testcase")] == ["0.250", "0.500", None]


def test_a_file_with_errors_is_reported_not_raised(tmp_path):
    f = tmp_path / "broken.afp"
    f.write_text("agent { ")
    results, problems = run_files([f])
    assert results == [] and problems and "cannot load" in report(results, problems)


def test_called_counts_executions_inside_agent_backed_tools(tmp_path):
    f = tmp_path / "nested.afp"
    f.write_text(textwrap.dedent("""
    agent outer { tools = [ask_inner] }
    agent inner { tools = [search] }
    tool ask_inner { description = "ask" input { q: string } impl = agent(inner) }
    tool search { description = "search" }
    test nested {
      agent = outer
      user "go"
      model calls ask_inner { q: "x" }
      model calls search {}
      tool search returns "hit"
      model says "inner done"
      model says "outer done"
      expect called search 1
      expect called ask_inner 1
      expect answer == "outer done"
    }
    """))
    (r,), problems = run_files([f])
    assert problems == [] and r.passed, r.failures


def test_a_user_line_while_the_run_waits_on_a_check_in_fails_the_test(tmp_path):
    """The pending check-in was dropped and the follow-up ran without the conversation's
    history, and the test passed."""
    (r,) = run(tmp_path, """
    test after_pause {
      user "refund 500"
      model calls refund { amount: 500 }
      user "again"
      model says "x"
    }
    """)
    assert not r.passed
    assert "a `user` message while the run waits on a check-in" in r.failures[0]
    assert "`approve` or `decline` before the next `user` line" in r.failures[0]


def test_an_expect_before_any_user_line_names_its_place_not_a_class(tmp_path):
    (r,) = run(tmp_path, """
    test early {
      expect outcome answered
      user "hi"
      model says "x"
    }
    """)
    assert not r.passed and "ExpectOutcome" not in r.failures[0]
    assert "`expect` before any `user` message (" in r.failures[0] and "t.afp:" in r.failures[0]


def test_one_unused_reply_is_worded_in_the_singular(tmp_path):
    (r,) = run(tmp_path, """
    test extra {
      user "hi"
      model says "x"
      model says "y"
    }
    """)
    assert "1 scripted model reply was never used, the first at " in r.failures[0]
    assert "(the run made 1 LLM call)" in r.failures[0]


def test_each_failure_names_the_line_of_its_statement(tmp_path):
    """Two `expect outcome` lines failed alike, and nothing told which one (docs/cli.md: the
    failures show the `expect` that failed)."""
    f = write(tmp_path, """
    test twice {
      user "hi"
      model says "x"
      expect outcome paused
      user "again"
      model says "y"
      expect outcome paused
      decline
    }
    """)
    lines = f.read_text().splitlines()
    at = [i + 1 for i, line in enumerate(lines) if line.strip() in ("expect outcome paused", "decline")]
    (r,), _ = run_files([f])
    assert len(r.failures) == 3
    for failure, line in zip(r.failures, at):
        assert failure.splitlines()[0].endswith(f"t.afp:{line})"), failure


def _line_of(f, text: str) -> int:
    return next(i + 1 for i, line in enumerate(f.read_text().splitlines()) if line.strip() == text)


def test_unused_replies_and_stubs_name_their_lines(tmp_path):
    """Two stubs of one tool left over read as the same line twice, with no place to look."""
    f = write(tmp_path, """
    test extra {
      user "hello"
      model says "hi"
      model says "never used"
      model says "nor this"
      tool lookup returns "first"
      tool lookup fails "second"
    }
    """)
    (r,), _ = run_files([f])
    replies, first, second = r.failures
    unused, stub1, stub2 = ('model says "never used"', 'tool lookup returns "first"',
                            'tool lookup fails "second"')
    assert f"the first at {f}:{_line_of(f, unused)}" in replies
    assert f"({f}:{_line_of(f, stub1)})" in first
    assert f"({f}:{_line_of(f, stub2)})" in second


def test_a_missing_reply_names_the_line_that_started_the_run(tmp_path):
    f = write(tmp_path, """
    test short {
      user "hello"
      model says "hi"
      user "find X1"
      model calls lookup { id: "X1" }
      tool lookup returns { found: false }
    }
    """)
    (r,), _ = run_files([f])
    assert "LLM call #3" in r.failures[0]
    started = _line_of(f, 'user "find X1"')
    assert f"run of the `user` line at {f}:{started})" in r.failures[0]


def test_a_file_error_names_each_error_with_its_line(tmp_path):
    """A load error said only `t.afp: AFP406 … (and 1 more)`: no line, the others hidden."""
    f = write(tmp_path, """
    test bad {
      user "hello"
      expect route b -> a
      expect cursor nowhere
    }
    """)
    results, problems = run_files([f])
    text = report(results, problems)
    assert f"t.afp:{_line_of(f, 'expect route b -> a')}:" in text and "AFP406" in text
    assert f"t.afp:{_line_of(f, 'expect cursor nowhere')}:" in text and "AFP101" in text
    import xml.etree.ElementTree as ET
    error = ET.fromstring(junit(results, problems)).find("testcase/error")
    assert "AFP" in error.get("message") and ".afp:" in error.get("message")


def test_the_last_events_of_a_run_are_shown_once(tmp_path):
    """Three failing `expect` lines of one run repeated its last eight events three times."""
    (r,) = run(tmp_path, """
    test bad {
      user "hi"
      model says "x"
      expect outcome paused
      expect answer == "y"
      user "again"
      model says "z"
      expect outcome paused
    }
    """)
    text = "\n".join(r.failures)
    assert text.count("last events of run bad-1:") == 1
    assert text.count("last events of run bad-2:") == 1
    assert "last events of run bad-1:" in r.failures[0]


def test_a_test_that_runs_nothing_fails_naming_the_fix(tmp_path):
    """Before: `test t {}` (or one of stubs only) passed, checking nothing."""
    empty, stubs_only, ran = run(tmp_path, """
    test empty {}
    test stubs_only {
      tool refund returns "ok"
    }
    test ran {
      user "hi"
      model says "x"
    }
    """)
    assert not empty.passed and len(empty.failures) == 1
    assert "the test runs nothing (" in empty.failures[0] and "t.afp:" in empty.failures[0]
    assert "no `user` line; add `user" in empty.failures[0]
    assert not stubs_only.passed and "the test runs nothing" in stubs_only.failures[0]
    assert ran.passed


# Any character: control characters, lone surrogates, XML's own syntax, empty messages.
any_text = st.text(st.characters(blacklist_categories=()), max_size=20)


@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(st.lists(st.builds(TestResult, any_text, any_text, st.booleans(), st.lists(any_text).map(tuple),
                          st.none() | any_text), max_size=3),
       st.lists(st.builds(FileProblem, any_text, any_text), max_size=2))
def test_junit_is_well_formed_xml_whatever_the_names_and_messages_hold(results, problems):
    """Before, a file name holding a control character (`j\\x01t.afp`) made `--junit` write a
    report no XML reader opens; an empty failure message raised IndexError."""
    import xml.etree.ElementTree as ET
    text = junit(results, problems)
    text.encode("utf-8")  # (what `write_file` does: no lone surrogate left)
    root = ET.fromstring(text)
    assert root.get("tests") == str(len(results) + len(problems))
    names = [c.get("name") for c in root.findall("testcase")][:len(results)]
    assert names == [_visible(r.name) for r in results]  # (nothing else changed or lost)
