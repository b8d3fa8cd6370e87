"""Locate the files shipped with the package: the grammar and the standard library.

Role:       the only place that knows where `grammar/` and `stdlib/` live, installed or in a checkout.
Invariants: an installed wheel carries them under `afp_dsl/_data/` (see pyproject); a source
            checkout reads the top-level folders.
"""
from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def data_dir(name: str) -> Path:
    """`grammar` or `stdlib`: the folder inside the installed package, else the checkout's.
    Plain paths, not `importlib.resources`: the package is always installed as files (a wheel or
    a checkout), and that module's imports cost every `afpc` start a few milliseconds."""
    here = Path(__file__).resolve().parent
    packaged = here / "_data" / name
    if packaged.is_dir():
        return packaged
    return here.parent / name


def grammar_text() -> str:
    return (data_dir("grammar") / "afp.lark").read_text(encoding="utf-8")


def stdlib_path(name: str) -> Path:
    """The file of `std/NAME` (it may not exist)."""
    return data_dir("stdlib") / f"{name}.afp"


def stdlib_names() -> list[str]:
    d = data_dir("stdlib")
    return sorted(p.stem for p in d.glob("*.afp")) if d.is_dir() else []
