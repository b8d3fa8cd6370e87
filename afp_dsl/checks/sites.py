"""What is known about where an expression stands: its place, roots, statuses and schema facts.

Role:       shared by exprs (AFP303–306), guards (AFP208), graph (AFP205/AFP210) and policies
            (AFP401): a `Site` is one expression with its place (`sitelist` lists them), and
            `facts(site)` says what the place and the tool's schemas (`schemafacts`) tell about
            each key; a site keeps what is settled about it.
Invariants: pure; a schema the walker does not understand (composition, remote `$ref`) yields
            no facts rather than a guess; `result` is the output schema only where the site sees
            nothing but `success` results, and `args` the input schema except in a route asking
            for calls that may not have passed validation (`schema_view`): elsewhere, `before`
            rules included, a call the schema rules out is one the pipeline refuses.
"""
from __future__ import annotations

import functools
from typing import Any, Iterator, NamedTuple

from .. import ir
from . import schemafacts
from .schemafacts import schema_facts
from .schemas import is_broken
from .solver import Atom, Facts, Key, refute

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


class Site:
    """One expression: its module, place, the text that names its owner, and typing context.
    Equal (and hashed) by those eight fields, as a named tuple of them would be; `_replace`
    gives a copy with some changed. A site keeps what the checks settle about it: the facts
    of each key (`facts`) and its schema views (`schema_view`); none of them refers back to
    the site, so a site is freed as soon as its analysis lets go of it.
    Speed: a plain slotted class (one per route guard): its own caches are slot reads where
    global caches keyed by identity cost a key, a lookup and an identity test per question."""

    __slots__ = ("module", "place", "expr", "owner", "tool", "on", "statuses", "skill",
                 "hears", "names", "skills", "_known", "_args", "_result", "_never")

    def __init__(self, module: str, place: str, expr: ir.Expr, owner: str,
                 tool: ir.Tool | None = None, on: str | None = None,
                 statuses: tuple[str, ...] = (), skill: str | None = None,
                 hears: tuple[str, ...] = (), names: tuple[str, ...] = (),
                 skills: tuple[str, ...] = ()):
        self.module = module
        self.place = place
        self.expr = expr
        self.owner = owner
        self.tool = tool  # whose `args` / `result` the expression reads
        self.on = on  # a route's `on` tool / a before/after block's tool (the name seen)
        self.statuses = statuses  # a route's `status` set
        self.skill = skill  # a route's source skill
        self.hears = hears  # a route without `on`: the tools of its source skill (() unknown)
        self.names = names  # every tool name a run can see: the program's tools and built-ins
        self.skills = skills  # every skill name the program declares (() unknown)
        self._known: dict[Key, tuple[Atom, ...]] = {}  # facts by key
        self._args = self._result = _UNSET  # schema views by root, once settled
        self._never: Any = _UNSET  # `never()`, once settled

    def _fields(self) -> tuple:
        return (self.module, self.place, self.expr, self.owner, self.tool, self.on,
                self.statuses, self.skill, self.hears)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Site:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "Site(" + ", ".join(f"{f}={v!r}" for f, v in zip(_SITE_FIELDS, self._fields())) + ")"

    def _replace(self, **changes: Any) -> "Site":
        """A copy with `changes` (nothing settled about this site carries over)."""
        return Site(**{**dict(zip(_SITE_FIELDS, self._fields())), "names": self.names,
                       "skills": self.skills, **changes})

    def never(self) -> Any:
        """`solver.refute` of the condition with this site's facts: its `Verdict` when it can
        never hold, else None; settled once (the guard check, AFP208, and the route checks,
        which count such a route as never firing, both ask)."""
        if self._never is _UNSET:
            self._never = refute([self.expr], self.facts)
        return self._never

    def facts(self, key: Key) -> tuple[Atom, ...]:
        """What is known about `key` at this site (schema-level and edge-level atoms), settled
        once per key (the expression and guard checks both ask)."""
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = _facts(self, key)
        return found


_SITE_FIELDS = ("module", "place", "expr", "owner", "tool", "on", "statuses", "skill", "hears")
_UNSET: Any = object()


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
_AFTER_OVERSIZE = _AFTER_SEEN | {"invalid"}  # and a result over `max_result_chars` (refused)
_AFTER_ANY = _AFTER_OVERSIZE | {"denied"}  # and an inner agent's refused run (`impl = agent(…)`)


def _after_seen(tool: ir.Tool | None) -> frozenset[str]:
    """The statuses an `after` rule sees: calls that ran, `invalid` for a refused oversize
    result when the tool has a `max_result_chars`, and `denied` for an agent run as the tool
    that its own policies refused (either when the tool is not known: `after *`)."""
    if tool is None:
        return _AFTER_ANY
    seen = _AFTER_OVERSIZE if tool.max_result_chars is not None else _AFTER_SEEN
    return seen | {"denied"} if isinstance(tool.impl, ir.AgentImpl) else seen


class SchemaView(NamedTuple):
    """How a tool schema types `args`/`result` at a site: exactly (`loose` False), or only for a
    success with null otherwise (`loose`; `"answer"`: an agent's answer, whose fields may be
    null even on a success), paths under `keys` being read from the envelope.
    Speed: a named tuple (one per route guard and root)."""

    schema: ir.Schema
    loose: bool | str = False
    keys: frozenset = frozenset()
    text: bool = False  # the whole result may be an inner agent's refusal (text), not the schema's


def schema_view(site: Site, root: str) -> SchemaView | None:
    """The schema `root` (`args`/`result`) is read against at `site`; None: not typed there.
    Speed: settled once per site and root (the facts and the expression checks both ask, once
    per path) and kept by the site."""
    if root == "args":
        view = site._args
        if view is _UNSET:
            view = site._args = _schema_view(site, root)
        return view
    view = site._result  # (any other root reads the output schema, as `_schema_view` does)
    if view is _UNSET:
        view = site._result = _schema_view(site, root)
    return view


def _schema_view(site: Site, root: str) -> SchemaView | None:
    tool = site.tool
    schema = None if tool is None else (tool.input if root == "args" else tool.output)
    if schema is None or is_broken(schema):  # (an invalid schema: its AFP301 says it all)
        return None
    if root == "args":
        return None if _picks_unvalidated(site) else SchemaView(schema)
    if site.place not in ("route", "after"):  # a `before` rule, a `check_in`: no result yet
        return SchemaView(schema)
    seen = seen_statuses(site)
    agent = isinstance(tool.impl, ir.AgentImpl)
    if seen <= {"success"} and not agent:
        return SchemaView(schema)
    if seen <= {"success"}:  # an agent's answer: JSON text or prose, never validated against
        # `output` (docs/language.md §5.2), so a field may be null: `result.x == null` holds
        return SchemaView(schema, loose="answer", keys=frozenset(), text=True)
    text = agent and bool(seen & {"denied", "success"})
    return SchemaView(schema, loose=True, keys=_envelope_keys(seen), text=text)


def _picks_unvalidated(site: Site) -> bool:
    """Does a route ask for calls whose arguments may not have passed validation: a `status`
    set or top-level status condition naming `invalid`, `denied` or `pending` (`status invalid
    when args.n == "oops"`)? Only such a route leaves `args` untyped. Elsewhere (a route on any
    status, a `before` or `after` rule, a `check_in`) a field or value the input schema rules
    out can only be in a call the pipeline refuses, so the guard never holds for a call that
    passes (a `before` rule runs ahead of validation, but every call it sees that the schema
    rules out is then refused as invalid)."""
    if site.place != "route":
        return False
    seen = seen_statuses(site)
    return seen != _ALL_SEEN and not seen <= _VALIDATED


@functools.lru_cache(maxsize=256)
def _envelope_keys(seen: frozenset[str]) -> frozenset[str]:
    """The envelope fields of results of the statuses `seen`.
    Speed: a pure function of a few status names, asked for every route and `after` rule."""
    return frozenset(k for s in seen for k in _ENVELOPE_KEYS.get(s, ()))


def seen_statuses(site: Site) -> frozenset[str]:
    """The statuses of the results a route or `after` rule can see: its place's, narrowed by a
    route's `status` set and by top-level `status == "…"` / `status in [...]` conditions."""
    seen = frozenset(site.statuses) if site.statuses else (
        _ALL_SEEN if site.place == "route" else _after_seen(site.tool))  # Speed: sets made once
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


def facts(site: Site) -> Facts:
    """What is known about each key at `site` (schema-level and edge-level atoms): the site's
    own `facts`, settled once per key and kept by the site."""
    return site.facts


def _facts(site: Site, key: Key) -> tuple[Atom, ...]:
    if key[0] != "path":
        return ()
    if key[1] in ("args", "result"):
        view = schema_view(site, key[1])
        if view is None or (view.loose and len(key) > 2 and key[2] in view.keys) or (
                view.text and len(key) == 2):
            return ()
        return schema_facts(site.tool, view.schema, view.loose, key)
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
        if site.place == "route":  # (semantics §4: decided before the next LLM call)
            yield Atom("ord", key, op=">=", bound=2, level="edge",
                       text="a route is decided at the iteration after its tool ran, so "
                            "`iteration` is at least 2 there")
        else:
            yield Atom("ord", key, op=">=", bound=1, level="edge",
                       text="`iteration` counts from 1")
    elif root == "status" and not segs:
        yield Atom("eq", key, values=STATUSES, level="schema", text=_vocab_text("status"))
        if site.statuses:
            yield Atom("eq", key, values=site.statuses, level="edge",
                       text=f"the route fires only on status {_or(site.statuses)}")
        elif site.place == "after":
            seen = tuple(s for s in STATUSES if s in _after_seen(site.tool))
            yield Atom("eq", key, values=seen, level="edge",
                       text=f"an `after` rule sees only calls that ran: status {_or(seen)}")
    elif root == "tool" and not segs:
        yield _type(key, {"string"}, "`tool` is a string")
        if site.on is not None:
            yield Atom("eq", key, values=(site.on,), level="edge",
                       text=f"it only applies when `{site.on}` returns")
        elif site.hears:
            yield Atom("eq", key, values=site.hears, level="edge",
                       text=f"the route hears only the tools of `{site.skill}`: {_or(site.hears)}")
        elif site.names:  # (`before *`: any tool, but only a tool the program declares)
            yield Atom("eq", key, values=site.names, level="schema", text=_names_text("tool"))
    elif root == "skill" and not segs:
        yield _type(key, {"string", "null"}, "`skill` is a skill name or null")
        if site.place == "route" and site.skill is not None:
            yield Atom("eq", key, values=(site.skill,), level="edge",
                       text=f"the route is only evaluated while `{site.skill}` is current")
        elif site.skills:
            yield Atom("eq", key, values=site.skills + (None,), level="schema",
                       text="`skill` is the name of a skill the program declares, or null")
    elif root == "last" and segs in (("tool",), ("status",)):
        if segs == ("status",):
            yield Atom("eq", key, values=STATUSES + (None,), level="schema",
                       text=_vocab_text("last.status") + " (or null)")
        else:
            yield _type(key, {"string", "null"}, "`last.tool` is a tool name or null")
            if site.names:
                yield Atom("eq", key, values=site.names + (None,), level="schema",
                           text=_names_text("last.tool") + ", or null")


def clear_cache() -> None:
    schemafacts.clear_cache()


def _type(key: Key, types: set, text: str) -> Atom:
    return Atom("type", key, types=frozenset(types), level="schema", text=text)


def _names_text(name: str) -> str:
    return (f"`{name}` is the name of a tool the program declares, or of a built-in "
            "(`read_skill`, `skip_step`)")


def _vocab_text(name: str) -> str:
    return f"`{name}` is one of " + ", ".join(f"`{s}`" for s in STATUSES)


def _or(names: tuple[str, ...]) -> str:
    shown = [f"`{n}`" for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def scalar_root(root: str) -> str | None:
    """For roots whose value is a plain string or number: what it is (paths into it are null)."""
    return _SCALAR_ROOTS.get(root)
