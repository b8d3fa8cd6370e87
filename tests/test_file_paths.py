"""`file(...)` reads only inside the folder of the spec that names it: a path that climbs out
(`../x`) or is absolute is AFP109 at the path, saying so, and nothing is read."""
from __future__ import annotations

from pathlib import Path

import pytest

import afp_dsl
from afp_dsl.spec_files import leaves_folder


@pytest.mark.parametrize("path", ["../x.json", "../../etc/passwd", "a/../../x", "/etc/passwd",
                                  "C:/x", "C:x", "\\\\host\\x", "..\\x", ".."])
def test_paths_outside_the_folder(path: str) -> None:
    assert leaves_folder(path)


@pytest.mark.parametrize("path", ["x.json", "./x.json", "a/b.md", "a/../x", "..x", "a..b/c"])
def test_paths_inside_the_folder(path: str) -> None:
    assert not leaves_folder(path)


def test_a_file_outside_the_folder_is_refused_and_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.json").write_text('{"type": "object"}')
    (tmp_path / "sub").mkdir()
    spec = tmp_path / "sub" / "a.afp"
    spec.write_text('tool t { description = "d" input = file("../secret.json") }\n'
                    'fact f { data = file("/etc/passwd") }\n')
    diags = afp_dsl.check(spec)
    assert [d.code for d in diags] == ["AFP109", "AFP109"], diags
    assert all("reads outside the folder of the spec" in d.message for d in diags)
    assert "move the file" in (diags[0].help or "")
    text = spec.read_text()
    assert text[diags[0].primary.span.start:diags[0].primary.span.end] == '"../secret.json"'
