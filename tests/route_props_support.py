"""Random small skill graphs with guarded routes, scripts for them, and a model of the cursor
written from the runtime specification, for tests/test_route_props.py.

Role:       `cases()` draws a `Case`: a graph (entries with and without `when`, guarded and bare
            routes), the tools each skill owns, a `before` policy that denies or asks above a
            threshold, the user's message, a mock script (tool calls, `read_skill` picks, then an
            answer) and the decisions a person gives at each pause. `expected(case)` replays
            the script against the spec's rules (semantics §4, §7, §8, §10), not against the
            interpreter's code: the cursor moves, the evidence rows, the conflicts, the status of
            every call and which calls execute.
Invariants: every tool's result is a function of its arguments (`{n: v, kind: k}`, or a raise
            for `k == "fail"`), so the model knows every result without running anything; every
            skill is part of the graph; `max_iterations` leaves room for the whole script.
"""
from __future__ import annotations

import attrs
from hypothesis import strategies as st

from afp_dsl.effects import Effects, counter_ids
from afp_dsl.store import memory
from run_props_support import Scripted

import afp_dsl as afp

TOOLS = ("t0", "t1", "t2")
KINDS = ("x", "y", "fail")
MESSAGES = ("go now", "hello there")
ENTRY_WHENS = ("", "", ' when message mentions "go"', " when iteration == 2")
STATUSES = ("success", "failure", "denied")


# ---------------------------------------------------------------- guards (text and meaning)
def _num(result, key):
    v = result.get(key) if isinstance(result, dict) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _gt(result, k) -> bool:  # language §6: an ordered comparison needs two numbers, else false
    n = _num(result, "n")
    return n is not None and n > k


def _kind_is(result, x) -> bool:  # a missing path is null, and null == "x" is false
    return isinstance(result, dict) and result.get("kind") == x


CONDS = {  # form → (guard text, meaning on the result)
    "gt": (lambda k, x: f"result.n > {k}", lambda r, k, x: _gt(r, k)),
    "not_gt": (lambda k, x: f"not result.n > {k}", lambda r, k, x: not _gt(r, k)),
    "kind": (lambda k, x: f'result.kind == "{x}"', lambda r, k, x: _kind_is(r, x)),
    "and": (lambda k, x: f'result.n > {k} and result.kind == "{x}"',
            lambda r, k, x: _gt(r, k) and _kind_is(r, x)),
    "or": (lambda k, x: f'result.n <= {k} or result.kind == "{x}"',
           lambda r, k, x: (_num(r, "n") is not None and _num(r, "n") <= k) or _kind_is(r, x)),
}


@attrs.frozen
class Route:
    src: str
    dst: str
    on: str | None = None
    statuses: tuple[str, ...] = ()
    cond: tuple[str, int, str] | None = None  # (form, k, x)

    @property
    def deterministic(self) -> bool:
        return self.on is not None or bool(self.statuses) or self.cond is not None

    def text(self) -> str:
        out = f"route {self.src} -> {self.dst}"
        if self.on:
            out += f" on {self.on}"
        if self.statuses:
            out += " status " + (self.statuses[0] if len(self.statuses) == 1
                                 else "[" + ", ".join(self.statuses) + "]")
        if self.cond:
            form, k, x = self.cond
            out += " when " + CONDS[form][0](k, x)
        return out

    def holds(self, res: "Res", own: tuple[str, ...]) -> bool:
        """Semantics §4 and docs/semantics.md §4: `on T` hears only T; without `on`, only the
        source skill's own tools; then the status, then the guard."""
        if (self.on is not None and res.tool != self.on) or (self.on is None and res.tool not in own):
            return False
        if self.statuses and res.status not in self.statuses:
            return False
        return self.cond is None or CONDS[self.cond[0]][1](res.result, *self.cond[1:])


@attrs.frozen
class Case:
    skills: tuple[tuple[str, ...], ...]  # skill k's tools
    entries: tuple[tuple[str, str], ...]  # (skill, when text)
    routes: tuple[Route, ...]
    rules: tuple[tuple[str, str, int], ...]  # (tool, deny|ask, threshold): `before tool`
    message: str
    script: tuple  # replies: a list of (tool, args) or a final text
    decisions: tuple[bool, ...]  # approve (True) or decline, per pause, in order; then approve

    def text(self, ask: str = "ask") -> str:
        """The spec; `ask` replaces the verb of the asking rules (`allow`: the same run, no pause)."""
        policy = " policies = [p]" if self.rules else ""
        lines = [f"agent g {{ graph = m max_iterations = {len(self.script) + 2}{policy} }}"]
        lines += [f'tool {t} {{ description = "{t}" input {{ v: integer, k: string }} }}' for t in TOOLS]
        for i, own in enumerate(self.skills):
            tools = f" tools = [{', '.join(own)}]" if own else ""
            lines.append(f'skill s{i} {{ description = "S{i}"{tools} }}')
        body = [f"entry {s}{w}" for s, w in self.entries] + [r.text() for r in self.routes]
        lines.append("graph m {\n  " + "\n  ".join(body) + "\n}")
        if self.rules:
            blocks = [f'before {t} {{ {ask if v == "ask" else v} when args.v > {k} because "{v} {t}" }}'
                      for t, v, k in self.rules]
            lines.append("policy p {\n  " + "\n  ".join(blocks) + "\n}")
        return "\n".join(lines) + "\n"

    def own(self, skill: str | None) -> tuple[str, ...]:
        return self.skills[int(skill[1:])] if skill else ()


# ---------------------------------------------------------------- drawing a case
@st.composite
def _route(draw, names: list[str], skills: tuple, hot: str) -> Route:
    src = draw(st.sampled_from([hot, hot] + names))  # (the first entry's edges fire more often)
    dst = draw(st.sampled_from([n for n in names if n != src]))
    own = skills[int(src[1:])]
    if draw(st.integers(0, 4)) == 0:
        return Route(src, dst)  # bare: only the model can take it
    on = draw(st.one_of(st.none(), st.sampled_from(own))) if own else None
    statuses = tuple(draw(st.lists(st.sampled_from(STATUSES), unique=True, max_size=2)))
    cond = draw(st.one_of(st.none(), st.tuples(st.sampled_from(sorted(CONDS)), st.sampled_from(range(10)),
                                              st.sampled_from(KINDS[:2]))))
    if on is None and not statuses and cond is None:
        cond = ("gt", draw(st.integers(0, 9)), "x")
    return Route(src, dst, on, statuses, cond)


def _calls(names: list[str], hot: tuple[str, ...]):
    tool = st.tuples(st.sampled_from(TOOLS + hot + hot), st.fixed_dictionaries(
        {"v": st.sampled_from(range(11)), "k": st.sampled_from(KINDS)}))
    pick = st.tuples(st.just("read_skill"), st.fixed_dictionaries({"id": st.sampled_from(names)}))
    return st.lists(st.one_of(tool, tool, pick), min_size=1, max_size=3)


@st.composite
def cases(draw, asks: bool = False) -> Case:
    """A case; with `asks`, one of the `before` rules asks (so runs pause more often)."""
    n = draw(st.integers(2, 4))
    names = [f"s{i}" for i in range(n)]
    skills = [set(draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2))) for _ in names]
    for j, t in enumerate(TOOLS):  # every tool is some skill's (else the agent has no such tool)
        skills[j % n].add(t)
    skills = tuple(tuple(sorted(s)) for s in skills)
    entries = tuple(draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(ENTRY_WHENS)),
                                  min_size=1, max_size=2, unique_by=lambda e: e[0])))
    hot = entries[0][0]
    routes = list(dict.fromkeys(draw(st.lists(_route(names, skills, hot), max_size=6))))
    mentioned = {s for s, _ in entries} | {r.src for r in routes} | {r.dst for r in routes}
    routes += [Route(entries[0][0], s) for s in names if s not in mentioned]  # (all in the graph)
    drawn = draw(st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from(["deny", "ask"]),
                                    st.integers(3, 9)), unique_by=lambda r: r[0], max_size=2))
    hot_tools = skills[int(hot[1:])] or TOOLS  # (a skill may own no tool)
    if asks and not any(verb == "ask" for _, verb, _ in drawn):
        t = draw(st.sampled_from(hot_tools))
        drawn = [(t, "ask", draw(st.integers(0, 6)))] + [r for r in drawn if r[0] != t]
    script = draw(st.lists(_calls(names, hot_tools), min_size=2, max_size=4)) + ["done"]
    out_of_hot = [r for r in routes if r.src == hot and r.deterministic]
    first = _witness(draw, out_of_hot, skills)
    others = [r for r in out_of_hot if first is None or r.dst != first[1].dst]  # (a conflict)
    witnesses = [w[0] for w in (first, _witness(draw, others, skills)) if w]
    script[0] = witnesses + script[0][:3 - len(witnesses)]  # (calls that edges out of `hot` hear)
    return Case(skills, entries, tuple(routes), tuple(drawn), draw(st.sampled_from(MESSAGES)),
                tuple(script), tuple(draw(st.lists(st.booleans(), max_size=4))))


def _witness(draw, edges: list[Route], skills: tuple):
    """(a call whose result one of `edges` holds for if it executes, that edge), or None."""
    if not edges or not draw(st.booleans()):
        return None
    edge = draw(st.sampled_from(edges))
    tools = (edge.on,) if edge.on else skills[int(edge.src[1:])]
    calls = [(t, {"v": v, "k": k}) for t in tools for v in range(11) for k in KINDS
             if edge.holds(_executed(t, v, k), tools)]
    return (draw(st.sampled_from(calls)), edge) if calls else None


def _executed(tool: str, v: int, k: str) -> "Res":
    """The result of an executed call: the body raises for `k == "fail"` (semantics §7, 5.)."""
    if k == "fail":
        return Res((0, 0), tool, "failure", {"error": "boom"})
    return Res((0, 0), tool, "success", {"n": v, "kind": k})


# ---------------------------------------------------------------- running a case
class Bodies:
    """Host bodies for the tools: the result is a function of the arguments; executions are logged."""

    def __init__(self):
        self.log: list[tuple[str, int, str]] = []

    def bound(self) -> dict:
        return {t: (lambda v, k, _t=t: self._run(_t, v, k)) for t in TOOLS}

    def _run(self, tool: str, v: int, k: str):
        self.log.append((tool, v, k))
        if k == "fail":
            raise ValueError("boom")
        return {"n": v, "kind": k}


def session(case: Case, ask: str = "ask", decisions: tuple[bool, ...] | None = None):
    """Run the case's message, resuming every pause with the next decision (approve once they run
    out): (bodies, [result of the run and of each resume], [executions so far, after each])."""
    from afp_dsl.runner import approve, decline
    bodies = Bodies()
    agent = afp.load(case.text(ask)).agent("g", provider=Scripted(list(case.script)), tools=bodies.bound(),
                                           store=memory(None), effects=Effects(run_ids=counter_ids("r")))
    results = [agent.run(case.message)]
    done = [len(bodies.log)]
    left = list(case.decisions if decisions is None else decisions)
    while results[-1].outcome == "paused" and len(results) < 20:
        r = results[-1]
        yes = left.pop(0) if left else True
        results.append(agent.resume(r.checkpoint, (approve if yes else decline)(r.checkin, by="p")))
        done.append(len(bodies.log))
    return bodies, results, done


# ---------------------------------------------------------------- the model
@attrs.frozen
class Res:
    call: tuple[int, int]  # (iteration, position in the reply)
    tool: str
    status: str
    result: object


@attrs.define
class Expected:
    moves: list = attrs.Factory(list)  # (iteration, from, to, cause, superseded pick)
    rows: list = attrs.Factory(list)  # (iteration, from, to, call, fired)
    conflicts: list = attrs.Factory(list)  # (iteration, winner's to, [losers' to])
    statuses: list = attrs.Factory(list)  # (call, tool, status)
    executed: list = attrs.Factory(list)  # (call, tool, v, k)
    pauses: int = 0


def reachable(case: Case, cursor: str | None) -> list[str]:
    """Semantics §4: successors over any edge plus the entries, minus the cursor; cold: the entries."""
    entries = [s for s, _ in case.entries]
    if cursor is None:
        return entries
    return [s for s in dict.fromkeys([r.dst for r in case.routes if r.src == cursor] + entries)
            if s != cursor]


def cold_start(case: Case, iteration: int) -> str | None:
    """Semantics §4: the first unconditional entry, or the first whose `when` holds."""
    for skill, when in case.entries:
        if not when or ("mentions" in when and "go" in case.message.split()) or \
                ("iteration" in when and iteration == 2):
            return skill
    return None


def _route_step(case: Case, it: int, cursor: str, batch: list[Res], out: Expected):
    """Semantics §4 (1.): results in call order, the cursor's deterministic edges in declaration
    order, the first that holds fires; a later result matching another target is a conflict."""
    edges = [r for r in case.routes if r.src == cursor and r.deterministic]
    winner, losers = None, []
    for res in batch:
        for edge in edges:
            held = edge.holds(res, case.own(cursor))
            out.rows.append([it, edge.src, edge.dst, res.call, held])
            if held:
                break
        else:
            continue
        if winner is None:
            winner = edge
            continue
        out.rows[-1][-1] = False  # held, but an earlier result's edge fired
        if edge.dst != winner.dst:
            losers.append(edge.dst)
    if losers:
        out.conflicts.append((it, winner.dst, losers))
    return winner


def _decide(case: Case, it: int, cursor: str | None, batch: list[Res], pick: str | None,
            out: Expected) -> tuple[str | None, str, str | None]:
    """Semantics §4: (to, cause, the pick it supersedes): "A pick that loses to a declared edge
    is recorded as superseded" (and, docs/semantics.md §4, one that loses to a cold start)."""
    if cursor is None:
        cold = cold_start(case, it)
        if cold is not None:
            return cold, "entry", pick if pick != cold else None
        if it > 1 and pick is not None and pick in reachable(case, None):
            return pick, "model-pick", None
        return None, "none", None
    winner = _route_step(case, it, cursor, batch, out)
    if winner is not None:
        return winner.dst, "route", pick if pick != winner.dst else None
    if pick is not None and pick in reachable(case, cursor):
        return pick, "model-pick", None
    return cursor, "stay", None


def _policy(case: Case, tool: str, v: int, ask: str) -> str:
    """Semantics §8: the rule for the moment decides when its `when` holds, else the link allows."""
    verb = next((verb for t, verb, k in case.rules if t == tool and v > k), "allow")
    return ask if verb == "ask" else verb


def expected(case: Case, ask: str = "ask", decisions: tuple[bool, ...] | None = None) -> Expected:
    out, left = Expected(), list(case.decisions if decisions is None else decisions)
    cursor, batch, pick = None, [], None
    for it, reply in enumerate(case.script, 1):
        src = cursor
        cursor, cause, superseded = _decide(case, it, cursor, batch, pick, out)
        out.moves.append((it, src, cursor, cause, superseded))
        if isinstance(reply, str):
            break
        batch, pick = [], None
        for j, (tool, args) in enumerate(reply, 1):
            if tool == "read_skill":  # semantics §3: the gate; the last accepted pick counts
                ok = args["id"] in reachable(case, cursor)
                pick = args["id"] if ok else pick
                batch.append(Res((it, j), tool, "skip", None))
                continue
            verb = _policy(case, tool, args["v"], ask)
            if verb == "ask":
                out.pauses += 1
                verb = "allow" if (left.pop(0) if left else True) else "deny"
            status, result = "denied", None
            if verb == "allow":  # semantics §7: executed; a raise is a failure
                out.executed.append(((it, j), tool, args["v"], args["k"]))
                done = _executed(tool, args["v"], args["k"])
                status, result = done.status, done.result
            out.statuses.append(((it, j), tool, status))
            batch.append(Res((it, j), tool, status, result))
    return out
