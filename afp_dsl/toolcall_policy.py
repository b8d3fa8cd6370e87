"""The policy moments of one tool call: the chain's walk at `before` / `after`, and its ledger rows.

Role:       `toolcall` asks `chain(...)` and gets the chain's answer; every decision is recorded
            here as a `policy.decided` event, caused by the `tool.called` event. Split from
            `toolcall` along the pipeline's policy stages.
Emits:      policy.decided.
Invariants: the walk is `policy.walk_steps` (declaration order, reverse for `after`); a chain with
            no block for the moment and tool is not walked and records nothing; a walk of rule
            links whose checks all answer plainly and allow is settled by a function written
            once per plan, moment and tool (`program`, `settler`) and records the very rows the
            full walk records (tests/test_policy_settled.py; the checks read inline agree with
            their closures, tests/test_fast_rules.py).
"""
from __future__ import annotations

import itertools
import operator
from typing import Any

from .evaluate import parse_result
from .evidence_keys import hide
from .policy import ALLOWED, walk_steps
from .providers.base import ToolCall
from .runtime import RunCtx


def roots(ctx: RunCtx, call: ToolCall, args: Any) -> dict:
    st = ctx.state
    return {"tool": call.name, "args": args, "message": st.message, "iteration": st.iteration,
            "skill": st.cursor}


def chain(ctx: RunCtx, moment: str, call: ToolCall, args: Any, cause: str, *, out: Any = None,
          start_after: int = 0, can_pause: bool = True):
    """The chain's answer for `call` at `moment`, its rows recorded; at `after`, `out` is the
    call's outcome (its result and status are roots). A settled walk (see `settler`) answers
    `ALLOWED` (its rows are recorded, not returned)."""
    plan = ctx.plan
    if not plan.policies:
        return ALLOWED
    prog = plan.policy_programs[moment].get(call.name) or program(plan, moment, call.name)
    found, settle = prog  # (`after` walks in reverse: the onion order)
    if not found:
        return ALLOWED
    st = ctx.state
    if settle is not None and not start_after and settle(ctx, call, args, st, out, cause):
        return ALLOWED  # (settled: its rows are recorded)
    values = (call.name, args, st.message, st.iteration, st.cursor) if out is None else (
        call.name, args, st.message, st.iteration, st.cursor, parse_result(out.result),
        out.status)  # the roots' values, in `ROOTS` order
    return walk(ctx, found, moment, call, dict(zip(ROOTS, values)), cause, start_after, can_pause)


# The roots of a tool call's walk, in order (`after` adds the last two).
ROOTS = ("tool", "args", "message", "iteration", "skill", "result", "status")


def _quick(check: Any, values: tuple, ctx: RunCtx) -> Any:
    """`check` on the walk's env: True, False, or None (unsure: it raised)."""
    try:
        return check(_env(_CallEnv, (dict(zip(ROOTS, values)), ctx)))
    except Exception:
        return None


class _CallEnv(tuple):
    """The `Env` of one tool call's chain, quacking like `evaluate.Env`: `_CallEnv((roots, ctx))`.
    Speed: most walks only read `roots` (compiled checks), so the frozen copies of the returned
    tools and the active skills are made when an evaluation asks for them (the walk is
    synchronous: they hold what an `Env` built up front would); a tuple is made in C."""

    __slots__ = ()
    roots = property(operator.itemgetter(0))

    @property
    def returned(self) -> frozenset[str]:
        return frozenset(self[1].state.returned)

    @property
    def active(self) -> frozenset[str]:
        return frozenset(self[1].active_order)

    def with_root(self, name: str, value: Any) -> "_CallEnv":
        """This env with one root replaced (a policy link's rewrite, for the links after it)."""
        return _env(_CallEnv, ({**self[0], name: value}, self[1]))


def walk(ctx: RunCtx, found: tuple, moment: str, call: ToolCall, env_roots: dict, cause: str,
         start_after: int = 0, can_pause: bool = True):
    """The chain's answer for one call at `moment` over its `found` steps, walked in full
    (`policy.walk_steps`), its rows recorded."""
    env = _env(_CallEnv, (env_roots, ctx))
    iteration = ctx.state.iteration
    result = walk_steps(found, moment, env, call.name, call.id,
                        iteration, can_pause, ctx.session.policy_host, start_after,
                        False)  # (evidence: no ledger row records a rule's conditions)
    if result[1]:
        if moment == "after" and ctx.redactor.has_key_rules:
            # semantics §9: a row's reason or rewrite may quote the result, and the rows are
            # recorded before the call's `tool.returned`: the secrets under redacted keys in
            # the result (as the links read it: JSON text parsed) are learnt first. (A settled
            # walk's rows hold declarations only: nothing to learn for them.)
            ctx.redactor._collect(env_roots.get("result"))
        record_decisions(ctx, result[1], cause)
    return result


# Speed: a chain of rule links only (no host link) at one moment for one tool, settled once per
# plan, moment and tool (`Plan.policy_programs`): the steps and, per link, the head of its quiet
# `allow` row and, per rule, its compiled check with its simple form spread out (the position of
# its root in the walk's values, or None; see `rules_compiled._check`), the head of the row it
# makes when it holds, and whether that row allows. A walk where every check answers plain True
# or False and every rule that holds allows is then a function of those answers: `chain` runs
# the checks in walk order and picks the rows' heads, no decision objects, no roots dict. Anything
# else (an unsure check, a deny or an ask) walks again in full with `walk_steps`: the checks are
# pure functions of the env, so running them twice changes nothing.
def program(plan: Any, moment: str, tool: str) -> tuple:
    """(steps, settled walk or None) of `plan`'s chain at `moment` for `tool`, kept on the
    plan (see `settler`)."""
    found = plan.policy_steps(moment, tool)
    links = _links(found, moment, tool)
    prog = (found, None if links is None else settler(links, moment == "after"))
    by_tool = plan.policy_programs[moment]
    if len(by_tool) >= 4096:  # (only the plan's tools reach a walk; bounded all the same)
        by_tool.clear()
    by_tool[tool] = prog
    return prog


def _links(found: tuple, moment: str, tool: str) -> tuple | None:
    """Per link: (head of its quiet `allow` row, its rules); None when a host link is in it.
    A rule: (root position, field, search, literal, equal, check, row head, allows)."""
    links: list = []
    at = ROOTS if moment == "after" else ROOTS[:5]  # (the roots of the walk's values)
    for index, policy, rule, cond in found:
        if rule is None:  # a host link: always the full walk
            return None
        if not links or links[-1][0] != index:
            links.append((index, _row_head("allow", policy.name, None, None, moment, tool,
                                           policy.span), []))
        root, seg, search, lit, equal = cond.form or (None, None, None, None, None)
        k = at.index(root) if root in at else None
        head = _row_head(rule.action, policy.name, rule.span, rule.because, moment, tool)
        links[-1][2].append((k, seg, search, lit, equal, cond.check, head,
                             rule.action == "allow"))
    return tuple((quiet, tuple(rules)) for _, quiet, rules in links)


# Speed: the settled walk of one chain is written out as one Python function, made once per plan,
# moment and tool, as attrs writes an `__init__`: per rule its root, field, regex or literal,
# closure and row head are constants of the code, each root and field the rules read is read once,
# and the rows go to `Recorder.emit_rows` from there, so a walk runs no loops over links and rules,
# unpacks no rule tuples and builds no tuple of the roots (the closures' `_quick`, for a value
# that is not a str, builds it when it runs). What it answers is the loop kept in
# tests/test_policy_settled.py (`_reference_settle`), compared on generated chains and values; its
# text is the function's `source` attribute.
_ROOT_READS = ("call.name", "args", "st.message", "st.iteration", "st.cursor",
               "parse_result(out.result)", "out.status")  # (in `ROOTS` order)


def settler(links: tuple, after: bool) -> Any:
    """The settled walk of `links` (see `_links`; `after`: the walk at `after`, whose roots
    include the call's result and status) as a function `(ctx, call, args, st, out, cause)` that
    records the rows (`emit_rows`) and answers True, or answers False, recording nothing, when
    the chain must be walked in full: a check that is unsure (raised, or answered neither True
    nor False), or a rule that holds and does not allow. Each link's block ends at the rule that
    holds (its head) or after its last rule (the quiet head)."""
    names: dict[str, Any] = {"_quick": _quick, "parse_result": parse_result}
    values = "(" + ", ".join(_ROOT_READS[:7 if after else 5]) + ")"  # (for a closure)
    lines = ["def settle(ctx, call, args, st, out, cause):"]
    read = _read_roots(links, lines, names)
    for i, (quiet, rules) in enumerate(links):
        names[f"Q{i}"] = quiet
        lines.append("    while True:")
        for j, rule in enumerate(rules):
            lines += _indent(_rule_lines(i, j, rule, read, values, names), 8)
        lines += [f"        h{i} = Q{i}", "        break"]
    heads = "".join(f"h{i}, " for i in range(len(links)))  # (a tuple, made in one step)
    lines += [f"    ctx.rec.emit_rows(({heads}), call.id, st.iteration, cause)", "    return True"]
    source = "\n".join(lines)
    exec(compile(source, "<afp settled walk>", "exec"), names)  # (only the names above)
    settle = names["settle"]
    settle.source = source
    return settle


def _read_roots(links: tuple, lines: list, names: dict) -> dict[tuple, str]:
    """The lines reading each root and field the rules test, once, and whether each is a str;
    answers (root, field) -> the local holding its value."""
    read: dict[tuple, str] = {}
    tested = []
    for _, rules in links:
        for k, seg, *_ in rules:
            if k is None:
                continue
            if (k, None) not in read:
                read[k, None] = f"r{k}"
                lines.append(f"    r{k} = {_ROOT_READS[k]}")
            if (k, seg) not in read:
                local = read[k, seg] = f"r{k}_{len(read)}"
                names[f"F{local}"] = seg
                lines.append(f"    {local} = r{k}.get(F{local}) if type(r{k}) is dict else None")
            tested.append(read[k, seg])
    lines += [f"    {local}_str = type({local}) is str" for local in dict.fromkeys(tested)]
    return read


def _rule_lines(i: int, j: int, rule: tuple, read: dict, values: str, names: dict) -> list:
    """The lines of rule `j` of link `i`: its simple check inline on a str value, its closure
    (`_quick`) on anything else; when it holds, the link's head is its own (or, for a rule that
    does not allow, the walk is left to the full one)."""
    k, seg, search, lit, equal, check, head, allows = rule
    n = f"{i}_{j}"
    names[f"C{n}"], names[f"H{n}"] = check, head
    holds = [f"h{i} = H{n}", "break"] if allows else ["return False"]
    unsure = [f"verdict = _quick(C{n}, {values}, ctx)", "if verdict is True:", *_indent(holds),
              "if verdict is not False:", "    return False"] if allows else [
        f"if _quick(C{n}, {values}, ctx) is not False:", "    return False"]
    if k is None:
        return unsure
    local = read[k, seg]
    if search is not None:
        names[f"S{n}"] = search
        test = f"S{n}({local}) is not None"
    else:
        names[f"L{n}"], names[f"E{n}"] = lit, equal
        test = f"({local} == L{n}) is E{n}"
    return [f"if {local}_str:", f"    if {test}:", *_indent(holds, 8), "else:", *_indent(unsure)]


def _indent(lines: list, by: int = 4) -> list:
    return [" " * by + line for line in lines]


def _row_head(outcome: str, policy: str, span: Any, reason: Any, moment: str,
              tool: str, source: Any = None) -> tuple:
    """(payload head, shape, source span) of the row of a decision (see `_head`): the source is
    the rule's span, or `source` (a quiet row's: its policy's, see `quiet_source`)."""
    key = (outcome, policy, span, reason, moment, tool)
    head = _HEADS.get(key) or _head(key)
    return head[0], head[1], span if source is None else source


_env = tuple.__new__  # Speed: a `_CallEnv` in one C call, without the class call's lookups


def record_decisions(ctx: RunCtx, decisions, cause: str) -> tuple[str, ...]:
    """One `policy.decided` ledger row per decision; returns their event ids."""
    emit, iteration, heads = ctx.rec.emit_shaped, ctx.state.iteration, _HEADS
    out = []
    for d in decisions:  # a row is a function of the decision's first six fields, its call id
        key = d[:6]  # and the iteration (and of the value of a rewrite: never kept)
        head = heads.get(key) or _head(key, key[3] is None) if not d[9] else _head(key, False)
        payload = head[0].copy()
        payload["call_id"] = call_id = d[6]
        payload["iteration"] = iteration
        if d[9]:  # a rewrite: what the link handed on, which the rest of the run saw
            payload["changed"] = True
            payload["value"] = d[9][0]
        source = d[2] if d[2] is not None else quiet_source(ctx.plan, d[1])
        if d[8] and d[0] != "allow":  # a deny's or an ask's evidence: the values it read
            payload["conditions"] = _evidence(ctx, d)
            out.append(ctx.emit("policy.decided", payload, source=source, caused_by=(cause,)))
            continue
        out.append(emit("policy.decided", payload, head[1], call_id, iteration, source, cause))
    return tuple(out)


def _evidence(ctx: RunCtx, d: Any) -> list[dict]:
    """The conditions of the rule behind a deny or an ask, as `route.evaluated` records an
    edge's: text, actual value (hidden when read from under a redacted key), passed."""
    when = next((r.when for p in ctx.plan.policies for b in p.blocks for r in b.rules
                 if r.span == d[2]), None)
    out = []
    for c in hide(ctx.redactor, when, d[8]):
        row = {"text": c.text, "actual": c.actual, "passed": c.passed}
        if c.reason:
            row["reason"] = c.reason
        out.append(row)
    return out


def quiet_source(plan: Any, policy: str) -> Any:
    """The source of a row no rule decided (a link that had nothing against it: `rule` is null):
    the policy's declaration."""
    return next((p.span for p in plan.policies if p.name == policy), None)


# Speed: the part of a ledger row that is not its call id or iteration, settled once per
# (outcome, policy, rule span, reason, moment, tool): the payload with `call_id` and `iteration`
# still None (their keys in place, so the copy keeps the keys' order) and the row's shape for
# `is_clean_shaped`. Rows made from one head share its `rule` map; a recorded payload is never
# changed. Only heads made of declarations are kept: those of the settled walks (a rule's row, a
# quiet link's) and, from a full walk, those without a reason. A walk's reason may be run data (a
# host link's answer, an exception's or an evaluation error's text), which a cache should not
# keep alive for other runs: such a head is made for its row and has no shape (None: its payload
# is checked in full), since the shapes found clean are shared by runs. Bounded.
# Speed: a kept head's shape is the kind and a serial number (a serial is never given twice, so
# it stands for that one payload): hashed at every row, two small fields cost less than the six
# of its key, a span among them.
_HEADS: dict[tuple, tuple[dict, tuple]] = {}
_SERIALS = itertools.count()


def _head(key: tuple, kept: bool = True) -> tuple[dict, tuple | None]:
    outcome, policy, span, reason, moment, tool = key
    payload = {"policy": policy, "moment": moment, "tool": tool, "call_id": None,
               "iteration": None, "outcome": outcome, "reason": reason,
               "rule": None if span is None else {"file": span.file, "start": span.start,
                                                  "end": span.end}}
    if not kept:  # (not kept, no shape: see above)
        return payload, None
    head = (payload, ("policy.decided", next(_SERIALS)))
    if len(_HEADS) >= 4096:
        _HEADS.clear()
    _HEADS[key] = head
    return head


def reason(chain) -> str:
    """What the model reads for a denial: the deciding link's reason, verbatim (as the original
    framework's middleware deny); the ledger row names the policy and rule. A link that gave no
    reason is named instead."""
    d = chain.deciding
    given = getattr(d, "reason", None)
    if isinstance(given, str) and given.strip():
        return given
    return f"Denied by policy `{getattr(d, 'policy', '?')}` (no reason given)."
