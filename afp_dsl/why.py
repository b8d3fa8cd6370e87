"""`why`: explain an answer (or any event) by walking the trace backwards (semantics §12).

Role:       the entry points (`explain`, `why_tree`), the `WhyNode` tree and its text and stable
            JSON renderings, and the look-ups the walk shares (`Index`, `Locator`, inner runs).
            The per-kind backward walk is `why_walk`; "why was skill S (not) active" and "why
            did edge A->B (not) fire" are `why_query`.
Invariants: reads only the (redacted) trace; never raises on a partial or foreign trace (a
            malformed one yields an `error` node), only on a wrong argument to `explain`;
            output is deterministic (event order, no clock); repeated events collapse to a
            reference.
"""
from __future__ import annotations

import functools

import json
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from .launch_checks import _a
from .source import SourceFile
from .trace import Event, Trace, json_text

VERSION = 1
MAX_NODES = 3000
MAX_LEVELS = 150  # nested nodes (≈ 40 iterations back); deeper: ask for that event's tree
MAX_INNER_DEPTH = 3


@attrs.frozen
class WhyNode:
    """One line of the explanation: what it is, the event behind it, where it was declared."""

    kind: str
    text: str
    event: str | None = None
    at: str | None = None
    data: Any = None
    children: tuple["WhyNode", ...] = ()

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text, "event": self.event, "at": self.at,
                "data": self.data if self.data is not None else {},
                "children": [c.to_dict() for c in self.children]}


def short(value: Any, limit: int = 100) -> str:
    """A one-line rendering of a (redacted) value, cut to `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Locator:
    """Turns spans into `file:line` using the program's module sources, else the file on disk."""

    def __init__(self, program: Any = None):
        self.sources: dict[str, Any] = {}
        modules = getattr(getattr(program, "ir", program), "modules", ())
        for m in modules or ():
            self.sources[m.key] = m.source

    def _file(self, file: str) -> SourceFile | None:
        text = self.sources.get(file)
        if text is None:
            text = self._loaded_elsewhere(file)
        if text is None:  # (a regular file only: a FIFO would block, /dev/zero never end)
            from .loader import read_text
            text = read_text(file)[0] if isinstance(file, str) else None
        if not isinstance(text, SourceFile):
            text = self.sources[file] = SourceFile.of(file, text) if text else None
        return text

    def _loaded_elsewhere(self, file: str) -> Any:
        """The source of a module the program holds under a longer key: a run records the keys
        relative to the folder it started in, and the spec loaded again from another folder
        has them from there (`examples/x.afp` is `/home/me/examples/x.afp`)."""
        tail = "/" + str(file).replace("\\", "/").lstrip("./")
        found = [src for key, src in self.sources.items()
                 if isinstance(key, str) and key.replace("\\", "/").endswith(tail)]
        return found[0] if len(found) == 1 else None

    def __call__(self, file: str, start: int) -> str:
        sf = self._file(file)
        shown = _display_path(file)
        if sf is None:
            return f"{shown}@{start}"
        return f"{shown}:{sf.line_col(start)[0]}"

    def span(self, span: Any) -> str | None:
        if span is None:
            return None
        if isinstance(span, Mapping):
            return self(span.get("file", "?"), span.get("start", 0))
        if isinstance(span, (list, tuple)) and len(span) >= 2:
            return self(span[0], span[1])
        return self(span.file, span.start)


def _display_path(file: str) -> str:
    """Absolute paths under the working directory are shown relative to it."""
    p = Path(file)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return file
    return file


InnerFinder = Callable[[str], "Trace | None"]


def inner_finder(inner: Any) -> InnerFinder:
    """Normalise the kept inner runs (the API's tool -> InnerRuns map, a callable run_id ->
    Trace such as a store lookup, or None) into one lookup by inner run id."""
    if inner is None:
        return lambda run_id: None
    if callable(inner) and not isinstance(inner, Mapping):
        return inner

    def find(run_id: str) -> Trace | None:
        call_id = run_id.rsplit("/", 1)[-1]
        for runs in inner.values():
            kept = getattr(runs, "runs", None)
            if not isinstance(kept, Mapping):
                continue
            t = kept.get(run_id) or kept.get(call_id)  # (by run id; by call id, as kept before)
            if t is not None and getattr(t, "run_id", None) == run_id:
                return t
        return None
    return find


class Index:
    """Look-ups over one run's events."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.run_id = trace.run_id
        self.events: list[Event] = list(trace)
        self.by_id = {e.id: e for e in self.events}

    def get(self, event_id: str | None) -> Event | None:
        if not event_id:
            return None
        e = self.by_id.get(event_id)
        if e is None and event_id.isdigit():
            e = self.by_id.get(f"{self.run_id}:{event_id}")
        return e

    def parents(self, e: Event) -> list[Event]:
        return [self.by_id[c] for c in e.caused_by if c in self.by_id]

    @functools.cached_property
    def provider_events(self) -> dict[str, list[Event]]:
        """The retries, fallbacks and circuit moves of each model call, by its `llm.called` id:
        which provider answered is part of why the reply says what it says."""
        out: dict[str, list[Event]] = {}
        for e in self.events:
            if e.kind in ("llm.retry", "llm.fallback", "llm.circuit") and e.caused_by:
                out.setdefault(e.caused_by[0], []).append(e)
        return out

    @functools.cached_property
    def discarded(self) -> frozenset[str]:
        """Tool results a retry threw away: recorded in the iteration that failed, before the
        `run.resumed {retry}` that repeats it from the state the one before left."""
        out: set[str] = set()
        for r in self.events:
            if r.kind == "run.resumed" and (r.payload or {}).get("retry") is True:
                out.update(e.id for e in self.events if e.kind == "tool.returned"
                           and e.seq < r.seq and e.iteration == r.iteration)
        return frozenset(out)

    def before(self, seq: int, kind: str, test: Callable[[dict], bool] = lambda p: True
               ) -> list[Event]:
        return [e for e in self.events if e.seq < seq and e.kind == kind
                and test(e.payload if isinstance(e.payload, dict) else {})]

    def last_before(self, seq: int, kind: str, test: Callable[[dict], bool] = lambda p: True
                    ) -> Event | None:
        found = self.before(seq, kind, test)
        return found[-1] if found else None

    def final(self) -> Event | None:
        for e in reversed(self.events):
            if e.kind == "run.finished":
                return e
        return self.events[-1] if self.events else None


def payload(e: Event) -> dict:
    return e.payload if isinstance(e.payload, dict) else {}


def items(p: Mapping, key: str) -> list[dict]:
    """The dict entries of the list under `key` (anything else in a foreign trace is skipped)."""
    v = p.get(key) if isinstance(p, Mapping) else None
    return [x for x in v if isinstance(x, dict)] if isinstance(v, (list, tuple)) else []


def name_of(v: Any) -> str | None:
    """A skill or edge name as recorded, or None when the value is not a plain string."""
    return v if isinstance(v, str) else None


def cond_node(c: Mapping) -> WhyNode:
    mark = "✓" if c.get("passed") else "✗"
    reason = f" ({c['reason']})" if c.get("reason") else ""
    return WhyNode("condition", f"{mark} {c.get('text')} — actual {short(c.get('actual'), 80)}"
                   + reason, data={"text": c.get("text"), "actual": c.get("actual"),
                                   "passed": bool(c.get("passed")),
                                   **({"reason": c["reason"]} if c.get("reason") else {})})


def entry_node(x: dict, at: str | None = None) -> WhyNode:
    """An entry the cold start tried and refused, with its conditions' actual values; `at`:
    where the entry is declared."""
    conds = tuple(cond_node(c) for c in items(x, "conditions") if isinstance(c, dict))
    err = f" ({x['reason']})" if x.get("reason") else ""
    return WhyNode("entry", f"entry `{x.get('skill')}` was tried and its `when` did not hold{err}",
                   at=at, data={"skill": x.get("skill")}, children=conds)


# ---------------------------------------------------------------- public entry points
def explain(trace: Trace, event_id: str | int | Event | None = None, *, inner: Any = None,
            program: Any = None, skill: str | None = None, iteration: int | None = None,
            edge: str | None = None, format: str = "text") -> str:
    """The explanation of `event_id` (default: the final answer), or of a skill (`skill`,
    `iteration`) or an edge (`"A->B"`), as text or (`format="json"`) a stable JSON document.
    A wrong argument is a `TypeError` or `ValueError` (`checked_question`)."""
    event_id = checked_question(event_id, skill, iteration, edge, format)
    node, query = why_tree(trace, event_id, inner=inner, program=program, skill=skill,
                           iteration=iteration, edge=edge)
    if format == "json":
        return to_json(trace.run_id, query, node)
    return render_text(node)


def checked_question(event: Any, skill: Any, iteration: Any, edge: Any, format: Any) -> str | None:
    """The event id asked about (an `Event` stands for its id, an `int` for its seq number), after
    the rules of `afpc why`: one question at most, `iteration` (≥ 1) only with `skill`."""
    event = _event_id(event)
    _check_name("skill", skill, "a skill", "skill=\"triage\"")
    if isinstance(skill, str) and not skill.strip():
        raise ValueError("`skill=` is blank: name the skill to explain, e.g. `skill=\"triage\"`")
    _check_name("edge", edge, "an edge", "edge=\"triage->refund\"")
    if isinstance(edge, str):
        from .why_query import parse_edge
        if parse_edge(edge) is None:
            shown = edge if len(edge) <= 40 else edge[:40] + "…"
            raise ValueError(f"`edge=` is {shown!r}, which is not an edge: write it as "
                             f"`FROM->TO`, e.g. `edge=\"triage->refund\"`")
    if sum(x is not None for x in (event, skill, edge)) > 1:
        raise ValueError("ask one question at a time: give at most one of the event, `skill=` "
                         "and `edge=`")
    if iteration is not None:
        _check_iteration(iteration, skill)
    if format not in ("text", "json"):
        raise ValueError(f"`format=` must be \"text\" or \"json\", not {_given(format)}")
    return event


def _event_id(event: Any) -> str | None:
    if event is None:
        return None
    if isinstance(event, Event):
        return event.id
    if isinstance(event, int) and not isinstance(event, bool):
        if event < 1:
            raise ValueError(f"an event's seq number counts from 1, not {event}")
        return str(event)
    if not isinstance(event, str):
        raise TypeError(f"the event to explain must be an event id (a `str`, e.g. "
                        f"`result.trace[3].id`), its seq number (an `int`) or the `Event` itself, "
                        f"or None for the answer; not {_given(event)}")
    if not event.strip():
        raise ValueError("the event to explain is blank: pass an event id, or None for the answer")
    return event


def _check_name(name: str, value: Any, what: str, example: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"`{name}=` must name {what} (a `str`, e.g. `{example}`), not "
                        f"{_given(value)}")


def _check_iteration(iteration: Any, skill: Any) -> None:
    if isinstance(iteration, bool) or not isinstance(iteration, int):
        raise TypeError(f"`iteration=` must be an iteration number (an `int` ≥ 1), not "
                        f"{_given(iteration)}")
    if iteration < 1:
        raise ValueError(f"`iteration=` counts from 1, not {iteration}")
    if skill is None:
        raise ValueError("`iteration=` goes with `skill=`: it asks why a skill was (not) active "
                         "at that iteration")


def _given(value: Any) -> str:
    return repr(short(value, 40)) if isinstance(value, str) else _a(value)


def why_tree(trace: Trace, event_id: str | None = None, *, inner: Any = None, program: Any = None,
             skill: str | None = None, iteration: int | None = None, edge: str | None = None
             ) -> tuple[WhyNode, dict]:
    """(tree, query) for the same arguments as `explain`; a malformed trace yields an `error`
    node naming the problem, never an exception."""
    try:
        return _tree(trace, event_id, inner, program, skill, iteration, edge)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        query = {"event": event_id, "skill": skill, "iteration": iteration, "edge": edge}
        return (WhyNode("error", f"the trace of run `{trace.run_id}` is malformed and cannot be "
                        f"explained ({type(exc).__name__}: {short(str(exc), 80)})"),
                {k: v for k, v in query.items() if v is not None})


def _tree(trace, event_id, inner, program, skill, iteration, edge) -> tuple[WhyNode, dict]:
    from .why_query import edge_tree, skill_tree, walker
    w = walker(trace, inner_finder(inner), Locator(program))
    if skill is not None:
        return skill_tree(w, skill, iteration), {"skill": skill, "iteration": iteration}
    if edge is not None:
        return edge_tree(w, edge), {"edge": edge}
    if not w.ix.events:
        return WhyNode("empty", f"the trace of run `{trace.run_id}` is empty"), {"event": event_id}
    target = w.ix.get(event_id) if event_id else w.ix.final()
    if target is None:
        nested = _inner_event(trace, event_id, inner)
        if nested is not None:  # (an inner run's event, as the outer tree prints its id)
            return _tree(nested, event_id, inner, program, None, None, None)
        return (WhyNode("missing", f"no event `{event_id}` in run `{trace.run_id}`"),
                {"event": event_id})
    return w.node(target), {"event": target.id}


def _inner_event(trace: Trace, event_id: Any, inner: Any) -> Trace | None:
    """The trace of the inner run (an agent run as a tool, at any depth below `trace`'s run)
    whose event `event_id` is, as `<run>/<call>:<seq>`; None when it names no such run."""
    if not isinstance(event_id, str) or not event_id.startswith(trace.run_id + "/"):
        return None
    run_id = event_id.rpartition(":")[0]
    found = inner_finder(inner)(run_id) if run_id else None
    return found if found is not None and getattr(found, "run_id", None) == run_id else None


def to_json(run_id: str, query: dict, node: WhyNode) -> str:
    """The stable JSON document, strict JSON: a NaN or an infinity a tool returned (a condition's
    actual value, a result) is written as the string "NaN", "Infinity" or "-Infinity", as every
    JSON form of the trace is (docs/trace.md §1)."""
    doc = {"version": VERSION, "run": run_id, "query": query, "tree": node.to_dict()}
    return json_text(doc, ensure_ascii=False, sort_keys=True, indent=2, default=str) + "\n"


def render_text(node: WhyNode) -> str:
    lines: list[str] = []
    stack = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        head = f"[{n.event}] " if n.event else ""
        where = f" ({n.at})" if n.at else ""
        lines.append("  " * depth + head + n.text + where)
        stack.extend((c, depth + 1) for c in reversed(n.children))
    return "\n".join(lines)


def describe(e: Event) -> str:
    """A one-line description of an event (used by `afpc trace show` and the walk)."""
    from .why_query import describe as _describe
    return _describe(e)


__all__ = ["WhyNode", "explain", "why_tree", "render_text", "to_json", "describe", "Locator",
           "Index", "inner_finder", "short", "items", "name_of"]
