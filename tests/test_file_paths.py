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


@pytest.mark.parametrize("name,make,says", [
    ("gone.json", None, "cannot read file `gone.json`: no such file"),
    ("dir", lambda p: p.mkdir(), "cannot read file `dir`: it is a folder"),
    ("bin.json", lambda p: p.write_bytes(b"\xff\x00"),
     "cannot read file `bin.json`: it is not UTF-8 text (byte 0)"),
    ("", None, '`file("")` names no file'),
])
def test_a_file_that_cannot_be_read_is_named_with_the_reason(tmp_path: Path, name, make, says) -> None:
    """Before: every case said only "cannot read file `X`", labelled "no such file, or not
    readable UTF-8 text" (also for a folder), and `file("")` read the spec's own folder."""
    if make is not None:
        make(tmp_path / name)
    spec = tmp_path / "a.afp"
    spec.write_text(f'fact f {{ data = file("{name}") }}\n', encoding="utf-8")
    diags = afp_dsl.check(spec)
    assert [(d.code, d.message) for d in diags] == [("AFP109", says)]
