"""Result envelopes a host tool may return: an absence, rows with coverage, a described value.

Role:       public helpers (`afp_dsl.absent`, `coverage`, `described`); the interpreter sends the
            model `envelope.to_model()`, records `envelope.to_json()` and routes on `.status`
            (`read_result`: how the tool pipeline reads any value a host tool returned, as JSON
            data through `json_data`).
Invariants: envelopes are frozen; `absent` is an answer, not an error (status `absent`); rows with
            incomplete coverage have status `partial`; `to_model` is compact JSON and never raises;
            a result with no JSON form (a set, an object, a generator) is a problem named with its
            type and place, never sent as a repr (which would differ from run to run).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import attrs

from .frozen import JSON_LIKE, MAX_DEPTH, a_type, freeze, host_data
from .frozen import plain as _plain

STATUSES = ("success", "failure", "denied", "invalid", "partial", "pending", "absent")
ENVELOPE_STATUSES = ("success", "partial", "absent")  # (what a host's envelope may say)
ABSENT_NOTE = ("The search ran and found nothing. This is an answer, not an error: the same call "
               "returns the same. Tell the user what was not found, or try something different.")
PARTIAL_NOTE = "Only {covered} of {total} rows are here: say the answer is partial, or narrow the request."


@attrs.frozen
class Absent:
    """Nothing was found; `searched` says where the tool looked."""

    reason: str
    searched: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return "absent"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"absent": True, "reason": self.reason}
        if self.searched:
            out["searched"] = list(self.searched)
        out["note"] = ABSENT_NOTE
        return out

    def to_model(self) -> str:
        return _compact(self.to_json())


@attrs.frozen
class Coverage:
    """Rows plus how much of the whole they cover; `source` names where they came from."""

    rows: tuple[Any, ...]
    covered: int
    total: int | None = None
    source: str | None = None

    @property
    def complete(self) -> bool:
        return self.total is None or self.covered >= self.total

    @property
    def status(self) -> str:
        return "success" if self.complete else "partial"

    def to_json(self) -> dict[str, Any]:
        cov: dict[str, Any] = {"covered": self.covered, "complete": self.complete}
        if self.total is not None:
            cov["total"] = self.total
        if not self.complete:
            cov["note"] = PARTIAL_NOTE.format(covered=self.covered, total=self.total)
        out: dict[str, Any] = {"rows": _plain(self.rows), "coverage": cov}
        if self.source is not None:
            out["source"] = self.source
        return out

    def to_model(self) -> str:
        return _compact(self.to_json())


@attrs.frozen
class Described:
    """A value with a sentence saying what it is (and, optionally, where it came from)."""

    value: Any
    description: str
    source: str | None = None

    @property
    def status(self) -> str:
        return "success"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": _plain(self.value), "description": self.description}
        if self.source is not None:
            out["source"] = self.source
        return out

    def to_model(self) -> str:
        return _compact(self.to_json())


Envelope = Union[Absent, Coverage, Described]


def absent(reason: str, *, searched: str | Sequence[str] | None = None) -> Absent:
    """The search ran and matched nothing.

    Example:
        >>> absent("no order AB-99", searched="orders").to_json()["searched"]
        ['orders']
    """
    _need_text("reason", reason)
    if searched is None:
        places: tuple[str, ...] = ()
    elif isinstance(searched, str):
        places = (searched,)
    elif isinstance(searched, (set, frozenset, Mapping)):  # (no order of its own: traces differ)
        raise TypeError(f"`searched` must be a string or a list of strings, not a "
                        f"`{type(searched).__name__}`, whose order changes from run to run "
                        f"(pass `sorted(...)`)")
    elif isinstance(searched, (bytes, bytearray)) or not isinstance(searched, Iterable):
        raise TypeError(f"`searched` must be a string or a list of strings, not "
                        f"{a_type(searched)}")
    else:
        places = tuple(searched)
    wrong = [a_type(p) for p in places if not isinstance(p, str)]
    if wrong:
        raise TypeError(f"`searched` must be a string or a list of strings; it holds {wrong[0]}")
    return Absent(reason, places)


def coverage(rows: Sequence[Any], *, total: int | None = None, covered: int | None = None,
             source: str | None = None) -> Coverage:
    """Rows with their coverage: `covered` (default: how many rows) out of `total` (if known).

    Example:
        >>> coverage([{"id": 1}], total=3).status
        'partial'
    """
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
        raise TypeError("`rows` must be a list")
    count = len(rows) if covered is None else covered
    for name, n in (("covered", count), ("total", total)):
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            raise ValueError(f"`{name}` must be a non-negative integer, got {n!r}")
    if total is not None and count > total:
        raise ValueError(f"`covered` ({count}) is larger than `total` ({total})")
    if source is not None:
        _need_text("source", source)
    return Coverage(_held("rows", lambda: tuple(freeze(r) for r in rows), rows), count, total,
                    source)


def described(value: Any, *, description: str, source: str | None = None) -> Described:
    """A value with what it means, so the model does not have to guess."""
    _need_text("description", description)
    if source is not None:
        _need_text("source", source)
    return Described(_held("value", lambda: freeze(value), value), description, source)


def is_envelope(value: Any) -> bool:
    return isinstance(value, (Absent, Coverage, Described))


def read_result(value: Any) -> tuple[str, str, Any, str | None]:
    """`(status, text the model reads, value to record, problem)` of what a host tool returned.
    An envelope (anything with `to_model` and `status`) is read through them and recorded as its
    `to_json()`, so redaction sees the keys inside; any other value as JSON data (`json_data`),
    sent as compact JSON. `problem` (else None) says why the value cannot be read at all: it,
    or something in it, has no JSON form (the model is never sent a repr), or host code raised.

    Example:
        >>> read_result(absent("none"))[0], read_result({"a": (1,)})[1:]
        ('absent', ('{"a":[1]}', {'a': [1]}, None))
    """
    if type(value) is str:  # (the common result: as `json_data` would take it)
        return "success", value, value, None
    status, text = "success", None
    try:
        if hasattr(value, "to_model") and hasattr(value, "status") and not isinstance(value, dict):
            status, model = str(value.status), value.to_model()
            if status not in ENVELOPE_STATUSES:
                return status, "", None, (f"it is a result envelope whose `status` is "
                                          f"`{status[:40]}`, not one of "
                                          f"{', '.join(ENVELOPE_STATUSES)}")
            if not isinstance(model, str):
                model, problem = json_data(model)
                if problem is not None:
                    return status, "", None, f"its `to_model()` is not text: {problem}"
                model = _compact(model)
            text = model
            value = value.to_json() if callable(getattr(value, "to_json", None)) else text
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - host code: a method that raises
        return status, "", None, f"reading it as a result envelope raised {type(exc).__name__}"
    data, problem = json_data(value)
    if problem is not None:
        return status, "", None, problem
    if text is None:
        text = data if isinstance(data, str) else _compact(data)
    return status, text, data, None


def json_data(value: Any) -> tuple[Any, str | None]:
    """What a host tool returned as JSON data, strictly (`frozen.host_data(strict=True)`): a leaf
    with no JSON form is a problem naming its type, its place and the fix.

    Example:
        >>> json_data({"a": (1, None)})
        ({'a': [1, None]}, None)
    """
    return host_data(value, strict=True)


def _need_text(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{name}` must be a non-empty string")


def _held(name: str, make: Any, value: Any) -> Any:
    """`make()`, the frozen copy of `value`; a `ValueError` naming why when it cannot be made (a
    value containing itself, or nested past the recursion limit). A leaf with no JSON form (a
    set) is named later, when the tool's result is read, with the tool's name."""
    try:
        return make()
    except RecursionError:
        problem = host_data(value)[1] or f"it is nested more than {MAX_DEPTH} levels deep"
        raise ValueError(f"`{name}` cannot be read: {problem}; {JSON_LIKE}") from None


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # circular or too deep: still answer something readable
        return json.dumps(str(value), ensure_ascii=False)
