"""The row codec both SQL stores share: event batches, run summaries, JSON columns.

Role:       `batches`/`unbatch` turn a run's events into per-iteration rows and back;
            `run_dict`/`checkin_dict`/`decode` read summary, check-in and JSON columns, naming
            the store and the row when one does not decode. Split from `store_sqlite`, which
            `store_postgres` read it from.
Emits:      `StoreDamaged` for a row that does not decode (with the store's path and the fix).
Invariants: `unbatch(batches(events)) == events`; JSON is ASCII-escaped, so any str can be
            stored; a damaged row is never returned half-read.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from .source import Span
from .store import damaged, summarize
from .trace import Event


# ASCII-escaped, so any str (even a lone surrogate from a sloppy decoder) can be stored
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=str)
try:  # CPython's C encoder, built once: most of a store's cost per iteration is this encoding
    from json.encoder import c_encode_basestring_ascii, c_make_encoder  # type: ignore
    _C_JSON = c_make_encoder(None, str, c_encode_basestring_ascii, None, ":", ",", False, False,
                             True) if c_make_encoder and c_encode_basestring_ascii else None
except ImportError:  # pragma: no cover - other interpreters
    _C_JSON = None


def _compact(value: Any) -> str:
    """Compact JSON in the value's own key order; values are JSON trees (no cycle check)."""
    if _C_JSON is not None:
        return "".join(_C_JSON(value, 0))
    return _JSON.encode(value)


def batches(run_id: str, events: Iterable[Event], after: int = 0
            ) -> list[tuple[int, int, int, str]]:
    """The events with `seq > after` as per-iteration rows `(first_seq, last_seq, iteration,
    body)`: one row and one encoder call per iteration, which keeps a persistent store's cost
    per iteration low. `body` is a JSON array of `[seq, kind, time, caused_by, source, payload]`
    (`source` is `[file, start, end]` or null), plus the event id as a 7th item only when it is
    not `<run_id>:<seq>`."""
    rows: list[tuple[int, int, int, str]] = []
    group: list[Event] = []
    for e in events:
        if e.seq <= after:
            continue
        if group and e.iteration != group[-1].iteration:
            rows.append(_batch(run_id + ":", group))
            group = []
        group.append(e)
    if group:
        rows.append(_batch(run_id + ":", group))
    return rows


def _batch(prefix: str, group: list[Event]) -> tuple[int, int, int, str]:
    items = []
    for e in group:
        s = e.source
        item = (e.seq, e.kind, e.time, e.caused_by, s and (s.file, s.start, s.end), e.payload)
        items.append(item if e.id == prefix + str(e.seq) else (*item, e.id))
    return group[0].seq, group[-1].seq, group[0].iteration, _compact(items)


def unbatch(run_id: str, rows: Iterable[tuple[int, int, str]], path: str) -> list[Event]:
    """The events of stored `(first_seq, iteration, body)` batch rows, by `seq`; a row that does
    not decode raises `StoreDamaged` naming the run and the batch."""
    out = []
    for first, iteration, body in rows:
        try:
            items = json.loads(body)
            if not isinstance(items, list) or not _is_int(iteration):
                raise ValueError("not a JSON array of events")
            out.extend(_event(run_id, iteration, item) for item in items)
        except (ValueError, TypeError, RecursionError) as exc:
            why = ("are not valid JSON" if isinstance(exc, json.JSONDecodeError)
                   else f"do not decode ({exc})")
            raise damaged(path, f"run `{run_id}`'s events (the batch at seq {first}) {why}") \
                from None
    out.sort(key=lambda e: e.seq)
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _event(run_id: str, iteration: int, item: Any) -> Event:
    """One `[seq, kind, time, caused_by, source, payload(, id)]` item, checked."""
    if not isinstance(item, list) or len(item) not in (6, 7):
        raise ValueError("an item is not [seq, kind, time, caused_by, source, payload]")
    seq, kind, time, caused_by, src, payload = item[:6]
    eid = item[6] if len(item) > 6 else f"{run_id}:{seq}"
    if not (_is_int(seq) and _is_int(time) and isinstance(kind, str) and isinstance(eid, str)
            and isinstance(caused_by, list) and all(isinstance(c, str) for c in caused_by)):
        raise ValueError("an event has a field of the wrong type")
    if src is not None and not (isinstance(src, list) and len(src) == 3
                                and isinstance(src[0], str) and _is_int(src[1])
                                and _is_int(src[2])):
        raise ValueError(f"event {seq} has a malformed source span")
    return Event(seq, eid, kind, iteration, time, tuple(caused_by), Span(*src) if src else None,
                 payload)


def v1_events_to_batches(run_ids: list[str], read: Callable[[str], list[str]],
                         write: Callable[[str, tuple[int, int, int], list[tuple]], None]) -> None:
    """Migration 1 -> 2 for any backend: per run, read v1 event bodies (one JSON event per row),
    write the run's summary `(n_events, iterations, time)` and its batch rows."""
    for run_id in run_ids:
        events = [_v1_event(run_id, b) for b in read(run_id)]
        write(run_id, summarize(events), [(run_id, *r) for r in batches(run_id, events)])


def _v1_event(run_id: str, body: Any) -> Event:
    """One v1 event row, checked as a batch item is; a `ValueError` naming the run when it does
    not decode (the migration names the store)."""
    try:
        d = json.loads(body)
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        src = d.get("source")
        src = [src.get("file"), src.get("start"), src.get("end")] if isinstance(src, dict) else src
        if not _is_int(d.get("iteration")):
            raise ValueError("its iteration is not an integer")
        item = [d.get("seq"), d.get("kind"), d.get("time"), d.get("caused_by", []), src,
                d.get("payload"), *([d["id"]] if "id" in d else [])]
        return _event(run_id, d["iteration"], item)
    except (ValueError, TypeError, RecursionError) as exc:
        why = "is not valid JSON" if isinstance(exc, json.JSONDecodeError) else f"does not " \
            f"decode ({exc})"
        raise ValueError(f"run `{run_id}`'s event row in the old `events` table {why}") \
            from None


def clean_text(text: str | None) -> str | None:
    """`text` storable in a text column of either SQL store: a lone surrogate (no UTF-8) and a
    NUL (PostgreSQL's text refuses it) become U+FFFD instead of failing the write."""
    if text is None:
        return text
    if not text.isascii():
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.replace("\x00", "\ufffd")


RUN_KEYS = ("run_id", "agent", "spec", "status", "outcome", "answer", "meta", "iterations", "time",
            "events", "started", "updated", "order")


def decode(text: Any, path: str, what: str) -> dict:
    """A stored JSON object column; `StoreDamaged` naming `what` when it is not valid JSON or
    not an object."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        raise damaged(path, f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise damaged(path, f"{what} is not a JSON object")
    return value


def run_dict(row: Iterable[Any], path: str) -> dict:
    """A run summary from a row in `RUN_KEYS` order (meta as JSON text)."""
    d = dict(zip(RUN_KEYS, row))
    d["meta"] = decode(d["meta"], path, f"the summary (runs.meta) of run `{d['run_id']}`") \
        if d["meta"] else {}
    return d


def checkin_dict(row: Iterable[Any], path: str) -> dict:
    cid, run_id, fp, state, decision = row
    return {"id": cid, "run_id": run_id, "fp": fp, "state": state,
            "decision": decode(decision, path, f"the decision of check-in `{cid}`")
            if decision else None}
