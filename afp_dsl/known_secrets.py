"""What a run's redactor knows before its first event: the secrets the spec itself holds, and
those of the history a resumed or follow-up run carries; and, after the run, its scrubber rebuilt.

Role:       `runner` primes every run's `Redactor` here (split from `runner`), so a secret under a
            redacted key in `fact` data, a `returns` value, an earlier call's arguments or an
            earlier tool result is scrubbed from the first event on. `run_scrubber` rebuilds a
            stored run's redaction for what is drawn from its spec (the report's graph).
Invariants: learning counts no redaction and records nothing; a tool result's text is read as the
            data it was recorded as (lenient JSON, else the text).
"""
from __future__ import annotations

from typing import Any, Callable

from . import ir
from .analysis import Analysis
from .evidence_keys import hide_guard
from .frozen import thaw
from .plan import Plan, find_agent, plan_of
from .redaction import Redactor
from .recorder import learn
from .redaction_json import opening_value, opens_json


def prime_redactor(red: Redactor, plan: Plan) -> None:
    """Teach the redactor secrets the spec itself holds (fact data, `returns` values)."""
    for c in plan.context:
        data = getattr(c.decl, "data", None)
        if data is not None and not isinstance(data, ir.Text):
            learn(red, thaw(data.value))
    for t in plan.tools.values():
        if isinstance(t.decl.impl, ir.ReturnsImpl):
            learn(red, thaw(t.decl.impl.value))


def relearn(red: Redactor, history: list) -> None:
    """Re-teach remembered secrets from raw history (a resumed or follow-up run)."""
    for m in history:
        for c in m.tool_calls:
            learn(red, thaw(c.arguments))
        if m.role == "tool":
            learn(red, _as_recorded(m.content))


def _as_recorded(text: str) -> Any:
    """A tool result's text as the data it was recorded as: the JSON value that opens it (NaN
    and infinities included, as `toolcall.to_text` writes them; guards' `parse_result` refuses
    those), whatever follows it (a step's note, a remark the tool added), else the text."""
    if not opens_json(text):
        return text
    try:
        return opening_value(text)
    except (ValueError, RecursionError):
        return text


def test_scrubber(agent: Any, test: ir.Test) -> Callable[[str], str]:
    """`scrub_text` for what `afpc test` quotes from a test (an expected answer) beside the run's
    redacted records: the agent's rules, primed as its runs are, and taught the secrets under
    redacted keys in the test's stubbed results and scripted arguments, as its runs were."""
    red = agent._redactor()
    for st in test.statements:
        if isinstance(st, ir.ToolReturns):
            learn(red, thaw(st.value))
        elif isinstance(st, ir.ModelCalls):
            for c in st.calls:
                learn(red, thaw(c.args))
    return red.scrub_text


def run_scrubber(program: Any, events: list) -> Callable[[str], str]:
    """`scrub_text` of a stored run's redactor rebuilt from its spec: the rules of the agent the
    run started (every agent's for an inner run, or when the spec no longer has that agent),
    primed as the run was (its plan and those of the agents it runs as tools), and taught every
    literal a graph's guard compares with a redacted key (`result.token == "…"`): a run that saw
    such a value remembered it and its trace holds only the placeholder, so the literal is
    scrubbed whether or not this run saw it (fails closed)."""
    analysis = program if isinstance(program, Analysis) else (
        getattr(program, "analysis", None) or Analysis(getattr(program, "ir", program)))
    plans = _run_plans(analysis, events)
    red = Redactor(tuple(dict.fromkeys(r for p in plans for r in p.redact)))
    for plan in plans:
        prime_redactor(red, plan)
    every = red  # (joined redactors share one memory: what any of them learns, `red` scrubs)
    for plan in _with_inner(analysis, plans)[len(plans):]:
        every = every.joined(plan.redact)
        prime_redactor(every, plan)
    for _, g in analysis.decls(ir.Graph):
        for stmt in g.entries + g.routes:
            for key, value in _compared(stmt.when):
                learn(every, {key: value})
    scrub = _keeping_names(red.scrub_text, analysis)
    return _RunScrub(scrub, lambda when: hide_guard(every, when))


class _RunScrub:
    """A stored run's caption scrubber (`run_scrubber`): called on a text; its `guard` rewrites
    a guard before it is captioned, so a literal compared with a redacted key is the placeholder
    whatever its length (one under 4 characters is not remembered, so not found in text)."""

    def __init__(self, scrub: Callable[[str], str], guard: Callable[[Any], Any]):
        self._scrub, self.guard = scrub, guard

    def __call__(self, text: str) -> str:
        return self._scrub(text)


def _keeping_names(scrub: Callable[[str], str], analysis: Analysis) -> Callable[[str], str]:
    """`scrub`, with the program's declared names kept as written (`on get_card` stays, whatever
    `/card/` says), as the trace keeps them (`redaction_events`): a caption's data, a literal a
    guard compares, is scrubbed; the names it is drawn with are the spec's."""
    import re
    names = sorted({d.name for _, d in analysis.decls() if isinstance(getattr(d, "name", None), str)},
                   key=len, reverse=True)
    if not names:
        return scrub
    split = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?![\w])").split

    def keep(text: str) -> str:
        parts = split(text)  # (odd places: the names)
        return "".join(p if i % 2 else scrub(p) for i, p in enumerate(parts))
    return keep


def _run_plans(analysis: Analysis, events: list) -> list[Plan]:
    """The plan of the agent the run started, else (an inner run, whose rules joined its
    caller's, or an agent the spec no longer has) every agent's."""
    started = next((e.payload for e in events if e.kind == "run.started"), None)
    started = started if isinstance(started, dict) else {}
    agent, run_id = started.get("agent"), started.get("run_id")
    inner = isinstance(run_id, str) and "/" in run_id
    found = find_agent(analysis, agent) if isinstance(agent, str) and not inner else None
    if found:
        return [plan_of(analysis, *found)]
    return [plan_of(analysis, d, m) for m, d in analysis.decls(ir.Agent)]


def _with_inner(analysis: Any, plans: list[Plan]) -> list[Plan]:
    """`plans` and the plans of the agents their tools run (`impl = agent(…)`), transitively."""
    out = list(plans)
    for plan in out:  # (grows while walked)
        for t in plan.tools.values():
            impl = t.decl.impl
            r = analysis.resolve(t.module, impl.agent) if isinstance(impl, ir.AgentImpl) else None
            if r is not None and isinstance(r.decl, ir.Agent):
                inner = plan_of(analysis, r.decl, r.module)
                if all(inner is not p for p in out):
                    out.append(inner)
    return out


def _compared(e: Any) -> list[tuple[str, Any]]:
    """(the last name of the path, the literal) of every `path OP literal` (or `literal OP
    path`, or a path against a list of literals) inside the guard `e`."""
    if isinstance(e, (ir.And, ir.Or)):
        return [pair for item in e.items for pair in _compared(item)]
    if isinstance(e, ir.Not):
        return _compared(e.item)
    if not isinstance(e, ir.Compare):
        return []
    out = []
    for path, other in ((e.left, e.right), (e.right, e.left)):
        if isinstance(path, ir.Path):
            names = [s for s in path.segments if isinstance(s, str)] or [path.root]
            items = other.items if isinstance(other, ir.ListExpr) else (other,)
            out += [(names[-1], x.value) for x in items if isinstance(x, ir.Lit)]
    return out
