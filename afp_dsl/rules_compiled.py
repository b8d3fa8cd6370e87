"""Policy-rule conditions compiled once into Python closures: the fast path of `evaluate`.

Role:       `compiled(expr)` (cached per node) gives `check(env)`/`quick(env)`, True/False without
            evidence (None or a raise: unsure), and `evaluate(env)`, the full `Evaluation`. The
            chain checks every rule and builds evidence only for one that may decide.
Invariants: `evaluate.evaluate` stays the reference: a closure does the same operations in the
            same order through the same helpers (nothing short-circuits); only node dispatch and
            condition texts are settled at compile time. Anything it cannot vouch for (an
            exception, an evaluation error, a bad regex or operator) goes to the reference, so
            `Compiled.evaluate(env) == evaluate(expr, env)`, and True/False only where that
            evaluation holds or not without error (tests/test_fast_rules.py, Hypothesis).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ir
from .evaluate import (Condition, Env, Evaluation, _compare_values, _is_list, _step, _type_name,
                       actual_is_right, compile_regex, condition_text, evaluate, keywords_matcher, shorten)
from .mentions import Keywords
from .regex_budget import too_costly

# A node closure: (env, rec) -> value. `rec` is None (no evidence: quick) or the list of
# conditions the reference evaluator would record, appended in its order.
Node = Callable[[Env, Any], Any]
_SCALARS = frozenset((str, int, float, bool, type(None)))


class _Unsure(Exception):
    """The closure cannot vouch for this evaluation: the reference evaluator decides."""


class Compiled:
    """One condition compiled. `run(env, rec)` is the closure (None: not compilable, reference
    only); `check(env)` answers True/False without evidence or raises when unsure."""

    __slots__ = ("expr", "run", "check", "form")

    def __init__(self, expr: ir.Expr, run: Node | None, check: Callable[[Env], Any] | None = None,
                 form: tuple | None = None):
        self.expr = expr
        self.run = run
        self.check: Callable[[Env], Any] = check or _unsure
        # (root, field or None, search or None, literal, equal) of a `check` of the simple form
        # (see `_check`), read inline by a settled policy walk; None otherwise
        self.form = form

    def quick(self, env: Env) -> Any:
        """True or False as `evaluate(expr, env).holds` when that evaluation has no error; None
        when unsure (then call `evaluate`)."""
        try:
            return self.check(env)
        except Exception:  # an evaluation error, or anything the reference would report
            return None

    def evaluate(self, env: Env) -> Evaluation:
        """Exactly `evaluate(expr, env)`."""
        if self.run is not None:
            rec: list[Condition] = []
            try:
                return Evaluation(self.run(env, rec), tuple(rec))
            except Exception:
                pass
        return evaluate(self.expr, env)


def _unsure(env: Env) -> Any:
    raise _Unsure


# Compiled once per expression node, keyed by identity (hashing a deep expression costs about as
# much as evaluating it); the entry keeps the node alive so its id cannot be reused. Bounded.
_CACHE: dict[int, tuple[Any, Compiled]] = {}


def compiled(expr: ir.Expr) -> Compiled:
    hit = _CACHE.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    try:
        run: Node | None = _holds(expr)
        check, form = _check(expr, run)
    except Exception:  # _Unsure, a bad regex, too deep, a literal that cannot be rendered...:
        run = check = form = None  # the reference evaluates (and reports) it
    if len(_CACHE) >= 4096:
        _CACHE.clear()
    out = Compiled(expr, run, check, form)
    _CACHE[id(expr)] = (expr, out)
    return out


# ---------------------------------------------------------------- holds (as _Evaluator.holds)
def _holds(expr: Any, neg: bool = False) -> Node:
    """`neg`: under an odd number of `not`s (conditions are recorded negated, as the reference
    records them)."""
    if isinstance(expr, ir.And):
        items = tuple(_holds(i, neg) for i in expr.items)

        def all_of(env: Env, rec: Any) -> Any:
            return all([f(env, rec) for f in items])  # every item, as the reference does
        return all_of
    if isinstance(expr, ir.Or):
        items = tuple(_holds(i, neg) for i in expr.items)

        def any_of(env: Env, rec: Any) -> Any:
            return any([f(env, rec) for f in items])
        return any_of
    if isinstance(expr, ir.Not):
        item = _holds(expr.item, not neg)
        return lambda env, rec: not item(env, rec)
    if isinstance(expr, ir.Compare):
        return _compare(expr, neg)
    if isinstance(expr, ir.Lit):
        holds = expr.value is True
        return lambda env, rec: holds
    return _bare(expr, neg)


def _bare(expr: Any, neg: bool) -> Node:
    """A bare operand used as a condition: recorded with its value."""
    value, text, span = _value(expr), condition_text(expr, neg), expr.span

    def bare(env: Env, rec: Any) -> bool:
        v = value(env, rec)
        if rec is None:
            _vouch(v)
        else:
            reason = None if isinstance(v, bool) else f"not a boolean: {_type_name(v)}"
            rec.append(Condition(text, shorten(v), (v is True) != neg, span, reason))
        return v is True
    return bare


def _vouch(actual: Any) -> None:
    """Without evidence, still do what could make the reference fail: shortening a structured
    actual value (scalars cannot fail)."""
    if type(actual) not in _SCALARS:
        shorten(actual)


# ---------------------------------------------------------------- values (as _Evaluator.value)
def _value(expr: Any) -> Node:
    if isinstance(expr, ir.Path):
        return _path(expr)
    if isinstance(expr, ir.Lit):
        v = expr.value
        return lambda env, rec: v
    if isinstance(expr, ir.ListExpr):
        items = tuple(_value(i) for i in expr.items)
        return lambda env, rec: [f(env, rec) for f in items]
    if isinstance(expr, ir.Call):
        arg = expr.arg.name
        if expr.func == "returned":
            return lambda env, rec: arg in env.returned
        if expr.func == "active":
            return lambda env, rec: arg in env.active
        raise _Unsure  # unknown function: an evaluation error
    if isinstance(expr, (ir.And, ir.Or, ir.Not, ir.Compare)):
        return _holds(expr)
    raise _Unsure  # not an expression: an evaluation error


def _path(p: ir.Path) -> Node:
    root, segments = p.root, p.segments
    if not segments:
        return lambda env, rec: env.roots.get(root)
    if _field(p) is not None:
        seg = segments[0]

        def field(env: Env, rec: Any) -> Any:
            v = env.roots.get(root)
            return v.get(seg) if type(v) is dict else _step(v, seg)  # a dict is a Mapping
        return field

    def walk(env: Env, rec: Any) -> Any:
        v = env.roots.get(root)
        for seg in segments:
            v = _step(v, seg)
        return v
    return walk


# ---------------------------------------------------------------- comparisons
def _compare(c: ir.Compare, neg: bool = False) -> Node:
    text, span, op = condition_text(c, neg), c.span, c.op
    if op == "matches":
        test = _matches(c)
    elif op == "mentions":
        test = _mentions(c)
    else:
        right = _value(c.right)

        def test(env: Env, rec: Any, v: Any) -> tuple[Any, str | None]:
            return _compare_values(op, v, right(env, rec))

    if actual_is_right(c):
        return _compare_right(c, text, neg)
    field = _field(c.left)
    if field is not None:  # speed: `root.name OP ...`, the common rule, reads its field inline
        root, seg = field

        def compare_field(env: Env, rec: Any) -> Any:
            v = env.roots.get(root)
            v = v.get(seg) if type(v) is dict else _step(v, seg)
            passed, reason = test(env, rec, v)
            if rec is None:
                if type(v) not in _SCALARS:
                    shorten(v)  # what could make the reference fail (see `_vouch`)
            else:
                rec.append(Condition(text, shorten(v), passed != neg, span, reason))
            return passed
        return compare_field
    left = _value(c.left)

    def compare(env: Env, rec: Any) -> Any:
        v = left(env, rec)
        passed, reason = test(env, rec, v)
        if rec is None:
            _vouch(v)
        else:
            rec.append(Condition(text, shorten(v), passed != neg, span, reason))
        return passed
    return compare


def _compare_right(c: ir.Compare, text: str, neg: bool) -> Node:
    """`LITERAL OP operand`: recorded with the right operand's value (`actual_is_right`)."""
    left, right, op, span = _value(c.left), _value(c.right), c.op, c.span

    def compare_right(env: Env, rec: Any) -> Any:
        v, r = left(env, rec), right(env, rec)
        passed, reason = _compare_values(op, v, r)
        if rec is None:
            _vouch(r)
        else:
            rec.append(Condition(text, shorten(r), passed != neg, span, reason))
        return passed
    return compare_right


def _field(expr: Any) -> tuple[str, str] | None:
    """(root, name) of a one-field path `root.name`, else None."""
    if isinstance(expr, ir.Path) and len(expr.segments) == 1 and type(expr.segments[0]) is str:
        return expr.root, expr.segments[0]
    return None


# ---------------------------------------------------------------- checks without evidence
def _check(expr: Any, run: Node) -> tuple[Callable[[Env], Any], tuple | None]:
    """`run` without evidence; for `root OP constant` or `root.name OP constant` with a string
    on the left (the common rule), one closure doing what `run` does in that case: `json_equal`
    of two exact strings is `==`, `matches`/`mentions` of a string is one search, and a string
    needs no `shorten`. Any other value goes through `run`. With the closure, its form
    (root, name or None, search or None, literal, equal) for that common rule, else None:
    where the root's value (or, with a name, its value in a `dict` root) is a `str`, the
    check's answer is `search(v) is not None` with a search, else `(v == literal) is equal`."""
    def slow(env: Env) -> Any:
        return run(env, None)
    path = expr.left if type(expr) is ir.Compare else None
    if type(path) is not ir.Path or len(path.segments) > 1 or (
            path.segments and type(path.segments[0]) is not str):
        return slow, None
    root, seg = path.root, (path.segments[0] if path.segments else None)
    op, right = expr.op, expr.right
    search, lit, equal = None, None, op == "=="
    if op in ("==", "!=") and type(right) is ir.Lit and type(right.value) is str:
        lit = right.value
    elif op == "matches" and not too_costly(right.pattern, right.flags, 1 << 20):
        search = compile_regex(right.pattern, right.flags).search  # compiled by `run` already
    elif op == "mentions" and (_fixed_keywords(right) or (None, None))[1] is not None:
        search = _fixed_keywords(right)[1].search
    else:
        return slow, None

    def check(env: Env) -> Any:
        v = env.roots.get(root)
        if seg is not None:
            v = v.get(seg) if type(v) is dict else _step(v, seg)  # (a dict is a Mapping)
        if type(v) is str:
            if search is not None:
                return search(v) is not None
            return (v == lit) is equal
        return slow(env)
    return check, (root, seg, search, lit, equal)


def _matches(c: ir.Compare):
    rx = c.right
    if not isinstance(rx, ir.Regex):
        raise _Unsure  # an evaluation error in the reference
    pattern = compile_regex(rx.pattern, rx.flags)  # re.error: the reference reports it

    def matches(env: Env, rec: Any, v: Any) -> tuple[Any, str | None]:
        if not isinstance(v, str):
            return False, f"`matches` needs a string, got {_type_name(v)}"
        if too_costly(rx.pattern, rx.flags, len(v)):
            raise _Unsure  # a search refused (AFP307): an evaluation error in the reference
        return pattern.search(v) is not None, None
    return matches


def _mentions(c: ir.Compare):
    keywords_of = _value(c.right)  # type: ignore[arg-type]
    fixed = _fixed_keywords(c.right)

    def mentions(env: Env, rec: Any, v: Any) -> tuple[Any, str | None]:
        if fixed is not None:
            keywords, regex = fixed
        else:
            keywords = keywords_of(env, rec)
            keywords = tuple(keywords) if _is_list(keywords) else (keywords,)
            regex = None
        if not keywords or not all(isinstance(k, str) and k for k in keywords):
            return False, "`mentions` needs non-empty keyword strings"
        if not isinstance(v, str):
            return False, f"`mentions` needs a string, got {_type_name(v)}"
        return (regex or keywords_matcher(keywords)).search(v) is not None, None
    return mentions


def _fixed_keywords(right: Any) -> tuple[tuple, Keywords | None] | None:
    """The keywords of a literal right-hand side, settled once (with their regex when valid)."""
    if isinstance(right, ir.Lit):
        value = right.value
    elif isinstance(right, ir.ListExpr) and all(type(i) is ir.Lit for i in right.items):
        value = [i.value for i in right.items]
    else:
        return None
    keywords = tuple(value) if _is_list(value) else (value,)
    if keywords and all(isinstance(k, str) and k for k in keywords):
        return keywords, keywords_matcher(keywords)
    return keywords, None


__all__ = ["Compiled", "compiled"]
