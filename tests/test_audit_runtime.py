"""Runtime and test-runner conformance found by an audit of semantics §1-§11 and language §5.2,
§5.8: each test failed before the fix it names."""
from __future__ import annotations

import textwrap

from afp_dsl.testing import run_files

AGENTS = """
agent outer { system = "OUT" tools = [helper] }
agent inner { system = "IN" tools = [pay, deeper] }
agent deep { system = "D" tools = [pay] }
tool helper {
  description = "Ask the helper"
  input { question: string }
  impl = agent(inner)
  keep_runs = KEEP
}
tool deeper { description = "Ask deeper" input { question: string } impl = agent(deep) keep_runs = 0 }
tool pay { description = "Pay" input { amount: number } impl = returns("paid") }
"""


def run(tmp_path, body: str, keep: int = 0):
    f = tmp_path / "t.afp"
    f.write_text(AGENTS.replace("KEEP", str(keep)) + textwrap.dedent(body))
    results, problems = run_files([f])
    assert problems == []
    return results


# ---------------------------------------------------------------- language §5.8 + §5.2
def test_expect_called_counts_inner_executions_that_keep_runs_dropped(tmp_path) -> None:
    """`expect called` counts executions; `keep_runs` bounds what `why` keeps, not the count
    (before: an inner run dropped by `keep_runs = 0` counted none of its tools)."""
    (r,) = run(tmp_path, """
    test counted {
      agent = outer
      user "pay 20"
      model calls helper { question: "pay 20" }
      model calls pay { amount: 20 }
      model says "inner paid"
      model says "outer done"
      expect called pay 1
      expect called helper 1
      expect trace run.finished
    }
    """)
    assert r.passed, r.failures


def test_expect_called_counts_every_inner_run_past_the_keep_runs_bound(tmp_path) -> None:
    (r,) = run(tmp_path, """
    test two_inner_runs {
      agent = outer
      user "pay twice"
      model calls helper { question: "a" }, helper { question: "b" }
      model calls pay { amount: 20 }
      model says "first paid"
      model calls pay { amount: 30 }
      model says "second paid"
      model says "outer done"
      expect called pay 2
      expect called helper 2
    }
    """, keep=1)
    assert r.passed, r.failures


def test_expect_called_and_trace_see_nested_inner_runs(tmp_path) -> None:
    (r,) = run(tmp_path, """
    test nested {
      agent = outer
      user "go deep"
      model calls helper { question: "a" }
      model calls deeper { question: "b" }
      model calls pay { amount: 20 }
      model says "deep paid"
      model says "inner done"
      model says "outer done"
      expect called pay 1
      expect called deeper 1
      expect answer == "outer done"
    }
    """)
    assert r.passed, r.failures


def test_inner_counts_belong_to_their_own_run(tmp_path) -> None:
    """A follow-up run does not count the executions of the earlier run's inner runs."""
    (r,) = run(tmp_path, """
    test follow_up {
      agent = outer
      user "pay"
      model calls helper { question: "a" }
      model calls pay { amount: 20 }
      model says "paid"
      model says "done"
      expect called pay 1
      user "and now?"
      model says "nothing more"
      expect not called pay
      expect not called helper
    }
    """)
    assert r.passed, r.failures


def test_a_reply_missing_inside_an_inner_run_names_what_that_model_was_asked(tmp_path) -> None:
    """Language §5.8: the failure names the LLM call number and what the model was asked — for
    the call the inner run made (before: only the outer run's later call was explained)."""
    (r,) = run(tmp_path, """
    test runs_out_inside {
      agent = outer
      user "pay 20"
      model calls helper { question: "pay 20" }
      model calls pay { amount: 20 }
    }
    """)
    assert not r.passed
    head = r.failures[0].splitlines()[0]
    assert "no model reply for LLM call #3" in head
    assert "made by the inner run runs_out_inside-1/call-1-1; the model was asked: a tool " \
           "result 'paid'; the run ended with:" in head
