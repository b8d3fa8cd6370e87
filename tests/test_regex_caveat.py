"""A regex Python compiles with a FutureWarning (`[[`, or `--`, `&&`, `~~`, `||` in a class).

Before, `afpc check` printed Python's own warning on stderr (`…/lower_values.py:369:
FutureWarning: Possible nested set at position 1` and the source line of afp it came from), and
`afp.check` raised it under `-W error`, though it never raises for bad input (tooling.md §2, §6).
Now the checker reports it as an AFP004 warning and no FutureWarning leaves afp. Also: a pattern
`re` refuses with an OverflowError (a repetition count over its limit) is an AFP004 error.
"""
from __future__ import annotations

import re
import warnings

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import afp_dsl as afp
from afp_dsl.cli import main
from afp_dsl.evaluate import compile_regex
from afp_dsl.regex_quiet import future_caveat
from afp_dsl.serde import ir_to_json

SPEC = """agent a { system = "x" graph = g }
skill x { description = "x" }
graph g {
  entry x when message matches /PATTERN/
}
"""


def spec(pattern: str) -> str:
    return SPEC.replace("PATTERN", pattern)


def test_check_reports_the_caveat_as_an_afp004_warning(tmp_path):
    path = tmp_path / "a.afp"
    path.write_text(spec("[[a]-caveat-cli]"), encoding="utf-8")
    res = CliRunner().invoke(main, ["check", str(path), "--format", "short"])
    assert res.exit_code == 0, res.output
    assert "warning[AFP004] invalid-regex" in res.stdout
    assert "possible nested set at position 1" in res.stdout
    assert "FutureWarning" not in res.stderr and ".py:" not in res.stderr
    strict = CliRunner().invoke(main, ["check", str(path), "--strict"])
    assert strict.exit_code == 1


def test_check_never_raises_it_under_warnings_as_errors():
    re.purge()  # (a pattern `re` has cached compiles without warning again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        diags = afp.check(spec("[[a]-caveat-api]"))
    assert [(d.code, d.severity.value) for d in diags] == [("AFP004", "warning")]
    assert diags[0].help and "escape" in diags[0].help


def test_a_run_matching_such_a_pattern_warns_nothing():
    """A compiled IR is loaded without the checker: its guards compile when the run needs them."""
    ir_json = ir_to_json(afp.load(spec("[[a]-caveat-run]")).ir)
    re.purge()  # as in a new process
    compile_regex.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = afp.load_ir(ir_json).agent(provider=afp.providers.mock(["ok"]))
        result = agent.run("[")
    assert result.outcome == "answered"
    assert [str(w.message) for w in caught if w.category is FutureWarning] == []


def test_future_caveat_names_python_s_reason():
    assert future_caveat("x[a&&b]") == "Possible set intersection at position 3"
    assert future_caveat(r"x[a\&\&b]") is None
    assert future_caveat("[") is None  # does not compile: AFP004 as an error says so


SCHEMA_SPEC = """agent a { system = "x" tools = [t] }
tool t {
  description = "t"
  input { q: string(pattern: "PATTERN") }
  impl = returns("ok")
}
"""


def test_a_schema_pattern_warns_nothing_when_arguments_are_checked():
    """A compiled IR's tool schema is validated at run time by jsonschema, which compiles the
    pattern itself; the demo mock also reads it to spell an argument."""
    ir_json = ir_to_json(afp.load(SCHEMA_SPEC.replace("PATTERN", "[[a]-caveat-schema")).ir)
    re.purge()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = afp.load_ir(ir_json)
        demo = program.agent(provider=afp.providers.mock()).run("hi")
        scripted = program.agent(provider=afp.providers.mock([[("t", {"q": "b"})], "x"])).run("hi")
    assert (demo.outcome, scripted.outcome) == ("answered", "answered")
    assert [str(w.message) for w in caught if w.category is FutureWarning] == []


# A pattern `re` refuses with an exception other than `re.error`: a repetition count over its
# limit is an OverflowError. Before, a redact rule holding one crashed `afpc check` (and
# `compile`, `graph`, `test`) with an internal error from the AFP403 empty-match check.
SITES = {
    "guard": SPEC,
    "redact": 'agent a { system = "x" redact = [r] }\nredact r { patterns = [/PATTERN/] }\n',
    "schema": SCHEMA_SPEC,
}
counts = st.one_of(st.integers(0, 10), st.integers(2**31 - 2, 2**70)).map(str)


@settings(deadline=None, max_examples=60, derandomize=True, database=None)
@given(st.sampled_from(sorted(SITES)), counts, st.one_of(st.none(), counts))
def test_a_repetition_count_re_refuses_is_an_afp004_error_wherever_the_pattern_stands(site, low, high):
    pattern = f"a{{{low}}}" if high is None else f"a{{{low},{high}}}"
    try:
        re.compile(pattern)
        refused = False
    except (re.error, OverflowError):
        refused = True
    diags = afp.check(SITES[site].replace("PATTERN", pattern))
    errors = [d.code for d in diags if d.severity.value == "error"]
    assert ("AFP004" in errors) == refused, (pattern, errors)
