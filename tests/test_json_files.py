"""`file(...)` schemas and data that are not JSON: a schema file is AFP301 invalid-schema naming
the file and where the JSON breaks (it was AFP109 file-not-found); a data file stays AFP109,
with the same place."""
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


def test_a_data_file_that_is_not_json_says_where_it_breaks(tmp_path: Path) -> None:
    diags = _spec(tmp_path, "not json", 'fact f { data = file("s.json") }')
    assert [d.code for d in diags] == ["AFP109"], diags
    assert "is not valid JSON: Expecting value at line 1, column 1" in diags[0].message


def test_an_invalid_schema_file_is_named_in_the_message(tmp_path: Path) -> None:
    diags = _spec(tmp_path, '{"type": "objct"}', 'tool t { description = "d" output = file("s.json") }')
    assert [d.code for d in diags] == ["AFP301"], diags
    assert "(file `s.json`)" in diags[0].message
