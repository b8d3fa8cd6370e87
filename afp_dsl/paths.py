"""File paths as the strings `pathlib.Path` would hold, for the front end's path handling.

Role:       `loader` and `afpc check` work on these strings, with `pathlib.Path`'s answers.
            Speed: importing `pathlib` (and the `urllib.parse` and `ipaddress` it imports) is
            ≈ 3 % of a cold `afpc check` of a small spec; only folders and stdlib imports need it.
Invariants: on POSIX each function answers exactly as the `pathlib.Path` method it names
            (same string, same result, same exception; `tests/test_paths.py` compares them);
            anything else (another OS, a path that is not text, an edge `pathlib` refuses) is
            handed to `pathlib` itself.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Any

_POSIX = os.name == "posix"
# `pathlib`'s `_IGNORED_ERRNOS`: a `stat` failing so means "no" (any other error is raised).
_NOT_THERE = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _path(p: Any) -> Any:
    from pathlib import Path
    return Path(p)


def plain(path: Any) -> str:
    """`str(Path(path))`: repeated slashes and `.` parts dropped, no trailing slash, `//` kept
    as a root (POSIX), "." for nothing."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not _POSIX or not isinstance(text, str):
        return str(_path(path))  # (and its TypeError for anything but text)
    text = str(text)
    root = ""
    if text.startswith("/"):
        rest = text.lstrip("/")
        root = "//" if len(text) - len(rest) == 2 else "/"
        text = rest
    parts = [p for p in text.split("/") if p and p != "."]
    return root + "/".join(parts) if root or parts else "."


def posix(path: Any) -> str:
    """`Path(path).as_posix()`."""
    return plain(path) if _POSIX else _path(path).as_posix()


def is_absolute(path: Any) -> bool:
    """`Path(path).is_absolute()`."""
    return bool(_root(plain(path))) if _POSIX else _path(path).is_absolute()


def _root(p: str) -> str:
    """The root of a plain path: "", "/" or "//"."""
    return "//" if p.startswith("//") else "/" if p.startswith("/") else ""


def parent(p: str) -> str:
    """`Path(p).parent` of a plain path."""
    if not _POSIX:
        return str(_path(p).parent)
    root = _root(p)
    rest = p[len(root):]
    if "/" in rest:
        return root + rest.rpartition("/")[0]
    return root or "."


def join(folder: str, rel: str) -> str:
    """`Path(folder) / rel` (an absolute `rel` replaces the folder)."""
    if not _POSIX:
        return str(_path(folder) / rel)
    return plain(os.path.join(folder, rel))


def name(p: str) -> str:
    """`Path(p).name` of a plain path: its last part ("" for a root or ".")."""
    rest = p[len(_root(p)):]
    return "" if rest == "." else rest.rpartition("/")[2]


def suffix(p: str) -> str:
    """`Path(p).suffix` of a plain path."""
    if not _POSIX:
        return _path(p).suffix
    n = name(p)
    i = n.rfind(".")
    return n[i:] if 0 < i < len(n) - 1 else ""


def with_suffix(p: str, new: str) -> str:
    """`Path(p).with_suffix(new)` of a plain path, for a valid `new` (".afp")."""
    n = name(p)
    if not n or not _POSIX:  # (a root has no name: `pathlib` words the ValueError)
        return str(_path(p).with_suffix(new))
    old = suffix(p)
    return p[:len(p) - len(n)] + (n[:len(n) - len(old)] if old else n) + new


def _mode(p: str, follow: bool = True) -> int | None:
    """The mode `Path.stat` (`lstat`) reads, or None where `pathlib` answers "no" (POSIX)."""
    try:
        return (os.stat if follow else os.lstat)(p).st_mode
    except OSError as e:
        if getattr(e, "errno", None) not in _NOT_THERE:
            raise
        return None
    except ValueError:
        return None


def is_file(p: str) -> bool:
    if not _POSIX:  # (`pathlib` also takes some Windows errors for "no")
        return _path(p).is_file()
    mode = _mode(p)
    return mode is not None and stat.S_ISREG(mode)


def is_dir(p: str) -> bool:
    if not _POSIX:
        return _path(p).is_dir()
    mode = _mode(p)
    return mode is not None and stat.S_ISDIR(mode)


def exists(p: str) -> bool:
    return _path(p).exists() if not _POSIX else _mode(p) is not None


def is_symlink(p: str) -> bool:
    if not _POSIX:
        return _path(p).is_symlink()
    mode = _mode(p, follow=False)
    return mode is not None and stat.S_ISLNK(mode)


def resolve(p: str) -> str:
    """`Path(p).resolve()` of a plain path: symlinks resolved; a symlink loop raises
    RuntimeError, as there."""
    if not _POSIX:
        return str(_path(p).resolve())
    try:
        s = os.path.realpath(p)
    except OSError as e:
        _loop(e)
        raise
    s = plain(s)
    try:
        os.stat(s)
    except OSError as e:
        _loop(e)
    return s


def _loop(e: OSError) -> None:
    if e.errno == errno.ELOOP:
        raise RuntimeError(f"Symlink loop from {e.filename!r}")


def real_path(path: Any) -> str:
    """`path` made absolute with symlinks resolved; a symlink loop is left unresolved (reading it
    then fails with a clear reason instead of an exception)."""
    p = plain(path)
    try:
        return resolve(p)
    except (OSError, RuntimeError):
        return plain(os.path.abspath(p))
