"""`afp_dsl.paths` answers exactly as the `pathlib.Path` methods it stands in for.

Strings of slashes, dots and names (Hypothesis), and a folder holding a file, a folder, a
symlink to each, a dangling symlink, a symlink loop, a FIFO and an unreadable folder.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl import paths

pytestmark = pytest.mark.skipif(os.name != "posix", reason="elsewhere `paths` is `pathlib` itself")

SETTINGS = settings(derandomize=True, deadline=None, max_examples=500, database=None)
pieces = st.sampled_from(["/", "//", "///", ".", "..", "a", "b.afp", ".afp", "a.", "x.tar.gz", "é",
                          " ", "\x00", "\\", "a/", "./"])
texts = st.lists(pieces, max_size=7).map("".join)


def outcome(fn, *args):
    """What a call returns, or the type and text of what it raises."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - compared, not handled
        return ("raised", type(e), str(e))


@SETTINGS
@given(texts)
def test_the_pure_answers_are_pathlibs(text) -> None:
    p = paths.plain(text)
    assert p == str(Path(text))
    assert paths.posix(text) == Path(text).as_posix()
    assert paths.is_absolute(text) == Path(text).is_absolute()
    assert paths.parent(p) == str(Path(text).parent)
    assert paths.name(p) == Path(text).name
    assert paths.suffix(p) == Path(text).suffix
    assert outcome(paths.with_suffix, p, ".afp") == outcome(lambda: str(Path(text).with_suffix(".afp")))


@SETTINGS
@given(texts, texts)
def test_joining_is_pathlibs(folder, rel) -> None:
    assert paths.join(paths.plain(folder), rel) == str(Path(folder) / rel)


def test_what_is_not_text_is_refused_as_pathlib_refuses_it() -> None:
    for bad in (b"a.afp", 3, None):
        assert outcome(paths.plain, bad) == outcome(lambda: str(Path(bad)))
    assert paths.plain(Path("a//b/")) == "a/b"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "f.afp").write_text("agent a {}\n", encoding="utf-8")
    (tmp_path / "d").mkdir()
    (tmp_path / "to_f").symlink_to(tmp_path / "f.afp")
    (tmp_path / "to_d").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "x.afp").write_text("", encoding="utf-8")
    os.chmod(tmp_path / "closed", 0)
    yield tmp_path
    os.chmod(tmp_path / "closed", 0o755)


NAMES = ["f.afp", "f.afp/", "d", "d/", "to_f", "to_d", "dangling", "loop", "loop/x", "fifo",
         "closed/x.afp", "missing", "f.afp/x", "d/../f.afp", ".", "a\x00b", ""]


@pytest.mark.parametrize("rel", NAMES)
def test_the_file_system_answers_are_pathlibs(tree, rel) -> None:
    for text in (str(tree / rel) if rel else str(tree), rel):
        p = paths.plain(text)
        for ours, theirs in ((paths.is_file, Path.is_file), (paths.is_dir, Path.is_dir),
                             (paths.exists, Path.exists), (paths.is_symlink, Path.is_symlink)):
            assert outcome(ours, p) == outcome(theirs, Path(text)), (ours.__name__, text)
        assert outcome(paths.resolve, p) == outcome(lambda: str(Path(text).resolve()))


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"),
                                   OSError(5, "Input/output error"), NotADirectoryError(20, "Not a directory"),
                                   OSError(40, "Too many levels of symbolic links")])
def test_a_stat_that_fails_is_answered_as_in_pathlib(tree, monkeypatch, error) -> None:
    """Some errors mean "no" to `pathlib`, the others are raised (a folder that cannot be
    searched, as for root's files seen by a user): the same ones here."""
    def fail(*args, **kw):
        raise error

    text = str(tree / "f.afp")
    monkeypatch.setattr(os, "stat", fail)
    monkeypatch.setattr(os, "lstat", fail)
    for ours, theirs in ((paths.is_file, Path.is_file), (paths.is_dir, Path.is_dir),
                         (paths.exists, Path.exists), (paths.is_symlink, Path.is_symlink)):
        assert outcome(ours, text) == outcome(theirs, Path(text)), ours.__name__


def pathlib_real_path(path: Path) -> str:
    """`loader.real_path` as it was written with `pathlib`."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(Path(os.path.abspath(path)))


@pytest.mark.parametrize("rel", NAMES)
def test_real_path_is_the_pathlib_one(tree, rel) -> None:
    for text in (str(tree / rel) if rel else str(tree), rel, "./" + rel + "/"):
        assert outcome(paths.real_path, text) == outcome(pathlib_real_path, Path(text)), text
