"""Audit 25, the tool pipeline (semantics §7, §8, §10): argument problems, policy ordering, resume."""
from __future__ import annotations

import pytest
from interp_support import call, make, payloads, tool_texts

RAW = """
agent g { tools = [t] }
tool t { description = "t"
  input = { type: "object", properties: {
    m: { type: "integer", multipleOf: 5 },
    u: { type: "array", uniqueItems: true },
    o: { type: "object", minProperties: 2 },
    d: { type: "object", dependentRequired: { a: ["b"] } },
    one: { oneOf: [{ type: "string" }, { type: "integer" }] },
    two: { oneOf: [{ type: "number" }, { type: "integer" }] },
    any: { anyOf: [{ type: "string", minLength: 3 }, { type: "integer" }] },
    both: { anyOf: [{ type: "string", minLength: 5 }, { type: "string", pattern: "^x" }] },
    n: { not: { type: "string" } },
    c: { type: "array", contains: { type: "integer" }, minContains: 2 },
    pn: { type: "object", propertyNames: { pattern: "^[a-z]+$" } },
    ue: { type: "object", properties: { a: {} }, unevaluatedProperties: false } } }
}
"""

BAD = {"m": 7, "u": [1, 1], "o": {"a": 1}, "d": {"a": "sekrit-1"}, "one": 1.5, "two": 3,
       "any": "ab", "both": "ab", "n": "sekrit-2", "c": [1, "sekrit-3"], "pn": {"A1": 1},
       "ue": {"a": 1, "zz": "sekrit-4"}}


@pytest.mark.parametrize("field, line", [
    ("m", "m: expected a multiple of 5"),
    ("u", "u: expected items that are all different"),
    ("o", "o: expected at least 2 fields"),
    ("d", "d.b: required when `a` is present"),
    ("one", "one: expected string or integer"),
    ("two", "two: expected exactly one alternative of `oneOf` to match; more than one did"),
    ("any", "any: expected at least 3 characters"),
    ("both", "both: expected at least 5 characters or expected a string matching /^x/"),
    ("n", "n: expected anything but string"),
    ("c", "c: expected at least 2 items matching its `contains` schema"),
    ("pn", "pn: field names: expected a string matching /^[a-z]+$/"),
    ("ue", "ue.zz: not an allowed field"),
])
def test_every_keyword_says_what_was_expected(field, line):
    """§7.3: each problem reads `path: what was expected`, for the whole of JSON Schema 2020-12
    (multipleOf, uniqueItems, anyOf/oneOf, not, contains, dependentRequired, ... read `does not
    satisfy `multipleOf``, which says nothing the model can act on); never the values."""
    ran: list = []
    agent, prov = make(RAW, [call("t", **{field: BAD[field]}), "ok"],
                       tools={"t": lambda **kw: ran.append(kw) or "x"})
    r = agent.run("hi")
    text = tool_texts(prov.requests[1])[0]
    assert ran == [] and payloads(r, "tool.returned")[0]["status"] == "invalid"
    assert f"- {line}\n" in text, text
    assert "sekrit" not in text and "does not satisfy" not in text


CHECKED = """
agent g { tools = [t] }
tool t { description = "t" check_in = true }
"""


@pytest.mark.parametrize("fields", [{"approved": "no"}, {"approved": 1}, {"approved": True, "checkin": 0},
                                    {"approved": True, "by": 5}, {"approved": False, "note": ["x"]}])
def test_a_hand_built_decision_that_is_not_one_raises_and_nothing_runs(fields):
    """§10: anything that is not a decision raises `ResumeDecisionError` and the tool never runs;
    `Decision(id, "no")` (public) approved, since "no" is truthy. The check-in stays open for a
    real decision."""
    import afp_dsl as afp
    ran: list = []
    agent, prov = make(CHECKED, [call("t"), "ok"], tools={"t": lambda **kw: ran.append(1) or "x"})
    r = agent.run("hi")
    with pytest.raises(afp.ResumeDecisionError, match="is not one `approve`/`decline` makes"):
        agent.resume(r.checkpoint, afp.Decision(**{"checkin": r.checkin.id, **fields}))
    assert ran == []
    r2 = agent.resume(r.checkpoint, afp.approve(r.checkin))
    assert r2.outcome == "answered" and ran == [1]


REWRITING = """
agent g { tools = [t] policies = [h, q, r] }
tool t { description = "t" input { n: integer } }
policy h { impl = python("audit25_pipe_host:to_seven") }
policy q { before t { ask when args.n == 7 because "seven?" } }
policy r { before t { deny when args.n > 100 because "too many" } }
"""


def _host_module(tmp_path, monkeypatch):
    (tmp_path / "audit25_pipe_host.py").write_text(
        "import afp_dsl\n"
        "def to_seven(ctx):\n"
        "    if ctx['moment'] == 'before':\n"
        "        return afp_dsl.rewrite({**ctx['args'], 'n': 7}, 'n is seven')\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize("change", [
    lambda ci: ci.update(args={"n": 99999}),  # what the check-in goes on with (shown: n = 7)
    lambda ci: ci.update(link=5),  # continue after a later link: `r` would never run
    lambda ci: ci.update(source="tool"),  # skip the rest of the chain and validation
])
def test_a_checkpoint_whose_check_in_changed_raises_and_nothing_runs(tmp_path, monkeypatch, change):
    """§10 "once, for exactly the call shown": the person approved `n = 7` (the arguments after
    the rewrite, in the check-in); a checkpoint whose check-in was changed to go on with other
    arguments, or after another link, ran the changed call (only the model's arguments were
    fingerprinted). The real checkpoint can still be decided once."""
    import copy
    import afp_dsl as afp
    _host_module(tmp_path, monkeypatch)
    ran: list = []
    agent, prov = make(REWRITING, [call("t", n=1), "ok"], tools={"t": lambda **kw: ran.append(kw) or "x"})
    r = agent.run("hi")
    assert r.paused and r.checkin.args == {"n": 7}
    data = copy.deepcopy(r.checkpoint.data)
    change(data["state"]["pending"]["checkin"])
    with pytest.raises(afp.ResumeDecisionError, match="call changed"):
        agent.resume(data, afp.approve(r.checkin))
    assert ran == []
    r2 = agent.resume(r.checkpoint, afp.approve(r.checkin))
    assert r2.outcome == "answered" and ran == [{"n": 7}]


SKILLED = """
agent g { skills = [a, b] tools = [t] }
skill a { description = "a" body = "A" }
skill b { description = "b" body = "B" }
tool t { description = "t" }
"""


def test_a_plain_pick_is_accepted_without_building_a_validator(monkeypatch):
    """§7.3 "a cached validator per tool": every `read_skill` call built the menu's description
    and a fresh JSON Schema validator, then ran it (about 0.4 ms a pick); a pick whose `id` names
    a skill is what that schema accepts, so only other picks are checked in full."""
    from afp_dsl import toolcall_builtins as bi

    def boom(*a, **kw):
        raise AssertionError("validated a plain pick")
    monkeypatch.setattr(bi, "arg_problems", boom)
    agent, prov = make(SKILLED, [call("read_skill", id="a", extra=1), "ok"])
    r = agent.run("hi")
    assert payloads(r, "tool.returned")[0]["status"] == "success"


@pytest.mark.parametrize("args, line", [({"id": "zz"}, '- id: expected one of "a", "b"'),
                                        ({"id": 3}, "- id: expected string"),
                                        ({}, "- id: required but missing")])
def test_a_pick_that_is_not_plain_is_still_explained(args, line):
    agent, prov = make(SKILLED, [[("read_skill", args)], "ok"])
    r = agent.run("hi")
    assert line in tool_texts(prov.requests[1])[0]
    assert payloads(r, "tool.returned")[0]["status"] == "invalid"


ORDER = """
agent g { tools = [t, ci, f] policies = [p] }
tool t { description = "t" input { n: integer } }
tool ci { description = "ci" input { n: integer } check_in = true }
tool f { description = "f" }
policy p {
  before t { deny when tool == "t" because "t is off" }
  after f { deny when status == "failure" because "failures stay private" }
}
"""


def _ordered(script):
    ran: list = []

    def boom(**kw):
        raise RuntimeError("disk on fire")
    agent, prov = make(ORDER, [script, "ok"],
                       tools={"t": lambda **kw: ran.append(kw), "ci": lambda **kw: ran.append(kw),
                              "f": boom})
    r = agent.run("hi")
    return r, tool_texts(prov.requests[1])[0], ran


def test_a_before_deny_wins_over_invalid_arguments():
    """§7: policies `before` (stage 2) come before argument validation (stage 3)."""
    r, text, ran = _ordered(call("t", n="many"))
    assert text == "t is off" and ran == [] and not payloads(r, "tool.args_invalid")
    assert payloads(r, "tool.returned")[0]["status"] == "denied"


def test_invalid_arguments_win_over_the_tools_check_in():
    """§7: validation (stage 3) comes before `check_in` (stage 4): no pause for a bad call."""
    r, text, ran = _ordered(call("ci", n="many"))
    assert r.outcome == "answered" and text.startswith("Invalid arguments for tool `ci`")
    assert payloads(r, "tool.returned")[0]["status"] == "invalid"


def test_an_after_deny_on_a_failure_replaces_what_the_model_reads_and_keeps_the_error():
    """§7.8: `after` runs for a call that raised too; its deny replaces what the model reads,
    while the record keeps the real result."""
    r, text, ran = _ordered(call("f"))
    (ret,) = payloads(r, "tool.returned")
    assert text == "failures stay private"
    assert ret["result"] == {"error": "disk on fire"} and ret["executed"] is True
    assert ret["status"] == "denied" and ret["read"] == "failures stay private"


def test_a_binding_to_a_missing_attribute_names_the_attribute_not_the_module(tmp_path, monkeypatch):
    """§7.5: a `python("m:f")` whose module imports but has no `f` told the user to make `m`
    importable (install it, or fix PYTHONPATH), which it already is."""
    (tmp_path / "audit25_pipe_tools.py").write_text("def there(**kw):\n    return 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = 'agent g { tools = [t] }\ntool t { description = "t" impl = python("audit25_pipe_tools:gone") }'
    agent, prov = make(spec, [call("t"), "ok"])
    r = agent.run("hi")
    assert r.outcome == "error"
    assert "module `audit25_pipe_tools` has no `gone`" in r.error and "PYTHONPATH" not in r.error


def test_problems_come_in_the_order_the_schema_declares_its_fields():
    """§7.3: problems were sorted as text, so `f10` came before `f2` and the list read in no
    order the model was shown; now the schema's order, then undeclared fields by name."""
    fields = "\n".join(f"  f{i}: integer" for i in (3, 10, 2, 1))
    spec = f'agent g {{ tools = [t] }}\ntool t {{ description = "t" input {{\n{fields}\n  ...\n}} }}'
    agent, prov = make(spec, [call("t", f1="x", f2="x", f10="x", f3="x"), "ok"],
                       tools={"t": lambda **kw: "x"})
    (bad,) = payloads(agent.run("hi"), "tool.args_invalid")
    assert bad["problems"] == [f"f{i}: expected integer" for i in (3, 10, 2, 1)]
