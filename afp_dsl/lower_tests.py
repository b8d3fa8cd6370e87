"""Lowering of `test` block statements (user, model calls/says, tool stubs, decisions, expects).

Role:       called by `lower.Lowerer.body_test`.
Emits:      AFP106 bad-attribute-value (a scripted argument list that is not a map, a bad count
            or outcome).
Invariants: never raises; a malformed statement is reported and dropped.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ir
from .codes import diag
from .frozen import FrozenMap
from .lower_values import BAD, to_data
from .suggest import closest
from .trace import KINDS

if TYPE_CHECKING:  # parse trees come from lark or from `fastparse`, of the same shape
    import lark

OUTCOMES = ("answered", "paused", "max_iterations", "denied", "error")


def lower_statement(lw: Any, node: lark.Tree) -> ir.TestStmt | None:
    handler = _HANDLERS.get(node.data)
    return handler(lw, node) if handler is not None else None


def _user(lw, node):
    return ir.UserSays(text=lw.v.string(node.children[0]), span=lw.v.span(node))


def _calls(lw, node):
    calls = []
    for c in node.children:
        tool_tok = c.children[0]
        args: Any = FrozenMap()
        if len(c.children) > 1:
            args = to_data(lw.v.value(c.children[1]), lw.diags)
            if args is BAD or lw.v.holds_fault(lw.v.span(c.children[1])):
                args = None  # reported (AFP106, AFP005): the checks judge no arguments then
        calls.append(ir.ScriptedCall(tool=lw.ref(tool_tok), args=args, span=lw.v.span(c)))
    return ir.ModelCalls(calls=tuple(calls), span=lw.v.span(node))


def _says(lw, node):
    return ir.ModelSays(text=lw.v.string(node.children[0]), span=lw.v.span(node))


def _returns(lw, node):
    tool_tok, value = node.children
    data = to_data(lw.v.value(value), lw.diags)
    if data is BAD:
        return None
    return ir.ToolReturns(tool=lw.ref(tool_tok), value=data, span=lw.v.span(node))


def _fails(lw, node):
    tool_tok, msg = node.children
    return ir.ToolFails(tool=lw.ref(tool_tok), message=lw.v.string(msg), span=lw.v.span(node))


def _decide(lw, node):
    decision = str(node.children[0].children[0])
    by = note = None
    for part in node.children[1:]:
        text = lw.v.string(part.children[0])
        if part.data == "by_clause":
            by = text
        else:
            note = text
    return ir.Decide(decision=decision, by=by, note=note, span=lw.v.span(node))


def _answer_matches(lw, node):
    return ir.ExpectAnswer(matches=lw.v.regex(node.children[0]), span=lw.v.span(node))


def _answer_equals(lw, node):
    return ir.ExpectAnswer(equals=lw.v.string(node.children[0]), span=lw.v.span(node))


def _called(lw, node):
    tool_tok, count_tok = node.children
    count = lw.v.token(count_tok).value
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        lw.diags.append(diag("AFP106", "a call count must be a whole number of at least 0",
                             lw.v.span(count_tok), "not a count"))
        return None
    return ir.ExpectCalled(tool=lw.ref(tool_tok), count=count, span=lw.v.span(node))


def _not_called(lw, node):
    return ir.ExpectCalled(tool=lw.ref(node.children[0]), count=0, span=lw.v.span(node))


def _route(lw, node):
    src, arrow, dst = node.children
    lw.arrow(arrow)
    return ir.ExpectRoute(src=lw.ref(src), dst=lw.ref(dst), span=lw.v.span(node))


def _cursor(lw, node):
    return ir.ExpectCursor(skill=lw.ref(node.children[0]), span=lw.v.span(node))


def _outcome(lw, node):
    tok = node.children[-1]
    outcome = str(tok)
    if outcome not in OUTCOMES:
        close = closest(outcome, list(OUTCOMES))
        lw.diags.append(diag("AFP106", f"unknown outcome `{outcome}`", lw.v.span(tok), "not an outcome",
                             help=(f"did you mean `{close}`? " if close else "") +
                             "outcomes are " + ", ".join(OUTCOMES)))
        return None
    return ir.ExpectOutcome(outcome=outcome, span=lw.v.span(node))


def _trace(lw, node):
    dotted = node.children[-1]
    kind = ".".join(str(t) for t in dotted.children)
    if kind not in KINDS:  # no run ever records it: the expectation could never hold
        close = closest(kind, list(KINDS))
        lw.diags.append(diag("AFP106", f"unknown event kind `{kind}`", lw.v.span(dotted),
                             "no run records this kind",
                             help=f"did you mean `{close}`?" if close else
                             "the event kinds are listed in docs/trace.md"))
        return None
    return ir.ExpectTrace(kind=kind, span=lw.v.span(node))


_HANDLERS = {
    "user_stmt": _user, "calls_stmt": _calls, "says_stmt": _says, "returns_stmt": _returns,
    "fails_stmt": _fails, "decide_stmt": _decide, "expect_answer_matches": _answer_matches,
    "expect_answer_equals": _answer_equals, "expect_called": _called, "expect_not_called": _not_called,
    "expect_route": _route, "expect_cursor": _cursor, "expect_outcome": _outcome,
    "expect_trace": _trace,
}
