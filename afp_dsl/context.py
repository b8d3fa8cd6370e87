"""Context composition: system prompt, tools and their provenance, every iteration (§2).

Role:       pure; reads the plan and the run state, returns what the LLM call is given plus
            the provenance the `context.composed` event records.
Invariants: composed from scratch each iteration; a failing `when` is false with its reason,
            never an exception; pieces keep the agent's declaration order; every running
            procedure (an active skill with steps left) offers only its current step's tool.
"""
from __future__ import annotations

from typing import Any

import attrs

from . import skills as sk
from .evaluate import Env, evaluate
from .evidence_keys import hide
from .plan import Plan
from .providers.base import ToolSpec
from .source import Span
from .state import RunState


@attrs.frozen
class Piece:
    kind: str  # system | steering | fact | instruction | skill | step
    name: str
    source: Span | None
    reason: str  # always | when | entry | route | model-pick | continuity | step
    text: str
    detail: Any = None
    caused_by: tuple[str, ...] = ()


@attrs.frozen
class Offered:
    spec: ToolSpec
    origin: str  # baseline | skill | step | builtin
    skill: str | None = None


@attrs.frozen
class Composition:
    system: str
    pieces: tuple[Piece, ...]
    skipped: tuple[dict, ...]
    offered: tuple[Offered, ...]
    active: tuple[str, ...]
    procedures: tuple[tuple[Any, int], ...]  # every running procedure, the cursor's first
    names: frozenset[str]  # of the offered tools: what a call may name

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return tuple(o.spec for o in self.offered)


def active_skills(plan: Plan, state: RunState) -> list[tuple[str, str, tuple[str, ...]]]:
    """(skill, reason, caused_by): persistent bases, the cursor, then opened skills."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    seen: set[str] = set()

    def add(name: str, reason: str, cause: tuple[str, ...] = ()) -> None:
        if name not in seen and name in plan.skills:
            seen.add(name)
            out.append((name, reason, cause))

    cause = (state.cursor_event,) if state.cursor is not None and state.cursor_event else ()
    if plan.graph is not None:
        for base in plan.graph.bases:  # (the cursor's own base: with the move that put it there)
            if base == state.cursor:
                add(base, state.cursor_cause or "entry", cause)
            add(base, "entry")
    if state.cursor is not None:
        add(state.cursor, state.cursor_cause or "entry", cause)
    for name in state.opened:
        add(name, "model-pick")
    return out


def _env(plan: Plan, state: RunState, active: frozenset[str]) -> Env:
    last = state.last_batch[-1] if state.last_batch else state.last_result
    last_root = {"tool": last.tool, "status": last.status, "result": last.result} if last else None
    roots = {"message": state.message, "iteration": state.iteration, "skill": state.cursor,
             "last": last_root}
    # `returned(t)`: a result of the previous iteration's batch is `t`'s, whatever its status
    # (the original's on-tool-return trigger); not "ever in this run"
    return Env(roots, frozenset(r.tool for r in state.last_batch), active)


def compose(plan: Plan, state: RunState, red: Any = None) -> Composition:
    """The pieces of the system prompt with their provenance; `red`: the run's redactor, for the
    evidence of a `when` read from under a redacted key (`evidence_keys.hide`)."""
    active = active_skills(plan, state)
    names = frozenset(n for n, _, _ in active)
    pieces: list[Piece] = []
    skipped: list[dict] = []
    if plan.agent.system.value:
        pieces.append(Piece("system", plan.agent.name, plan.agent.span, "always",
                            plan.agent.system.value))
    env = None
    for c in plan.context:
        if c.when is None:
            pieces.append(Piece(c.kind, c.decl.name, c.decl.span, "always", c.text))
            continue
        env = env or _env(plan, state, names)
        ev = evaluate(c.when, env, clip=False, absent=True)  # (shortened after redaction: `clip_evidence`)
        detail = [{"text": x.text, "actual": x.actual, "passed": x.passed,
                   **({"reason": x.reason} if x.reason else {})}
                  for x in hide(red, c.when, ev.conditions)]
        if ev.holds:
            pieces.append(Piece(c.kind, c.decl.name, c.decl.span, "when", c.text, detail))
        else:
            span = c.decl.span
            skipped.append({"kind": c.kind, "name": c.decl.name, "conditions": detail,
                            "error": ev.error, "source": [span.file, span.start, span.end]})
    ordered = _skill_order(state, active)
    for name, reason, cause in ordered:
        info = plan.skills[name]
        pieces.append(Piece("skill", name, info.decl.span, reason, info.body, None, cause))
    procs = sk.procedures(plan, [n for n, _, _ in _proc_order(state, active)], state.steps)
    for skill, k in procs:
        pieces.append(Piece("step", skill.name, skill.steps[k].span, "step",
                            sk.banner(skill, k)))  # (the banner alone, semantics §2)
    pieces = [p for p in pieces if p.text.strip()]  # (blanks only: empty too)
    system = "\n\n".join(p.text for p in pieces)
    offered = _tools(plan, state, names, procs)
    return Composition(system, tuple(pieces), tuple(skipped), offered,
                       tuple(n for n, _, _ in active), procs,
                       frozenset(o.spec.name for o in offered))


def _skill_order(state: RunState, active: list) -> list:
    """Bodies: persistent bases first, then the current skill, then opened skills: the order
    `active_skills` gives. The bases keep their declaration order whichever of them is the
    cursor, so the prompt does not reorder itself when the cursor moves off a base."""
    return list(active)


def _proc_order(state: RunState, active: list) -> list:
    cur = [a for a in active if a[0] == state.cursor]
    return cur + [a for a in active if a[0] != state.cursor]


def _tools(plan: Plan, state: RunState, active: frozenset[str], procs) -> tuple[Offered, ...]:
    out: list[Offered] = []
    seen: set[str] = set()
    at_step = {skill.name: k for skill, k in procs}  # a running procedure offers its step's tool

    def add(spec: ToolSpec, origin: str, skill: str | None = None) -> None:
        if spec.name not in seen:
            seen.add(spec.name)
            out.append(Offered(spec, origin, skill))

    for name in plan.baseline:
        add(plan.tools[name].spec(), "baseline")
    for name in plan.skill_order:
        info = plan.skills[name]
        if info.scoped and name not in active:
            continue
        if name in at_step:  # the step's banner wins over a plain offer of the same tool
            step = Offered(sk.step_tool_spec(plan, info, at_step[name]), "step", name)
            if step.spec.name in seen:
                out[:] = [step if o.spec.name == step.spec.name and o.origin != "step" else o
                          for o in out]
            else:
                add(step.spec, "step", name)
            continue
        for t in info.tools:
            add(plan.tools[t].spec(), "skill", name)
    if plan.skills:
        add(sk.read_skill_spec(plan, state.cursor), "builtin")
    if procs:
        add(sk.skip_step_spec(procs), "builtin")
    return tuple(out)
