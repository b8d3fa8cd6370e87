"""Where expressions stand and what is known about their paths: places, roots, schema facts.

Role:       shared by exprs (AFP303–306), guards (AFP208), graph (AFP205/AFP210) and policies
            (AFP401): `sites(analysis)` lists every expression with its place, and
            `facts(analysis, site)` says what the place and the tool's schemas tell about each key.
Invariants: pure; a schema the walker does not understand (composition, remote `$ref`) yields
            no facts rather than a guess; `result` is the output schema only where the site sees
            nothing but `success` results, and `args` the input schema only where the call passed
            argument validation (`schema_view`), as at run time.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from functools import partial
from typing import Any, Iterator, NamedTuple

from .. import ir
from ..analysis import Analysis
from ..frozen import FrozenMap
from .schemas import Field, schema_types, type_names, walk_schema
from .solver import Atom, Facts, Key, key_text

STATUSES = ("success", "failure", "denied", "invalid", "partial", "pending", "absent")
_BEFORE = ("tool", "args", "message", "iteration", "skill")
ROOTS: dict[str, tuple[str, ...]] = {
    "entry": ("message", "iteration"),
    "route": ("tool", "status", "result", "args", "message", "iteration", "skill"),
    "context": ("message", "iteration", "skill", "last", "returned", "active"),
    "input": ("message", "iteration"),
    "before": _BEFORE,
    "after": _BEFORE + ("result", "status"),
    "output": ("text", "message", "iteration", "skill"),
    "check_in": ("args", "message", "iteration", "skill"),
}
PLACE_NAMES = {
    "entry": "an `entry` condition", "route": "a route guard",
    "context": "a fact or instruction `when`", "input": "a policy `input` rule",
    "before": "a policy `before` rule", "after": "a policy `after` rule",
    "output": "a policy `output` rule", "check_in": "a tool's `check_in`",
}
_SCALAR_ROOTS = {"message": "a string", "text": "a string", "iteration": "a number",
                 "tool": "a string", "status": "a string", "skill": "a string"}


class Site(NamedTuple):
    """One expression: its module, place, the text that names its owner, and typing context.
    Speed: a named tuple (one C call to build; every route's guard is one). The caches keyed
    by a site use its identity, never its (deep) equality."""

    module: str
    place: str
    expr: ir.Expr
    owner: str
    tool: ir.Tool | None = None  # whose `args` / `result` the expression reads
    on: str | None = None  # a route's `on` tool / a before/after block's tool (the name seen)
    statuses: tuple[str, ...] = ()  # a route's `status` set
    skill: str | None = None  # a route's source skill


# ---------------------------------------------------------------- enumeration
def sites(analysis: Analysis) -> tuple[Site, ...]:
    """Every expression site of the program (computed once per analysis)."""
    return analysis.memo("sites", lambda: tuple(_sites(analysis)))


def _sites(analysis: Analysis) -> Iterator[Site]:
    # Speed: declarations told apart by exact type (the IR classes have no subclasses); most are
    # tools and skills, which the first two tests settle
    for module, decl in analysis.decls():
        t = type(decl)
        if t is ir.Tool:
            if decl.check_in is not None:
                yield Site(module, "check_in", decl.check_in,
                           f"the `check_in` of tool `{decl.name}`", tool=decl, on=decl.name)
        elif t is ir.Skill:
            continue
        elif t is ir.Graph:
            yield from _graph_sites(analysis, module, decl)
        elif (t is ir.Fact or t is ir.Instruction) and decl.when is not None:
            yield Site(module, "context", decl.when, f"{ir.kind_of(decl)} `{decl.name}`")
        elif t is ir.Policy:
            yield from policy_sites(analysis, module, decl)


def _graph_sites(analysis: Analysis, module: str, g: ir.Graph) -> Iterator[Site]:
    for e in g.entries:
        if e.when is not None:
            yield Site(module, "entry", e.when, f"the entry `{e.skill}` of graph `{g.name}`")
    made = _route_sites(analysis)
    for r in g.routes:
        if r.when is not None:
            site = made.get((module, id(r)))
            if site is None:
                site = made[(module, id(r))] = _route_site(analysis, module, r)
            yield site


def route_site(analysis: Analysis, module: str, g: ir.Graph, r: ir.Route) -> Site:
    """The site of a route's guard (the same object each time it is asked, per analysis: the
    expression checks, the guard checks and the route pairs all read it)."""
    made = _route_sites(analysis)
    site = made.get((module, id(r)))
    if site is None:
        site = made[(module, id(r))] = _route_site(analysis, module, r)
    return site


def _route_sites(analysis: Analysis) -> dict[tuple[str, int], Site]:
    """The route sites made so far for `analysis`, by (module, id of the route): the analysis
    holds its program, so a route's id is not reused while the entry lives."""
    return analysis.memo("route-sites", dict)


def _route_site(analysis: Analysis, module: str, r: ir.Route) -> Site:
    tool = analysis.lookup(module, r.on, ir.Tool) if r.on is not None else None
    on = tool.name if tool is not None else None
    src = analysis.lookup(module, r.src, ir.Skill)
    if r.on is None and src is not None and r.when is not None:  # `when tool == "t"` pins `t`
        tool = _pinned_tool(analysis, analysis.resolve(module, r.src).module, src, r.when)
    statuses = tuple(s.name for s in r.status if s.name in STATUSES) if r.status else ()
    return Site(module, "route", r.when, f"route `{r.src} -> {r.dst}`", tool=tool, on=on,
                statuses=statuses, skill=src.name if src else None)


def _pinned_tool(analysis: Analysis, module: str, src: ir.Skill, when: ir.Expr) -> ir.Tool | None:
    """The tool of `src` (declared in `module`) that a top-level `tool == "name"` conjunct names."""
    items = when.items if isinstance(when, ir.And) else (when,)
    for c in items:
        if not (isinstance(c, ir.Compare) and c.op == "=="):
            continue
        sides = (c.left, c.right)
        names = [s.value for s in sides if isinstance(s, ir.Lit) and isinstance(s.value, str)]
        if names and any(isinstance(s, ir.Path) and s.root == "tool" and not s.segments for s in sides):
            for ref in src.tools:
                t = analysis.lookup(module, ref, ir.Tool)
                if t is not None and t.name == names[0]:
                    return t
    return None


def policy_sites(analysis: Analysis, module: str, p: ir.Policy) -> Iterator[Site]:
    for block in p.blocks:
        tool = None
        if block.tool is not None:
            tool = analysis.lookup(module, block.tool, ir.Tool)
        for rule in block.rules:
            what = f"`{block.moment} {block.tool}`" if block.tool else (
                f"`{block.moment} *`" if block.any_tool else f"`{block.moment}`")
            yield Site(module, block.moment, rule.when,
                       f"the `{rule.action}` rule of policy `{p.name}` ({what})",
                       tool=tool, on=tool.name if tool else None)


# ---------------------------------------------------------------- what a status lets through
# A result that is not a success is not the tool's own value (toolcall, envelopes): a failure's is
# `{error}`, an absence's and a partial result's are envelopes, an invalid or pending call has none
# (null); a denied call keeps what it had (an `after` deny keeps the real result).
_ENVELOPE_KEYS = {"failure": ("error",), "absent": ("absent", "reason", "searched", "note"),
                  "partial": ("rows", "coverage", "source")}
_ENVELOPE_KEYS["denied"] = _ENVELOPE_KEYS["absent"] + _ENVELOPE_KEYS["partial"]
_VALIDATED = frozenset({"success", "failure", "partial", "absent"})  # the arguments passed the schema
_AFTER = ("success", "failure", "partial", "absent")  # results of calls that ran
_ALL_SEEN, _AFTER_SEEN = frozenset(STATUSES), frozenset(_AFTER)


class SchemaView(NamedTuple):
    """How a tool schema types `args`/`result` at a site: exactly (`loose` False), or only for a
    success with null otherwise (`loose`), paths under `keys` being read from the envelope.
    Speed: a named tuple (one per route guard and root)."""

    schema: ir.Schema
    loose: bool = False
    keys: frozenset = frozenset()


def schema_view(site: Site, root: str) -> SchemaView | None:
    """The schema `root` (`args`/`result`) is read against at `site`; None: not typed there.
    Speed: settled once per site and root (the facts and the expression checks both ask, once
    per path); keyed by identity, the entry keeping the site alive. Bounded."""
    key = (id(site), root)
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is site:
        return hit[1]
    if len(_VIEWS) >= 65536:
        _VIEWS.clear()
    view = _schema_view(site, root)
    _VIEWS[key] = (site, view)
    return view


_VIEWS: dict[tuple[int, str], tuple[Any, "SchemaView | None"]] = {}


def _schema_view(site: Site, root: str) -> SchemaView | None:
    tool = site.tool
    schema = None if tool is None else (tool.input if root == "args" else tool.output)
    if schema is None:
        return None
    if site.place not in ("route", "after"):  # a `before` rule, a `check_in`: no result yet
        return SchemaView(schema)
    seen = seen_statuses(site)
    if root == "args":
        return SchemaView(schema) if seen <= _VALIDATED else None
    if seen <= {"success"}:
        return SchemaView(schema)
    return SchemaView(schema, loose=True, keys=_envelope_keys(seen))


@functools.lru_cache(maxsize=256)
def _envelope_keys(seen: frozenset[str]) -> frozenset[str]:
    """The envelope fields of results of the statuses `seen`.
    Speed: a pure function of a few status names, asked for every route and `after` rule."""
    return frozenset(k for s in seen for k in _ENVELOPE_KEYS.get(s, ()))


def seen_statuses(site: Site) -> frozenset[str]:
    """The statuses of the results a route or `after` rule can see: its place's, narrowed by a
    route's `status` set and by top-level `status == "…"` / `status in [...]` conditions."""
    seen = frozenset(site.statuses) if site.statuses else (
        _ALL_SEEN if site.place == "route" else _AFTER_SEEN)  # Speed: the usual sets, made once
    items = site.expr.items if isinstance(site.expr, ir.And) else (site.expr,)
    for c in items:
        named = _status_condition(c)
        if named is not None:
            seen &= named
    return seen


def _status_condition(c: ir.Expr) -> frozenset[str] | None:
    if not isinstance(c, ir.Compare) or c.op not in ("==", "in"):
        return None
    left, right = c.left, c.right
    if not _is_status(left):
        if c.op != "==" or not _is_status(right):
            return None
        left, right = right, left
    values = (right,) if c.op == "==" else right.items if isinstance(right, ir.ListExpr) else None
    if values is None or not all(isinstance(v, ir.Lit) for v in values):
        return None
    return frozenset(v.value for v in values if isinstance(v.value, str))


def _is_status(e: ir.Expr) -> bool:
    return isinstance(e, ir.Path) and e.root == "status" and not e.segments


# ---------------------------------------------------------------- facts
_JSON_TYPES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
               "null": "null", "object": "compound", "array": "compound"}
_KNOWN_TYPES = frozenset(_JSON_TYPES)
_INTEGER = (frozenset({"integer"}), frozenset({"integer", "null"}))


def facts(site: Site) -> Facts:
    """What is known about each key at `site` (schema-level and edge-level atoms).
    Speed: one function per site (the expression and guard checks both ask), keyed by identity,
    the entry keeping the site alive; bounded, and dropped after each `run_checks`."""
    hit = _SITE_FACTS.get(id(site))
    if hit is not None and hit[0] is site:
        return hit[1]
    if len(_SITE_FACTS) >= 65536:
        _SITE_FACTS.clear()
    cache: dict[Key, tuple[Atom, ...]] = {}

    def f(key: Key) -> tuple[Atom, ...]:
        found = cache.get(key)
        if found is None:
            found = cache[key] = _facts(site, key)
        return found
    _SITE_FACTS[id(site)] = (site, f)
    return f


_SITE_FACTS: dict[int, tuple[Site, Facts]] = {}


def _facts(site: Site, key: Key) -> tuple[Atom, ...]:
    if key[0] != "path":
        return ()
    if key[1] in ("args", "result"):
        view = schema_view(site, key[1])
        if view is None or (view.loose and len(key) > 2 and key[2] in view.keys):
            return ()
        return _schema_facts(site.tool, view, key)
    return tuple(_place_facts(site, key))


def _place_facts(site: Site, key: Key) -> Iterator[Atom]:
    """What the place says about a key of the other roots (types, vocabularies, edge facts)."""
    root, segs = key[1], key[2:]
    if root in ("message", "text") and not segs:
        yield _type(key, {"string"}, f"`{root}` is a string")
    elif root == "iteration" and not segs:
        yield _type(key, {"number"}, "`iteration` is a number")
        yield Atom("type", key, types=frozenset({"number"}), integer=True, level="edge",
                   text="`iteration` is a whole number")
        yield Atom("ord", key, op=">=", bound=1, level="edge", text="`iteration` counts from 1")
    elif root == "status" and not segs:
        yield Atom("eq", key, values=STATUSES, level="schema", text=_vocab_text("status"))
        if site.statuses:
            yield Atom("eq", key, values=site.statuses, level="edge",
                       text=f"the route fires only on status {_or(site.statuses)}")
    elif root == "tool" and not segs:
        yield _type(key, {"string"}, "`tool` is a string")
        if site.on is not None:
            yield Atom("eq", key, values=(site.on,), level="edge",
                       text=f"it only applies when `{site.on}` returns")
    elif root == "skill" and not segs:
        yield _type(key, {"string", "null"}, "`skill` is a skill name or null")
        if site.place == "route" and site.skill is not None:
            yield Atom("eq", key, values=(site.skill,), level="edge",
                       text=f"the route is only evaluated while `{site.skill}` is current")
    elif root == "last" and segs in (("tool",), ("status",)):
        if segs == ("status",):
            yield Atom("eq", key, values=STATUSES + (None,), level="schema",
                       text=_vocab_text("last.status") + " (or null)")
        else:
            yield _type(key, {"string", "null"}, "`last.tool` is a tool name or null")


_FACTS: dict[tuple[int, bool, Key], tuple[Any, tuple[Atom, ...]]] = {}


def clear_cache() -> None:
    _FACTS.clear()
    _SITE_FACTS.clear()
    _VIEWS.clear()


def _schema_facts(tool: ir.Tool, view: SchemaView, key: Key) -> tuple[Atom, ...]:
    """What a tool's schema says about `key`; cached per (schema, view, key), since the same
    tool's paths are asked about from every route and rule that mentions them."""
    schema = view.schema
    hit = _FACTS.get((id(schema), view.loose, key))
    if hit is None or hit[0] is not schema:
        if len(_FACTS) > 100_000:
            _FACTS.clear()
        atoms = tuple(_compute_schema_facts(tool, schema, key, view.loose))
        hit = _FACTS[(id(schema), view.loose, key)] = (schema, atoms)
    return hit[1]


def _compute_schema_facts(tool: ir.Tool, schema: ir.Schema, key: Key, loose: bool) -> Iterator[Atom]:
    field = walk_schema(schema.json, key[2:])
    if not isinstance(field, Field):
        return
    node = field.schema
    values = _enum(node)
    if values is not None:
        values += (None,) if field.optional else ()
        yield Atom("eq", key, values=values + ((None,) if loose else ()), level="schema",
                   text=None, render=partial(_enum_text, tool.name, key, values, loose))
    types = schema_types(node)
    if types is not None and types <= _KNOWN_TYPES:
        mapped = {_JSON_TYPES[t] for t in types} | ({"null"} if field.optional or loose else set())
        yield Atom("type", key, types=frozenset(mapped), integer=types in _INTEGER, level="schema",
                   text=None, render=partial(_type_text, tool.name, key, types, field.optional, loose))


# Speed: the texts of schema facts name the tool, so each is made only when a diagnostic reads it.
def _enum_text(tool: str, key: Key, values: tuple, loose: bool) -> str:
    shown = ", ".join([_show(v) for v in values])
    return f"`{key_text(key)}` is one of {shown} ({_where(tool, key)}){_otherwise(loose)}"


def _type_text(tool: str, key: Key, types: frozenset, optional: bool, loose: bool) -> str:
    shown = type_names(types) + (" or absent" if optional else "")
    return f"`{key_text(key)}` is {shown} ({_where(tool, key)}){_otherwise(loose)}"


def _where(tool: str, key: Key) -> str:
    return f"{'input' if key[1] == 'args' else 'output'} schema of `{tool}`"


def _otherwise(loose: bool) -> str:
    return ", or null when the status is not `success`" if loose else ""


def _enum(node: Mapping) -> tuple | None:
    d = node._d if type(node) is FrozenMap else node  # Speed: its dict's C methods
    if "const" in d and _plain_scalar(d["const"]):
        return (d["const"],)
    enum = d.get("enum")
    if isinstance(enum, (list, tuple)) and enum and (
            _SCALAR_TYPES.issuperset(map(type, enum))  # Speed: plain JSON values, in C
            or all(v is None or isinstance(v, _SCALARS) for v in enum)):
        return tuple(enum)
    return None


_SCALARS = (bool, int, float, str)
_SCALAR_TYPES = frozenset({bool, int, float, str, type(None)})


def _plain_scalar(v: Any) -> bool:
    return v is None or isinstance(v, _SCALARS)


def _type(key: Key, types: set, text: str) -> Atom:
    return Atom("type", key, types=frozenset(types), level="schema", text=text)


def _vocab_text(name: str) -> str:
    return f"`{name}` is one of " + ", ".join(f"`{s}`" for s in STATUSES)


def _or(names: tuple[str, ...]) -> str:
    shown = [f"`{n}`" for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


# Speed: `json.dumps` with a non-default option builds a new encoder on every call; this one
# has exactly the options `json.dumps(v, ensure_ascii=False)` would use, so the text is the same.
_JSON = json.JSONEncoder(ensure_ascii=False)


def _show(v: Any) -> str:
    return "`" + _JSON.encode(v) + "`"


def scalar_root(root: str) -> str | None:
    """For roots whose value is a plain string or number: what it is (paths into it are null)."""
    return _SCALAR_ROOTS.get(root)
