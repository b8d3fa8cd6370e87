"""Locate the files shipped with the package: the grammar and the standard library.

Role:       the only place that knows where `grammar/` and `stdlib/` live, installed, in a
            checkout, or inside a zip (tooling.md §1: loaded through `importlib.resources`).
Invariants: an installed wheel carries them under `afp_dsl/_data/` (see pyproject); a source
            checkout reads the top-level folders; when neither folder is on disk (a zip import)
            the packaged folder is read through `importlib.resources` and unpacked once into a
            temporary folder (removed at exit), so callers always get plain files.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


@functools.cache
def data_dir(name: str) -> Path:
    """`grammar` or `stdlib`: the folder inside the installed package, else the checkout's, else
    (no folder on disk: a zip import) the package's resource, unpacked. The plain paths come
    first: `importlib.resources` costs every `afpc` start a few milliseconds, so it is imported
    only when they are missing. (`pathlib` is imported here too: a check without stdlib imports
    never needs it.)"""
    from pathlib import Path
    here = Path(__file__).resolve().parent
    for folder in (here / "_data" / name, here.parent / name):
        if folder.is_dir():
            return folder
    return _unpacked(name) or here.parent / name


def _unpacked(name: str) -> Path | None:
    """The packaged `_data/NAME` read through `importlib.resources`, copied to a temporary
    folder; None when the package has no such resource."""
    from importlib.resources import files
    try:
        source = files(__package__) / "_data" / name
        if not source.is_dir():
            return None
    except (OSError, ValueError, TypeError, ModuleNotFoundError):
        return None
    import atexit
    import shutil
    import tempfile
    from pathlib import Path
    target = Path(tempfile.mkdtemp(prefix=f"afp-{name}-"))
    atexit.register(shutil.rmtree, target, True)
    _copy(source, target)
    return target


def _copy(source: Any, target: Path) -> None:
    """Copy a resource folder (a `Traversable`) into `target`, recursively."""
    for entry in source.iterdir():
        if entry.is_dir():
            (target / entry.name).mkdir()
            _copy(entry, target / entry.name)
        else:
            (target / entry.name).write_bytes(entry.read_bytes())


def grammar_text() -> str:
    return (data_dir("grammar") / "afp.lark").read_text(encoding="utf-8")


def stdlib_path(name: str) -> Path:
    """The file of `std/NAME` (it may not exist)."""
    return data_dir("stdlib") / f"{name}.afp"


def stdlib_names() -> list[str]:
    d = data_dir("stdlib")
    return sorted(p.stem for p in d.glob("*.afp")) if d.is_dir() else []
