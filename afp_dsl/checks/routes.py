"""Competing routes: two deterministic routes out of one skill that can fire on one result.

Role:       checks layer; pairs of routes of one source skill (the only quadratic loop, bounded
            by its out-degree, and narrowed to routes that do not pin one path to different
            values: `_Near`), guards analysed by `solver` under the facts of both routes; once
            per graph (`Analysis.memo`), the routes shadowed or duplicated (`never_fires`) shared
            with `graph`.
Emits:      AFP205 ambiguous-routes (the earlier route shadows the later one, or duplicates it:
            same target, trigger and guard; or the guards could not be proved disjoint),
            AFP210 overlapping-guards (a result satisfying both guards was found, shown).
Invariants: routes to the same target never compete (an identical later one is only reported
            as a duplicate); guards proved disjoint are silent; each later route gets at most
            one diagnostic (against the first earlier competitor or original); a route proved
            never to fire (`GraphView.dead`, its guard unsatisfiable, or shadowed or duplicated
            here) competes with none.
"""
from __future__ import annotations

import bisect
import heapq
import json
from typing import Iterable

import attrs

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label
from ..evaluate import json_equal
from ..record import Record, record
from . import graphview as G
from . import sitelist
from . import sites as S
from .exprs import has_unknown_operand
from .solver import Verdict, dnf, key_text, read_key, refute, solve


def check_routes(analysis: Analysis) -> Iterable[Diagnostic]:
    for v in G.views(analysis):
        yield from _findings(analysis, v).diagnostics


@record
class NeverFires(Record):
    """A route proved never to fire: `earlier` is tried first and takes every result it would
    (AFP205; `duplicate`: the same route again, else shadowed), or, with no `earlier`, its own
    guard never holds (AFP208)."""
    earlier: G.RouteEdge | None
    duplicate: bool

    def why(self) -> str:
        """`shadowed by the earlier route `a -> b`` (or `duplicates …`), for witness paths."""
        if self.earlier is None:
            return "its condition can never hold"
        r = self.earlier.route
        return f"{'duplicates' if self.duplicate else 'shadowed by'} the earlier route `{r.src} -> {r.dst}`"


@record
class _Findings(Record):
    diagnostics: tuple[Diagnostic, ...]
    never: dict[int, NeverFires]  # by route index
    silent: frozenset[int]  # `never` and `GraphView.dead`


def never_fires(analysis: Analysis, v: G.GraphView) -> dict[int, NeverFires]:
    """The routes (by index) AFP205 reports as shadowed or duplicated, and those whose guard
    never holds (read-only): the graph checks and `explain_reach` treat them as routes that
    never fire, like `GraphView.dead`."""
    return _findings(analysis, v).never


def silent_routes(analysis: Analysis, v: G.GraphView) -> frozenset[int]:
    """Every deterministic route (by index) proved never to fire: dead (`GraphView.dead`,
    AFP209) or taken over by an earlier route of its source (shadowed or duplicated, AFP205)."""
    return _findings(analysis, v).silent


def _findings(analysis: Analysis, v: G.GraphView) -> _Findings:
    """AFP205/AFP210 of one graph, computed once per analysis (the pairs are the costly part)."""
    return analysis.memo(("route-findings", v.module, id(v.graph)), lambda: _compete(analysis, v))


def _compete(analysis: Analysis, v: G.GraphView) -> _Findings:
    found: list[Diagnostic] = []
    dead = _cannot_fire(analysis, v)
    never = {i: NeverFires(None, False) for i in _unsatisfiable(analysis, v, dead)}
    dead |= set(never)
    for edges in v.out_edges().values():
        if len(edges) < 2:
            continue  # (a route alone competes with none)
        det = [e for e in edges if e.deterministic and e.index not in dead]
        pins = [_pins(e.route.when) for e in det]
        near = _Near(pins)
        for j, later in enumerate(det):
            for i in near.earlier(j):
                earlier = det[i]
                if earlier.index in never:
                    continue  # it never fires: it competes with none
                if pins[i] and pins[j] and _apart(pins[i], pins[j]):
                    continue  # Speed: disjoint on sight (the solver would prove it, slowly)
                if earlier.dst == later.dst:  # no competition, unless it is the same route
                    d = _duplicate(analysis, v, earlier, later)
                else:
                    d = _pair(analysis, v, earlier, later)
                if d is not None:
                    if d.primary is not None and d.primary.message in _NEVER_FIRES:
                        never[later.index] = NeverFires(earlier, d.primary.message == _DUPLICATE)
                    found.append(d)
                    break
    return _Findings(tuple(found), never, v.dead | frozenset(never))


def _pins(when: ir.Expr | None) -> dict[tuple, object]:
    """The `path == literal` comparisons a guard's top-level `and` requires: path key → the
    literal's value. Two guards that pin one path to values never equal (as `evaluate` compares
    them: 1 equals 1.0, "1" does not) are disjoint without asking the solver, which a skill
    routing on `result.x == 1`, `== 2`, … thousands of times would ask for every pair."""
    items = when.items if isinstance(when, ir.And) else (when,)
    out: dict[tuple, object] = {}
    for c in items:
        if type(c) is ir.Compare and c.op == "==":
            path, lit = (c.left, c.right) if type(c.right) is ir.Lit else (c.right, c.left)
            if type(path) is ir.Path and type(lit) is ir.Lit and all(
                    type(x) in (str, int) for x in path.segments):
                out[(path.root, *path.segments)] = lit.value
    return out


class _Near:
    """The earlier routes (by position, ascending) that may overlap route `j`: with a path it
    pins, those pinning that path to an equal value or not pinning it; every earlier one else.
    Speed: a skill with thousands of `result.x == N` routes is then linear, not quadratic (the
    ones left out are disjoint by `_apart`, which the loop would skip one by one)."""

    def __init__(self, pins: list[dict]):
        self.pins = pins
        self.by_value: dict[tuple, dict[tuple, list[int]]] = {}
        self.free: dict[tuple, list[int]] = {}
        keys = {k for p in pins for k in p}
        for i, p in enumerate(pins):
            for k in keys:
                if k in p:
                    self.by_value.setdefault(k, {}).setdefault(_norm(p[k]), []).append(i)
                else:
                    self.free.setdefault(k, []).append(i)

    def earlier(self, j: int) -> Iterable[int]:
        if not self.pins[j] or len(self.pins) < 64:  # (few routes: every pair, as written)
            return range(j)
        k = next(iter(self.pins[j]))
        same = self.by_value[k][_norm(self.pins[j][k])]
        free = self.free.get(k, [])
        return heapq.merge(same[:bisect.bisect_left(same, j)], free[:bisect.bisect_left(free, j)])


def _norm(value: object) -> tuple:
    """A pinned literal as a hashable key under `json_equal` (1 and 1.0 alike, true not 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    return ("other", repr(value))


def _apart(a: dict, b: dict) -> bool:
    """Do two guards' pins hold a path to values that are never equal?"""
    return any(k in b and not json_equal(a[k], b[k]) for k in a)


def _cannot_fire(analysis: Analysis, v: G.GraphView) -> set[int]:
    """The routes (by index) proved never to fire (`GraphView.dead`, reported as AFP209 by
    `graph`): an `on` tool that neither the source skill nor any agent using the graph can call,
    or no `on` out of a skill with no tools. They compete with nothing. As for AFP209, misspelt
    tools and (for `on`) graphs no agent uses decide nothing."""
    return set(v.dead)


def _unsatisfiable(analysis: Analysis, v: G.GraphView, dead: set[int]) -> list[int]:
    """The routes (by index) whose guard never holds on its own (AFP208, or an AFP305 mismatch):
    they never fire, so they compete with nothing and are no witness of a way in."""
    out = []
    for e in v.routes:
        if e.route.when is None or e.index in dead:
            continue
        # (`never` is settled once per site, and the guard check asks it of every route; the
        # rare route it refutes is then asked for unknown names)
        if sitelist.route_site(analysis, v.module, v.graph, e.route).never() is not None and (
                not _flawed(analysis, v, e)):
            out.append(e.index)
    return out


@record
class _Trigger(Record):
    tool: tuple | None  # resolved tool key
    name: str | None
    statuses: frozenset | None  # None: any status


def _trigger(analysis: Analysis, v: G.GraphView, e: G.RouteEdge) -> _Trigger | None:
    tool = name = None
    if e.route.on is not None:
        r = analysis.resolve(v.module, e.route.on)
        if r is None or not isinstance(r.decl, ir.Tool):
            return None
        tool, name = (r.module, r.decl.name), r.decl.name
    statuses = frozenset(s.name for s in e.route.status if s.name in S.STATUSES)
    if e.route.status and not statuses:
        return None  # only statuses outside the vocabulary (AFP306): it never fires, judged there
    return _Trigger(tool, name, statuses or None)


def _pair(analysis: Analysis, v: G.GraphView, a: G.RouteEdge, b: G.RouteEdge) -> Diagnostic | None:
    ta, tb = _trigger(analysis, v, a), _trigger(analysis, v, b)
    if ta is None or tb is None:
        return None
    if ta.tool is not None and tb.tool is not None and ta.tool != tb.tool:
        return None
    statuses = ta.statuses if tb.statuses is None else (
        tb.statuses if ta.statuses is None else ta.statuses & tb.statuses)
    if statuses is not None and not statuses:
        return None
    if _flawed(analysis, v, a) or _flawed(analysis, v, b):
        return None  # a guard naming an unknown root or field (or a rejected operand) means nothing yet: reported already
    site = sitelist.route_site(analysis, v.module, v.graph, b.route if tb.tool else a.route)
    wanted = tuple(sorted(statuses or ()))
    if site.statuses != wanted:  # Speed: else the site itself, whose facts are settled already
        site = site._replace(statuses=wanted)
    verdict = solve([a.route.when, b.route.when], S.facts(site), reasons=False)  # (none read)
    if verdict.status == "unsat":
        return None
    trigger = _trigger_text(ta if ta.tool else tb, statuses)
    covers = (ta.tool is None or ta.tool == tb.tool or (
        tb.tool is None and ta.name is not None and _only_on(analysis, v, b, ta.name))) and (
        ta.statuses is None or (tb.statuses is not None and tb.statuses <= ta.statuses))
    if a.route.when is None and covers:
        if b.route.when is None or refute([b.route.when], S.facts(site), reasons=False) is None:
            return _shadowed(a, b, _trigger_text(ta, ta.statuses))
    if verdict.status == "sat" and a.route.when is not None and b.route.when is not None:
        if covers and _covered(a, b, S.facts(site)):
            return _shadowed(a, b, _trigger_text(ta, ta.statuses), guarded=True)
        return _overlap(a, b, trigger, verdict)
    return _ambiguous(a, b, trigger, verdict)


def _duplicate(analysis: Analysis, v: G.GraphView, a: G.RouteEdge,
               b: G.RouteEdge) -> Diagnostic | None:
    """`b` is `a` again, to the same target: same tool, same statuses, same guard (the label is
    only a caption). `a` is tried first and holds on every result `b` would, so `b` never fires."""
    ta, tb = _trigger(analysis, v, a), _trigger(analysis, v, b)
    if ta is None or tb is None or ta != tb or _shape(a.route.when) != _shape(b.route.when):
        return None
    if _flawed(analysis, v, a):
        return None  # the guard names an unknown root or field: reported already, means nothing yet
    guard = "under the same guard" if a.route.when is not None else "with no further condition"
    notes = [f"both fire {_trigger_text(ta, ta.statuses)}, {guard}, and routes are tried in "
             "declaration order"]
    if a.route.label != b.route.label:
        notes.append("their labels differ, but a label is only a caption in diagrams")
    return diag("AFP205", f"route {_title(b)} never fires: it duplicates an earlier route (the "
                f"same tool, statuses and guard)", b.route.span, _DUPLICATE,
                secondary=_earlier(a), notes=tuple(notes),
                help="delete one of the two routes: they are the same route")


def _shape(x: object) -> object:
    """`x` compared strictly: IR equality, like Python's, takes `1`, `1.0` and `true` as equal,
    and a guard does not."""
    if isinstance(x, ir.Node):
        fields = (f.name for f in attrs.fields(type(x)) if f.eq)
        return (type(x).__name__, *(_shape(getattr(x, name)) for name in fields))
    if isinstance(x, tuple):
        return tuple(_shape(i) for i in x)
    return (type(x).__name__, x)


_FLAWED: dict[int, tuple[ir.Route, bool]] = {}


def clear_cache() -> None:
    _FLAWED.clear()


def _flawed(analysis: Analysis, v: G.GraphView, e: G.RouteEdge) -> bool:
    """Does the route's guard name an unknown root or field, or hold a rejected operand
    (cached: asked once per pair)?"""
    if e.route.when is None:
        return False
    hit = _FLAWED.get(id(e.route))
    if hit is None or hit[0] is not e.route:
        if len(_FLAWED) > 100_000:
            _FLAWED.clear()
        site = sitelist.route_site(analysis, v.module, v.graph, e.route)
        flawed = has_unknown_operand(analysis, site)
        hit = _FLAWED[id(e.route)] = (e.route, flawed)
    return hit[1]


def _trigger_text(t: _Trigger, statuses) -> str:
    what = f"when `{t.name}` returns" if t.name else "on a tool result"
    if statuses:
        what += " with status " + ", ".join(f"`{s}`" for s in sorted(statuses))
    return what


def _title(e: G.RouteEdge) -> str:
    return f"`{e.route.src} -> {e.route.dst}`"


def _earlier(a: G.RouteEdge) -> tuple[Label, ...]:
    return (Label(a.route.span, "this earlier route wins", False),)


_SHADOWED = "shadowed"  # the label of AFP205 on a route that never fires
_DUPLICATE = "duplicates an earlier route"  # … on a route that never fires: the same route again
_NEVER_FIRES = (_SHADOWED, _DUPLICATE)


def _covered(a: G.RouteEdge, b: G.RouteEdge, facts) -> bool:
    """Wherever `b`'s guard holds, `a`'s holds too: `b`'s guard and the negation of `a`'s are
    refuted together (a guard that cannot be evaluated is false, and the solver's negation
    keeps those values, so this claims nothing where `a` could fail and `b` hold)."""
    both = [b.route.when, ir.Not(item=a.route.when, span=a.route.when.span)]
    return refute(both, facts, reasons=False) is not None


def _only_on(analysis: Analysis, v: G.GraphView, b: G.RouteEdge, tool: str) -> bool:
    """A route without `on` whose guard holds only for `tool`'s results (`when tool == "t1"
    and …`): an earlier `on t1` route takes them all as surely as if it said `on t1`."""
    if b.route.on is not None or b.route.when is None:
        return False
    other = ir.Compare(op="!=", left=ir.Path(root="tool", segments=()), right=ir.Lit(value=tool))
    site = sitelist.route_site(analysis, v.module, v.graph, b.route)
    return refute([b.route.when, other], S.facts(site), reasons=False) is not None


def _shadowed(a: G.RouteEdge, b: G.RouteEdge, trigger: str, guarded: bool = False) -> Diagnostic:
    why = (f"{_title(a)} fires {trigger} wherever the guard of {_title(b)} holds, and routes are "
           "tried in declaration order") if guarded else (
        f"{_title(a)} fires {trigger}, with no further condition, and routes are tried in "
        "declaration order")
    return diag("AFP205", f"route {_title(b)} never fires: the earlier route {_title(a)} takes "
                f"every result it would", b.route.span, _SHADOWED, secondary=_earlier(a),
                notes=(why,),
                help=f"move {_title(b)} before {_title(a)}, or narrow the guard of {_title(a)}"
                if guarded else f"move {_title(b)} before {_title(a)}, or give {_title(a)} a guard")


def _overlap(a: G.RouteEdge, b: G.RouteEdge, trigger: str, verdict: Verdict) -> Diagnostic:
    example = _example(verdict, [a.route.when, b.route.when])
    notes = [f"both hold {trigger}" + (f", for example with {example}" if example else ""),
             f"declaration order decides: {_title(a)} fires"]
    return diag("AFP210", f"the guards of routes {_title(a)} and {_title(b)} can both hold",
                b.route.span, "overlaps an earlier route", secondary=_earlier(a), notes=notes,
                help="make the guards disjoint")


def _ambiguous(a: G.RouteEdge, b: G.RouteEdge, trigger: str, verdict: Verdict) -> Diagnostic:
    notes = [f"both can fire {trigger}; the first declared ({_title(a)}) wins"]
    if verdict.status == "unknown":
        notes.append("not analysed: " + "; ".join(verdict.notes))
    return diag("AFP205", f"routes {_title(a)} and {_title(b)} can fire on the same result",
                b.route.span, "competes with an earlier route", secondary=_earlier(a),
                notes=notes, help="make the conditions disjoint")


def _example(verdict: Verdict, exprs: list) -> str:
    """`result.amount = 600` for the keys the guards read, from the solver's witness."""
    if verdict.witness is None:
        return ""
    keys = []
    for case in dnf(exprs) or []:
        for atom in case:
            for k in ([atom.key] if atom.key else list(atom.keys)):
                if k not in keys and k[0] == "path" and k[1] not in ("tool", "status", "skill"):
                    keys.append(k)
    shown = [f"{key_text(k)} = {json.dumps(read_key(verdict.witness, k), ensure_ascii=False)}"
             for k in keys[:4]]
    return ", ".join(shown)

