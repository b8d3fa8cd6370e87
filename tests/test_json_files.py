"""`file(...)` schemas that are not JSON: a schema file is AFP301 invalid-schema naming the file
and where the JSON breaks (it was AFP109 file-not-found). A fact's data file is its text, whatever
its name (language.md §3: "text for `body`, `prompt`, `data`; JSON for a schema")."""
from __future__ import annotations

from pathlib import Path

import afp_dsl


def _spec(tmp_path: Path, content: str, use: str) -> list:
    (tmp_path / "s.json").write_text(content)
    spec = tmp_path / "a.afp"
    spec.write_text(use + "\n")
    return afp_dsl.check(spec)


def test_a_schema_file_that_is_not_json_is_an_invalid_schema(tmp_path: Path) -> None:
    diags = _spec(tmp_path, '{\n  "type": "object",\n  "properties": {,}\n}\n',
                  'tool t { description = "d" input = file("s.json") }')
    assert [d.code for d in diags] == ["AFP301"], diags
    d = diags[0]
    assert d.message.startswith("schema file `s.json` is not valid JSON")
    assert "at line 3, column 18" in d.message
    assert any('"properties": {,}' in n for n in d.notes)


def test_a_data_file_is_its_text_whatever_its_name(tmp_path: Path) -> None:
    """Before, a data file named `.json` was parsed, then shown re-serialised with its keys
    sorted (and one that did not parse was AFP109); the model reads the file as written."""
    from afp_dsl.effects import Effects, counter_ids
    from afp_dsl.providers import mock
    text = '{"plan": "Pro",\n "name": "Maya"}\n'
    for content in (text, "not json"):
        assert _spec(tmp_path, content, 'fact f { data = file("s.json") }') == []
    (tmp_path / "s.json").write_text(text)
    (tmp_path / "a.afp").write_text('agent a {\n  system = "S"\n  context = [f]\n}\n'
                                    'fact f { data = file("s.json") }\n')
    program = afp_dsl.load(tmp_path / "a.afp")
    seen = []

    class Seeing(type(mock(["ok"]))):
        def complete(self, request):
            seen.append(request.system)
            return super().complete(request)
    program.agent(provider=Seeing(["ok"]), effects=Effects(run_ids=counter_ids("r"))).run("hi")
    assert seen == ["S\n\n" + text], seen  # (the file as written, its last line break too)


def test_an_invalid_schema_file_is_named_in_the_message(tmp_path: Path) -> None:
    diags = _spec(tmp_path, '{"type": "objct"}', 'tool t { description = "d" output = file("s.json") }')
    assert [d.code for d in diags] == ["AFP301"], diags
    assert "(file `s.json`)" in diags[0].message
