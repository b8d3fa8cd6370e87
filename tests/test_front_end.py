"""The front end's public behaviour: grammar loading, API entry points, IR round trips, CLI."""
from __future__ import annotations

import json
from pathlib import Path

import lark
import pytest
from click.testing import CliRunner

import afp_dsl
from afp_dsl import ir, resources
from afp_dsl.cli import main
from afp_dsl.serde import IRFormatError, ir_from_json, ir_to_json

SPEC = '''# a refund desk
agent support {
  system = "You are the Acme support agent."
  tools = [lookup_order]
  graph = desk
  context = [tone]
}
steering tone { prompt = """
    Answer in at most
      three sentences.
""" }
tool lookup_order {
  description = "Look up an order by its id."
  input { order_id: string(pattern: "^[A-Z]{2}-[0-9]+$") "The order id", days?: integer(min: 1) = 3 }
  output { status: "found" | "missing", amount?: number, ... }
  impl = returns({ status: "found", amount: 20 })
}
skill triage { description = "Triage.", tools = [lookup_order] }
skill refunds { description = "Refunds." }
graph desk {
  entry triage when message mentions ["order", "refund"]
  route triage -> refunds on lookup_order when result.status == "found" and not (result.amount > 500) "found it"
}
'''


def test_grammar_is_lalr1_under_strict_mode() -> None:
    lark.Lark(resources.grammar_text(), parser="lalr", strict=True, propagate_positions=True)


def test_check_accepts_text_and_paths(tmp_path: Path) -> None:
    assert afp_dsl.check(SPEC) == []
    f = tmp_path / "s.afp"
    f.write_text(SPEC)
    assert afp_dsl.check(f) == [] and afp_dsl.check(str(f)) == []


def test_load_raises_compile_error_with_diagnostics() -> None:
    with pytest.raises(afp_dsl.CompileError) as e:
        afp_dsl.load("agent a { tools = [nope] }")
    assert [d.code for d in e.value.diagnostics] == ["AFP101"]
    assert "AFP101" in str(e.value)


def test_lowering_builds_the_expected_ir() -> None:
    program = afp_dsl.load(SPEC).ir
    m = program.root_module
    tool = m.get("lookup_order")
    assert isinstance(tool, ir.Tool)
    from afp_dsl.frozen import thaw
    schema = thaw(tool.input.json)
    assert schema == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$", "description": "The order id"},
            "days": {"type": "integer", "minimum": 1, "default": 3},
        },
        "required": ["order_id"],
        "additionalProperties": False,
    }
    out = thaw(tool.output.json)
    assert out["properties"]["status"] == {"type": "string", "enum": ["found", "missing"]}
    assert "additionalProperties" not in out
    assert m.get("tone").prompt.value == "Answer in at most\n  three sentences."
    route = m.get("desk").routes[0]
    assert route.label == "found it" and route.on.name == "lookup_order"
    assert isinstance(route.when, ir.And) and isinstance(route.when.items[1], ir.Not)
    assert m.comments[0].text == "# a refund desk"


def test_spans_point_at_the_smallest_token() -> None:
    program = afp_dsl.load(SPEC).ir
    m = program.root_module
    ref = m.get("support").tools[0]
    assert m.source[ref.span.start:ref.span.end] == "lookup_order"


def test_ir_json_round_trips_and_rejects_garbage() -> None:
    program = afp_dsl.load(SPEC).ir
    text = ir_to_json(program)
    assert ir_from_json(text) == program
    assert ir_to_json(ir_from_json(text)) == text
    for bad in ("{}", "[]", "not json", json.dumps({"afp_ir": 1, "program": {"root": 3}})):
        with pytest.raises(IRFormatError):
            ir_from_json(bad)


def test_cli_check_exit_codes_and_formats(tmp_path: Path) -> None:
    good, bad, warn = tmp_path / "good.afp", tmp_path / "bad.afp", tmp_path / "sub" / "x.afp"
    good.write_text(SPEC)
    bad.write_text("agent a { tools = [nope] }\n")
    warn.parent.mkdir()
    warn.write_text(SPEC)
    runner = CliRunner()
    assert runner.invoke(main, ["check", str(good)]).exit_code == 0
    r = runner.invoke(main, ["check", str(bad), "--format", "short"])
    assert r.exit_code == 1 and "error[AFP101] unknown-name" in r.output
    r = runner.invoke(main, ["check", str(tmp_path), "--format", "json"])
    assert r.exit_code == 1
    payload = json.loads(r.stdout)
    assert [d["code"] for d in payload] == ["AFP101"]
    r = runner.invoke(main, ["check", str(bad), "--format", "github"])
    assert r.stdout.startswith("::error ")
    r = runner.invoke(main, ["check", str(bad), "--format", "sarif"])
    assert json.loads(r.stdout)["version"] == "2.1.0"
    assert runner.invoke(main, ["check", str(tmp_path / "missing.afp")]).exit_code == 1
    assert runner.invoke(main, ["check", str(good), "--format", "nope"]).exit_code == 2


def test_cli_compile_writes_loadable_ir(tmp_path: Path) -> None:
    spec = tmp_path / "s.afp"
    spec.write_text(SPEC)
    out = tmp_path / "ir.json"
    r = CliRunner().invoke(main, ["compile", str(spec), "-o", str(out)])
    assert r.exit_code == 0, r.output
    loaded = afp_dsl.load_ir(out)
    assert loaded.ir == afp_dsl.load(spec).ir
    bad = tmp_path / "bad.afp"
    bad.write_text("agent a {")
    r = CliRunner().invoke(main, ["compile", str(bad)])
    assert r.exit_code == 1 and "AFP001" in r.output


def test_cli_explain() -> None:
    r = CliRunner().invoke(main, ["explain", "AFP101"])
    assert r.exit_code == 0 and "unknown-name" in r.output
    assert CliRunner().invoke(main, ["explain", "unknown-name"]).exit_code == 0
    assert CliRunner().invoke(main, ["explain", "AFP999"]).exit_code == 2


def test_internal_errors_are_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "s.afp"
    spec.write_text(SPEC)

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr("afp_dsl.cli.analyse", boom)
    monkeypatch.delenv("AFPC_DEBUG", raising=False)
    r = CliRunner().invoke(main, ["check", str(spec)])
    assert r.exit_code == 2
    assert "internal error" in r.output and "Traceback" not in r.output
    monkeypatch.setenv("AFPC_DEBUG", "1")
    r = CliRunner().invoke(main, ["check", str(spec)])
    assert r.exit_code == 2
    assert "internal error" in r.output and "Traceback" in r.output and "kaboom" in r.output


def test_serde_tag_collides_with_no_ir_field() -> None:
    import attrs

    from afp_dsl.serde import CLASSES, TAG
    clashes = [name for name, cls in CLASSES.items() if TAG in {f.name for f in attrs.fields(cls)}]
    assert not clashes


def test_conditions_lower_calls_and_reject_data() -> None:
    spec = '''tool t { description = "t" }
skill s { description = "s" }
instruction i { prompt = "p", when = returned(t) and not active(s) }
instruction j { prompt = "p", when = last.result == { a: 1 } }
'''
    from afp_dsl.loader import load_program
    program, diags = load_program(text=spec, name="c.afp")
    i = program.root_module.get("i")
    assert isinstance(i.when, ir.And) and isinstance(i.when.items[0], ir.Call)
    assert i.when.items[0].arg.name == "t" and isinstance(i.when.items[1].item, ir.Call)
    assert [d.code for d in diags] == ["AFP106"]
    assert ir_from_json(ir_to_json(program)) == program


def test_statements_accept_qualified_names() -> None:
    spec = '''import "./other.afp" as other
graph g { entry other.s  route other.s -> other.s on other.t }
'''
    from afp_dsl.loader import load_program
    program, _ = load_program(text=spec, name="q.afp")
    g = program.root_module.get("g")
    assert g.routes[0].on.alias == "other" and g.routes[0].on.name == "t"
    assert g.entries[0].skill.alias == "other"


@pytest.mark.parametrize("attr, help_text", [
    ("max_iterations = 8.0", "write `8`"),
    ("max_iterations = 1e3", "write `1000`"),
    ('continuity = "Conversation"', 'did you mean `"conversation"`?'),
    ("tool_scope = active", 'write `"active"` in quotes'),
])
def test_a_near_miss_attribute_value_names_the_fix(attr: str, help_text: str) -> None:
    [d] = afp_dsl.check(f"agent a {{ {attr} }}\n")
    assert d.code == "AFP106" and d.help == help_text


def test_lark_s_tables_are_cached_only_in_a_folder_no_one_else_can_write(tmp_path, monkeypatch):
    """Before: `cache=True`, lark's default, kept them as `<tmp>/.lark_cache_<user>_<sha>.tmp`,
    a name anyone can work out in the shared temporary folder, and lark unpickles that file: a
    local user could plant one and run code as whoever next checks a spec with a syntax error."""
    import os
    import tempfile

    from afp_dsl.parser import cache_file
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cache_file()
    assert isinstance(path, str) and Path(path).parent == tmp_path / "afp"
    assert not path.startswith(tempfile.gettempdir() + os.sep + ".lark")
    assert (tmp_path / "afp").stat().st_mode & 0o077 == 0
    (tmp_path / "afp").chmod(0o777)  # writable by others: no cache rather than theirs
    assert cache_file() is False
    (tmp_path / "afp").rmdir()
    (tmp_path / "afp").symlink_to(tempfile.gettempdir())  # a link to a shared folder: no cache
    assert cache_file() is False
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    (tmp_path / "file").write_text("")  # no folder can be made: no cache, no error
    assert cache_file() is False
