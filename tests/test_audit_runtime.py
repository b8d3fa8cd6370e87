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


# ---------------------------------------------------------------- language §5.2: redaction joined
SECRET_INNER = """
agent outer { system = "OUT" tools = [helper] }
agent inner { system = "IN" tools = [vault] redact = [tokens] }
tool helper { description = "Ask the helper" input { question: string } impl = agent(inner) }
tool vault { description = "Read the vault" impl = returns("the token is tok-abcdef123") }
redact tokens { patterns = [/tok-[a-z0-9]{9}/] }
"""


def _outer_run(script: list):
    import afp_dsl as afp
    from afp_dsl.effects import Effects
    seen: list = []
    provider = afp.providers.mock(script)
    complete = provider.complete

    def spy(request):
        seen.append(request)
        return complete(request)

    provider.complete = spy
    agent = afp.load(SECRET_INNER).agent("outer", effects=Effects(provider=provider))
    return agent.run("what is the token?"), seen


def test_a_secret_the_inner_agents_pattern_finds_is_scrubbed_from_the_outer_records() -> None:
    """The inner agent's own rule keeps its secret out of the outer run's records too (before:
    the outer `tool.returned` and `run.finished` held the token the inner trace redacted)."""
    import json
    result, seen = _outer_run([[("helper", {"question": "token?"})], [("vault", {})],
                               "It is tok-abcdef123.", "The helper says: tok-abcdef123"])
    assert result.outcome == "answered"
    assert result.answer == "The helper says: tok-abcdef123"  # (the caller gets the raw answer)
    assert "tok-abcdef123" in seen[-1].messages[-1].content  # (and the outer model reads it)
    recorded = json.dumps([e.to_dict() for e in result.trace])
    assert "tok-abcdef123" not in recorded
    returned = [e for e in result.trace if e.kind == "tool.returned"][0]
    assert returned.payload["result"] == "It is [REDACTED]."
    (applied,) = [e for e in result.trace if e.kind == "redaction.applied"]
    assert applied.payload["counts"] == {"tokens": 2}
    inner = json.dumps([e.to_dict() for e in result.inner["helper"].get("call-1-1")])
    assert "tok-abcdef123" not in inner


def test_an_inner_pause_shows_the_outer_run_its_arguments_scrubbed_by_the_inner_patterns() -> None:
    """A pause inside surfaces as the outer run's: its check-in (recorded by the outer run) is
    redacted by the inner agent's rules too, as the inner run's own record of it is."""
    import json
    import afp_dsl as afp
    from afp_dsl.effects import Effects
    spec = SECRET_INNER.replace('impl = returns("the token is tok-abcdef123")',
                                'input { text: string } check_in = true impl = returns("ok")')
    provider = afp.providers.mock([[("helper", {"question": "store it"})],
                                   [("vault", {"text": "keep tok-abcdef123"})]])
    result = afp.load(spec).agent("outer", effects=Effects(provider=provider)).run("store it")
    assert result.outcome == "paused"
    assert result.checkin.args == {"text": "keep [REDACTED]"}
    assert "tok-abcdef123" not in json.dumps([e.to_dict() for e in result.trace])


# ---------------------------------------------------------------- language §5.8: built-ins
BUILTINS = """
agent a { skills = [p, q] graph = g policies = [pol] }
tool s1 { description = "S1" impl = returns("one") }
skill p { description = "P" tools = [s1] steps { s1 "first" } }
skill q { description = "Q" }
skill r { description = "R" }
skill z { description = "Z" }
graph g { entry r  route z -> r }
policy pol {
  after read_skill { deny when args.id == "p" because "not p" }
  after skip_step { deny when true because "no skip" }
  after * { deny when tool == "read_skill" and args.id == "q" because "not q" }
}
"""


def test_an_accepted_built_in_call_an_after_link_denied_still_counts(tmp_path) -> None:
    """`expect called` counts a built-in's accepted calls; an `after` deny replaces what the
    model reads while the pick stands (before: such a call counted 0). A skip an `after` link
    denies is not applied (semantics §5: denials never advance), so it is not counted."""
    f = tmp_path / "b.afp"
    f.write_text(BUILTINS + textwrap.dedent("""
    test after_denied {
      user "go"
      model calls read_skill { id: "p" }, read_skill { id: "z" }
      model calls skip_step { reason: "not needed" }
      model calls read_skill { id: "q" }
      model says "done"
      model says "done, step 1 not run"
      expect called read_skill 2
      expect called skip_step 0
    }
    """))
    (r,), problems = run_files([f])
    assert problems == [] and r.passed, r.failures



# ---------------------------------------------------------------- semantics §2: a failing `when`
def test_a_text_test_on_a_missing_path_says_the_path_does_not_exist() -> None:
    """A `when` that reads a path the run does not have is false with that reason, for
    `matches` and `mentions` as for comparisons (before: "`matches` needs a string, got null")."""
    import afp_dsl as afp
    spec = """
    agent a { tools = [t] context = [i1, i2, i3] }
    tool t { description = "T" impl = returns({ s: "x" }) }
    instruction i1 { prompt = "I1" when = last.result.note mentions "x" }
    instruction i2 { prompt = "I2" when = last.result.note matches /x/ }
    instruction i3 { prompt = "I3" when = last.result.s matches /x/ }
    """
    agent = afp.load(textwrap.dedent(spec)).agent(provider=afp.providers.mock([[("t", {})], "done"]))
    composed = [e for e in agent.run("go").trace if e.kind == "context.composed"]
    skipped = {s["name"]: s["conditions"][0] for s in composed[1].payload["skipped"]}
    assert skipped["i1"]["reason"] == "`last.result.note` does not exist"
    assert skipped["i2"]["reason"] == "`last.result.note` does not exist"
    assert skipped["i1"]["actual"] is None and skipped["i1"]["passed"] is False
    assert [p["name"] for p in composed[1].payload["pieces"]] == ["i3"]
