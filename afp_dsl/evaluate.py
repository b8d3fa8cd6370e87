"""Run-time evaluation of guard expressions (`when`, `check_in`, policy rules) with evidence.

Role:       pure; called by the interpreter for entries, routes, context `when`, check-ins and
            policy rules. Every comparison it evaluates becomes a `Condition` (text, actual value,
            passed, span), so "why didn't my edge fire" is a lookup in `Evaluation.conditions`.
Invariants: never raises; a missing path is null (a condition it fails says so); a type mismatch is
            false with a recorded reason;
            a run-time error (e.g. a regex that will not compile) makes the whole evaluation false
            with `error` set. No short-circuit: every operand is evaluated, so the evidence lists
            every condition of the expression (evaluation is pure, so this only costs time).
            A condition under an odd number of `not`s is recorded negated (`not (x == 1)`, with
            the negated outcome), so the marks read like the guard: an `and` of conditions holds
            exactly when all are marked passed, an `or` when one is.
            Actual values are not redacted here: the caller scrubs evidence before recording it.
"""
from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from . import ir
from .record import Record, record
from .mentions import keywords_matcher
from .regex_budget import refusal, too_costly
from .regex_quiet import compile_quietly
from .source import Span
from .evidence import _compact_json, shorten  # noqa: F401 - (`shorten` is imported from here too)

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_ORDERED = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


@record
class Env(Record):
    """The values an expression can read: `roots` by name, plus the sets behind the calls."""

    roots: Mapping[str, Any]
    returned: frozenset[str] = frozenset()
    active: frozenset[str] = frozenset()

    def with_root(self, name: str, value: Any) -> "Env":
        """This env with one root replaced (a policy link's rewrite, for the links after it)."""
        return Env({**self.roots, name: value}, self.returned, self.active)


@record
class Condition(Record):
    """One evaluated comparison (or bare boolean operand) and its outcome.

    `actual` is the left operand's value (the right's when only the right reads the run:
    `500 < result.amount`, `actual_is_right`), shortened to 80 characters when it is a string or
    structured JSON; `reason` says why it failed when the failure is not a plain mismatch.
    Under `not`, `text` is the negated condition and `passed` its outcome.
    """

    text: str
    actual: Any
    passed: bool
    span: Span
    reason: str | None = None


@record
class Evaluation(Record):
    holds: bool
    conditions: tuple[Condition, ...]
    error: str | None = None


class _EvalError(Exception):
    pass


# ---------------------------------------------------------------- public helpers
def regex_flags(flags: str) -> int:
    """`"im"` → `re.IGNORECASE | re.MULTILINE`; unknown letters are ignored (the checker reports them)."""
    value = 0
    for f in flags:
        value |= _FLAGS.get(f, 0)
    return value


@functools.lru_cache(maxsize=512)
def compile_regex(pattern: str, flags: str = "") -> re.Pattern[str]:
    """Compile `/pattern/flags` once (cached per pattern and flags); raises `re.error`."""
    return compile_quietly(pattern, regex_flags(flags))


def parse_result(value: Any) -> Any:
    """A tool result as guards see it: a string that parses as (strict) JSON is parsed.

    Example:
        >>> parse_result('{"status": "found"}')
        {'status': 'found'}
        >>> parse_result("refund R-1 issued")
        'refund R-1 issued'
    """
    if not isinstance(value, str):
        return value
    if value.lstrip(" \t\n\r")[:1] not in _JSON_STARTS:
        return value  # cannot be JSON (speed: spares the decoder's exception for plain text)
    try:
        return json.loads(value, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return value


_JSON_STARTS = frozenset('{["-0123456789tfn')


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `1 == 1.0`, `true != 1`, deep over maps and lists (tuples count as lists)."""
    if type(a) is str and type(b) is str:  # the common case, without the abstract-type checks
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return (isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys()
                and all(json_equal(a[k], b[k]) for k in a))
    if _is_list(a) or _is_list(b):
        return (_is_list(a) and _is_list(b) and len(a) == len(b)
                and all(json_equal(x, y) for x, y in zip(a, b)))
    return type(a) is type(b) and a == b


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_list(v: Any) -> bool:
    return isinstance(v, (list, tuple))


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if _is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "object"
    if _is_list(v):
        return "list"
    return type(v).__name__


# ---------------------------------------------------------------- evaluation
def evaluate(expr: ir.Expr, env: Env, *, clip: bool = True, absent: bool = False) -> Evaluation:
    """Evaluate `expr` as a condition: it holds only when its value is exactly `true`.
    `clip=False` keeps each condition's `actual` whole (the interpreter's evidence: the recorder
    redacts it first and shortens it after, `clip_evidence`, so no cut can split a secret).
    `absent=True`: a condition that fails on a path the run does not have says so in its
    `reason` (the evidence of context, entry and route conditions, semantics §2; policy rules
    keep the plain form their compiled closures build, `rules_compiled`)."""
    ev = _Evaluator(env, clip, absent)
    try:
        holds = ev.holds(expr)
    except _EvalError as exc:
        return Evaluation(False, tuple(ev.conditions), str(exc))
    except Exception as exc:  # the contract is "never raises": report, don't crash the run
        return Evaluation(False, tuple(ev.conditions), f"cannot evaluate `{render_expr(expr)}`: {exc}")
    return Evaluation(holds, tuple(ev.conditions))


class _Evaluator:
    def __init__(self, env: Env, clip: bool = True, absent: bool = False):
        self.env = env
        self.clip = clip
        self.absent = absent
        self.neg = False  # under an odd number of `not`s: conditions are recorded negated
        self.conditions: list[Condition] = []

    def holds(self, expr: ir.Expr) -> bool:
        if type(expr) is ir.Compare:  # the common case first
            return self.compare(expr)
        if isinstance(expr, ir.And):
            results = [self.holds(item) for item in expr.items]
            return all(results)
        if isinstance(expr, ir.Or):
            results = [self.holds(item) for item in expr.items]
            return any(results)
        if isinstance(expr, ir.Not):
            self.neg = not self.neg
            try:
                return not self.holds(expr.item)
            finally:
                self.neg = not self.neg
        if isinstance(expr, ir.Compare):
            return self.compare(expr)
        if isinstance(expr, ir.Lit):
            return expr.value is True
        value = self.value(expr)
        reason = None if isinstance(value, bool) else (
            (self.absent and self._absent(expr)) or f"not a boolean: {_type_name(value)}")
        self._record(expr, value, value is True, reason)
        return value is True

    def value(self, expr: ir.Expr) -> Any:
        if isinstance(expr, ir.Path):
            return self.path(expr)
        if isinstance(expr, ir.Lit):
            return expr.value
        if isinstance(expr, ir.ListExpr):
            return [self.value(item) for item in expr.items]
        if isinstance(expr, ir.Call):
            return self.call(expr)
        if isinstance(expr, (ir.And, ir.Or, ir.Not, ir.Compare)):
            neg, self.neg = self.neg, False  # a condition used as a value is recorded as it is
            try:
                return self.holds(expr)
            finally:
                self.neg = neg
        raise _EvalError(f"not an expression: {type(expr).__name__}")

    def path(self, p: ir.Path) -> Any:
        value = self.env.roots.get(p.root)
        for seg in p.segments:
            value = _step(value, seg)
        return value

    def call(self, c: ir.Call) -> bool:
        if c.func == "returned":
            return c.arg.name in self.env.returned
        if c.func == "active":
            return c.arg.name in self.env.active
        raise _EvalError(f"unknown function `{c.func}`")

    def compare(self, c: ir.Compare) -> bool:
        left = self.value(c.left)
        if c.op in ("matches", "mentions"):
            passed, reason = self._text_op(c, left)
            if self.absent and left is None and reason is not None:  # (as below: say so)
                reason = self._absent(c.left) or reason
        else:
            right = self.value(c.right)  # type: ignore[arg-type]
            passed, reason = _compare_values(c.op, left, right)
            if self.absent and passed == self.neg and (left is None or right is None):
                # (semantics §2: a path the run does not have says so, also where an ordered
                # comparison would otherwise say "needs two numbers", of the null it reads as)
                reason = self._absent(c.left) or self._absent(c.right) or reason
            if actual_is_right(c):
                left = right
        self._record(c, left, passed, reason)
        return passed

    def _absent(self, expr: Any) -> str | None:
        """"`last.result[0]` does not exist" when `expr` is a path the run does not have (it
        reads as null, semantics §6; a failed condition says so, §2); None for a path that holds
        null, or anything else."""
        if type(expr) is not ir.Path:
            return None
        value: Any = self.env.roots
        for seg in (expr.root, *expr.segments):
            if isinstance(seg, int) and not isinstance(seg, bool):
                if not (_is_list(value) and 0 <= seg < len(value)):
                    return f"`{render_expr(expr)}` does not exist"
                value = value[seg]
            elif isinstance(value, Mapping) and seg in value:
                value = value[seg]
            else:
                return f"`{render_expr(expr)}` does not exist"
        return None

    def _text_op(self, c: ir.Compare, left: Any) -> tuple[bool, str | None]:
        if c.op == "matches":
            rx = c.right
            if not isinstance(rx, ir.Regex):
                raise _EvalError("`matches` needs a regular expression on its right")
            try:
                pattern = compile_regex(rx.pattern, rx.flags)
            except re.error as exc:
                raise _EvalError(f"bad regular expression `{rx}`: {exc}") from None
            if not isinstance(left, str):
                return False, f"`matches` needs a string, got {_type_name(left)}"
            if too_costly(rx.pattern, rx.flags, len(left)):  # (never a stalled run: an
                # evaluation error, so a policy rule denies and a `check_in` pauses: fail closed)
                raise _EvalError(refusal(rx.pattern, rx.flags, len(left)))
            return pattern.search(left) is not None, None
        keywords = self.value(c.right)  # type: ignore[arg-type]
        keywords = tuple(keywords) if _is_list(keywords) else (keywords,)
        if not keywords or not all(isinstance(k, str) and k for k in keywords):
            return False, "`mentions` needs non-empty keyword strings"
        if not isinstance(left, str):
            return False, f"`mentions` needs a string, got {_type_name(left)}"
        return keywords_matcher(keywords).search(left) is not None, None

    def _record(self, expr: Any, actual: Any, passed: bool, reason: str | None) -> None:
        self.conditions.append(Condition(_rendered(expr, self.neg),
                                         shorten(actual) if self.clip else actual,
                                         passed != self.neg, expr.span, reason))


# Speed: a condition's text is rendered once per expression node, not at every evaluation. Keyed
# by identity (hashing a deep expression costs about as much as rendering it); the entry holds the
# node itself so its id cannot be reused while cached. Bounded.
_RENDERED: dict[tuple[int, bool], tuple[Any, str]] = {}


def _rendered(expr: Any, neg: bool = False) -> str:
    hit = _RENDERED.get((id(expr), neg))
    if hit is not None and hit[0] is expr:
        return hit[1]
    text = condition_text(expr, neg)
    if len(_RENDERED) >= 4096:
        _RENDERED.clear()
    _RENDERED[(id(expr), neg)] = (expr, text)
    return text


def condition_text(expr: Any, neg: bool = False) -> str:
    """A recorded condition's text: the expression, or under `not` its negation (`not (x == 1)`,
    `not result.ok`)."""
    text = render_expr(expr)
    if not neg:
        return text
    return f"not ({text})" if isinstance(expr, ir.Compare) else f"not {text}"


def actual_is_right(c: ir.Compare) -> bool:
    """Is a comparison's actual value its right operand? When only the right reads the run
    (`500 < result.amount`: the amount, not 500); else the left's."""
    return _fixed(c.left) and not _fixed(c.right) and c.op not in ("matches", "mentions")


def _fixed(e: Any) -> bool:
    """A literal, or a list of literals: a value the run does not give."""
    return isinstance(e, ir.Lit) or (isinstance(e, ir.ListExpr) and all(_fixed(i) for i in e.items))


def _step(value: Any, seg: str | int) -> Any:
    if isinstance(seg, int) and not isinstance(seg, bool):
        if _is_list(value) and 0 <= seg < len(value):
            return value[seg]
        return None
    if isinstance(value, Mapping):
        return value.get(seg)
    return None


def _compare_values(op: str, left: Any, right: Any) -> tuple[bool, str | None]:
    if op == "==":
        return json_equal(left, right), None
    if op == "!=":
        return not json_equal(left, right), None
    if op in ("in", "not in"):
        if not _is_list(right):
            return False, f"`{op}` needs a list on its right, got {_type_name(right)}"
        found = any(json_equal(left, item) for item in right)
        return found == (op == "in"), None
    if op in _ORDERED:
        both_numbers = _is_number(left) and _is_number(right)
        if not (both_numbers or (isinstance(left, str) and isinstance(right, str))):
            return False, (f"`{op}` needs two numbers or two strings, "
                           f"got {_type_name(left)} and {_type_name(right)}")
        if both_numbers and (math.isnan(left) or math.isnan(right)):
            return False, "NaN is not ordered"
        return _ORDERED[op](left, right), None
    raise _EvalError(f"unknown operator `{op}`")


# ---------------------------------------------------------------- rendering
_PREC_OR, _PREC_AND, _PREC_NOT, _PREC_ATOM = 1, 2, 3, 4


def render_expr(expr: Any) -> str:
    """Canonical source text of an expression (also used for evidence and diagrams).

    Example:
        >>> render_expr(ir.Compare(op="<=", left=ir.Path(root="result", segments=("amount",)),
        ...                        right=ir.Lit(value=500)))
        'result.amount <= 500'
    """
    return _render(expr, 0)


def _render(expr: Any, need: int) -> str:
    text, prec = _render_prec(expr)
    return f"({text})" if prec < need else text


def _render_prec(expr: Any) -> tuple[str, int]:
    if isinstance(expr, ir.Or):
        return " or ".join(_render(i, _PREC_AND) for i in expr.items), _PREC_OR
    if isinstance(expr, ir.And):
        return " and ".join(_render(i, _PREC_NOT) for i in expr.items), _PREC_AND
    if isinstance(expr, ir.Not):
        return "not " + _render(expr.item, _PREC_NOT), _PREC_NOT
    if isinstance(expr, ir.Compare):
        right = str(expr.right) if isinstance(expr.right, ir.Regex) else _render(expr.right, _PREC_ATOM)
        return f"{_render(expr.left, _PREC_ATOM)} {expr.op} {right}", _PREC_ATOM
    return _render_operand(expr), _PREC_ATOM


def _render_operand(expr: Any) -> str:
    if isinstance(expr, ir.Path):
        return expr.root + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in expr.segments)
    if isinstance(expr, ir.Lit):
        return _render_literal(expr.value)
    if isinstance(expr, ir.ListExpr):
        return "[" + ", ".join(_render(i, _PREC_ATOM) for i in expr.items) + "]"
    if isinstance(expr, ir.Call):
        return f"{expr.func}({expr.arg})"
    if isinstance(expr, ir.Regex):
        return str(expr)
    if isinstance(expr, ir.Invalid):
        return "?"  # (an operand the front end reported; its text is gone)
    return repr(expr)


def _render_literal(value: Any) -> str:
    if isinstance(value, (Mapping, list, tuple)):
        return _compact_json(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
