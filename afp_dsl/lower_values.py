"""Lowering of value and expression trees: literals, strings, regexes, lists, maps, paths, calls.

Role:       used by `lower` and `lower_schema`; turns lark subtrees into IR expressions or the
            surface forms `MapV` / `CallV` that attribute converters interpret; a literal's
            text is read by `literals`, as the fast path reads it.
Emits:      AFP004 invalid-regex, AFP005 invalid-string, AFP008 number-out-of-range.
Invariants: never raises; a bad literal yields a diagnostic and a placeholder value.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable

import attrs

from . import ir
from .codes import diag
from .diagnostics import Diagnostic
from .fastlex import Node, Token
from .literals import NUMBER_RANGE, REGEX_FLAGS, compile_problem, multiline, number, shown_number
from .record import Record, record
from .source import Span
from .suggest import closest

_new_span = tuple.__new__

if TYPE_CHECKING:  # parse trees come from lark or from `fastparse`, of the same shape
    import lark

EXPR_CALLS = ("returned", "active")
_ESCAPES = "strings use JSON escapes: `\\\"` `\\\\` `\\/` `\\b` `\\f` `\\n` `\\r` `\\t` `\\uXXXX`"
_CONTROL_NAMES = {"\t": "a tab", "\n": "a line break", "\r": "a carriage return"}
_CONTROL_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
# (an escape JSON has) | (one it does not have, or a raw control character); compiled on the
# error path only, so that start-up pays nothing for it (`re` caches it after)
_STRING_PIECE = r'(\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})|(\\u[0-9a-fA-F]{0,3}|\\.?|[\x00-\x1f])'


def _string_fault(literal: str) -> tuple[int, str]:
    """(offset in `literal`, the text at fault) of the first raw control character or escape JSON
    does not have in a `"..."` literal (the quotes included); (0, "") when none is found."""
    for m in re.compile(_STRING_PIECE, re.S).finditer(literal, 1, len(literal) - 1):
        if m.group(2) is not None:  # (group 1: an escape JSON has, passed over)
            return m.start(), m.group(2)
    return 0, ""


def _lone_escape(literal: str) -> tuple[int, str]:
    """(offset in `literal`, the escape) of its first `\\uD800`-`\\uDFFF` escape that is not a
    high half followed at once by a low half; (0, "") when none is found."""
    escapes = [(m.start(), m.group(), int(m.group(1), 16))
               for m in re.finditer(r"\\(?:u([0-9a-fA-F]{4})|.)", literal) if m.group(1)]
    i = 0
    while i < len(escapes):
        at, text, code = escapes[i]
        if 0xD800 <= code <= 0xDBFF and i + 1 < len(escapes) and escapes[i + 1][0] == at + 6 \
                and 0xDC00 <= escapes[i + 1][2] <= 0xDFFF:
            i += 2
            continue
        if 0xD800 <= code <= 0xDFFF:
            return at, text
        i += 1
    return 0, ""


@record
class MapV(Record):
    """A `{ key: value }` map as written (keys with their spans)."""

    items: tuple[tuple[str, Span, Any], ...]
    span: Span


@record
class CallV(Record):
    """`name(args...)` outside expressions' `returned`/`active` meaning: file, python, returns, agent."""

    func: str
    args: tuple[Any, ...]
    span: Span
    func_span: Span


_U = "\\u"
_SURROGATE = re.compile("[\ud800-\udfff]")  # left by an unpaired `\\uD800`-`\\uDFFF` escape


def call_help(value: Any, names: Iterable[str]) -> str | None:
    """"did you mean `python(...)`? " for a call `value` whose name is a near miss of one of
    `names` (the calls that can stand where it does); None otherwise."""
    names = tuple(names)
    if not isinstance(value, CallV) or value.func in names:
        return None
    close = closest(value.func, names)
    return f"did you mean `{close}(...)`? " if close else None


class ValueLowerer:
    """Converts value/expression subtrees of one file; collects diagnostics into `diags`."""

    def __init__(self, file: str, diags: list[Diagnostic]):
        self.file = file
        self.diags = diags
        self.out_of_range: set[Span] = set()  # numbers reported as AFP008 (lowered as 0)
        self.bad_strings: set[Span] = set()  # strings reported as AFP005 (lowered as written)
        self.surface = 0  # how many `MapV`/`CallV` were made so far (see `expr`)
        self.handlers: dict[str, Callable[[lark.Tree], Any]] = {
            "path": self.path, "list": self.list_, "map": self.map_, "call": self.call,
            "cmp": self.cmp, "in_": self.in_, "not_in": self.not_in, "matches": self.matches,
            "mentions": self.mentions, "not_": self.not_, "and_expr": self.and_, "or_expr": self.or_,
            "true_lit": lambda t: ir.Lit(value=True, span=self.span(t)),
            "false_lit": lambda t: ir.Lit(value=False, span=self.span(t)),
            "null_lit": lambda t: ir.Lit(value=None, span=self.span(t)),
        }

    # -------------------------------------------------------------- spans
    def span(self, node: lark.Tree | lark.Token) -> Span:
        # Called for nearly every token and node: builds the tuple directly, clamping as
        # `Span.__new__` does, without that extra Python call. Speed: the fast path's leaves and
        # nodes hold their offsets themselves, always ints (no `meta` property, no `None`).
        t = type(node)
        if t is Token or t is Node:
            start, end = node.start_pos, node.end_pos
        elif isinstance(node, str):
            start = node.start_pos or 0
            end = node.end_pos or start
        else:
            meta = node.meta
            if meta.empty:
                return Span(self.file, 0, 0)
            start, end = meta.start_pos, meta.end_pos
        return _new_span(Span, (self.file, start, end if end >= start else start))

    # -------------------------------------------------------------- dispatch
    def value(self, node: lark.Tree | lark.Token) -> Any:
        """Any value/expression node → ir.Expr | ir.Regex | MapV | CallV."""
        if isinstance(node, str):
            return self.token(node)
        handler = self.handlers.get(node.data)
        if handler is None:  # pragma: no cover - grammar and handlers are kept in step
            return ir.Lit(value=None, span=self.span(node))
        return handler(node)

    def token(self, tok: lark.Token) -> Any:
        kind = tok.type
        if kind == "STRING":
            return ir.Lit(value=self.string(tok), span=self.span(tok))
        if kind == "MLSTRING":
            return ir.Lit(value=multiline(str(tok)), span=self.span(tok))
        if kind == "NUMBER":
            return ir.Lit(value=self.number(tok), span=self.span(tok))
        if kind == "REGEX":
            return self.regex(tok)
        return ir.Lit(value=str(tok), span=self.span(tok))  # pragma: no cover

    # -------------------------------------------------------------- literals
    def number(self, tok: lark.Token) -> int | float:
        value = number(str(tok))
        if value is None:
            self.diags.append(diag("AFP008", f"the number {shown_number(str(tok))} is too large to represent",
                                   self.span(tok), "out of range", help=NUMBER_RANGE))
            self.out_of_range.add(self.span(tok))
            self.surface += 1  # (a condition holding it is cleaned: `clean_expr`)
            return 0
        return value

    def string(self, tok: lark.Token) -> str:
        """Decode a `"..."` literal with JSON escapes (or a `\"\"\"` one, dedented)."""
        if tok.type == "MLSTRING":
            return multiline(str(tok))
        # Speed: `plain_string`'s test, inlined (one call fewer for nearly every string).
        if "\\" not in tok and tok.isprintable():
            return tok[1:-1]  # no escapes, no control characters: what json.loads returns (a plain str)
        try:
            text = json.loads(str(tok))
        except ValueError:
            self.diags.append(self._bad_string(str(tok), self.span(tok)))
            self.bad_strings.add(self.span(tok))
            self.surface += 1  # (a condition holding it is cleaned: `clean_expr`)
            return str(tok)[1:-1]
        if _SURROGATE.search(text) is not None:  # `\ud83d` alone: no character, no UTF-8 form
            self.diags.append(self._lone_surrogate(str(tok), self.span(tok)))
            self.bad_strings.add(self.span(tok))
            self.surface += 1
            return _SURROGATE.sub("\ufffd", text)
        return text

    def holds_fault(self, span: Span) -> bool:
        """Does `span` hold a string reported as AFP005 or a number reported as AFP008? What it
        says is not what was meant, so nothing is looked up or checked with it (one root cause,
        one diagnostic)."""
        return any(span.start <= b.start and b.end <= span.end
                   for faults in (self.bad_strings, self.out_of_range) for b in faults)

    def _lone_surrogate(self, literal: str, span: Span) -> Diagnostic:
        """AFP005 at the first `\\uD800`-`\\uDFFF` escape of `literal` that is not half of a pair."""
        at, escape = _lone_escape(literal)
        where = _new_span(Span, (span.file, span.start + at, span.start + at + 6)) if escape else span
        return diag("AFP005", f"the escape `{escape or _U}` in this string is half of a surrogate pair",
                    where, "lone surrogate", help="write the character itself, or both halves of its "
                    "pair (`\\ud83d\\ude00` is 😀)")

    def _bad_string(self, literal: str, span: Span) -> Diagnostic:
        """AFP005 for a `"..."` literal JSON refuses, pointing at its first fault: an escape
        JSON does not have, or a raw control character."""
        at, what = _string_fault(literal)
        if not what:  # (not found: the literal as a whole)
            return diag("AFP005", "invalid string", span, "not a JSON string", help=_ESCAPES)
        where = _new_span(Span, (span.file, span.start + at, span.start + at + len(what)))
        if what[0] == "\\":
            return diag("AFP005", f"invalid escape `{what}` in string", where, "not a JSON escape",
                        help=_ESCAPES + "; write a backslash itself as `\\\\`")
        escape = _CONTROL_ESCAPES.get(what, f"\\u{ord(what):04x}")
        several = "; for text on several lines, use a `\"\"\"` string" if what == "\n" else ""
        return diag("AFP005", f"{_CONTROL_NAMES.get(what, f'control character U+{ord(what):04X}')} "
                    f"inside a string", where, "raw control character",
                    help=f"write it as the escape `{escape}`{several}")

    def regex(self, tok: lark.Token) -> ir.Regex:
        text = str(tok)
        end = text.rindex("/")
        pattern, flags = text[1:end], text[end + 1:]
        span = self.span(tok)
        unknown = sorted(set(flags) - set(REGEX_FLAGS))
        if unknown:  # the lexer takes any letters after the slash, so `/x/g` is not read as `/x/` `g`
            self.diags.append(diag("AFP004", "unknown regex flag " + ", ".join(f"`{f}`" for f in unknown),
                                   span, "unknown flag", help="flags are `i`, `m`, `s` and `x`"))
            flags = "".join(f for f in flags if f in REGEX_FLAGS)
        if len(set(flags)) != len(flags):
            self.diags.append(diag("AFP004", f"regex flag repeated in `{flags}`", span, "repeated flag"))
        problem = compile_problem(pattern, flags)
        if problem is not None:
            self.diags.append(diag("AFP004", f"invalid regex: {problem}", span, "does not compile",
                                   help="regexes use Python `re` syntax"))
        return ir.Regex(pattern=pattern, flags="".join(sorted(set(flags))), span=span)

    # -------------------------------------------------------------- containers
    def list_(self, node: lark.Tree) -> ir.ListExpr:
        return ir.ListExpr(items=tuple(self.value(c) for c in node.children), span=self.span(node))

    def map_(self, node: lark.Tree) -> MapV:
        items = []
        seen: set[str] = set()
        for pair in node.children:
            key_tok, val = pair.children[0], pair.children[-1]
            key = self.string(key_tok) if key_tok.type in ("STRING", "MLSTRING") else str(key_tok)
            if key in seen and self.span(key_tok) not in self.bad_strings:  # the first value is kept, as for a repeated attribute
                self.diags.append(diag("AFP106", f"key `{key}` is given twice in this map",
                                       self.span(key_tok), "given again here",
                                       help="keep one of the two values"))
                continue
            seen.add(key)
            items.append((key, self.span(key_tok), self.value(val)))
        self.surface += 1
        return MapV(tuple(items), self.span(node))

    def call(self, node: lark.Tree) -> Any:
        callee = node.children[0]
        name_tok = callee.children[0] if not isinstance(callee, str) else callee
        args = tuple(self.value(c) for c in node.children[1:])
        name = str(name_tok)
        if name in EXPR_CALLS and len(args) == 1 and isinstance(args[0], ir.Path) and len(
                args[0].segments) <= 1 and all(isinstance(x, str) for x in args[0].segments):
            p = args[0]
            ref = (ir.Ref(name=p.segments[0], alias=p.root, span=p.span) if p.segments
                   else ir.Ref(name=p.root, span=p.span))
            return ir.Call(func=name, arg=ref, span=self.span(node))
        self.surface += 1
        return CallV(name, args, self.span(node), self.span(name_tok))

    def expr(self, node: lark.Tree | lark.Token) -> Any:
        """A condition: like `value`, but data maps and value calls are reported and replaced."""
        # Speed: `clean_expr` changes only what holds a `MapV` or `CallV`; without one made while
        # lowering this node, it would walk the expression to return it as it is.
        before = self.surface
        e = self.value(node)
        return e if self.surface == before else self.clean_expr(e)

    def clean_expr(self, e: Any) -> Any:
        # Speed: a node none of whose parts changed is kept as it is (an equal copy otherwise).
        if isinstance(e, (ir.Path, ir.Call, ir.Regex)):
            return e
        if isinstance(e, ir.Lit):  # a string or number reported as AFP005/AFP008 is not the value
            return ir.Invalid(span=e.span) if self.holds_fault(e.span) else e  # meant: no check reads it
        if isinstance(e, (ir.ListExpr, ir.And, ir.Or)):
            items = tuple(self.clean_expr(i) for i in e.items)
            return e if _same(items, e.items) else attrs.evolve(e, items=items)
        if isinstance(e, ir.Compare):
            left, right = self.clean_expr(e.left), self.clean_expr(e.right)
            return e if left is e.left and right is e.right else attrs.evolve(e, left=left, right=right)
        if isinstance(e, ir.Not):
            item = self.clean_expr(e.item)
            return e if item is e.item else attrs.evolve(e, item=item)
        what = "a map" if isinstance(e, MapV) else f"`{getattr(e, 'func', '?')}(...)`"
        hint = ((call_help(e, EXPR_CALLS) or "") + "conditions call only `returned(TOOL)` and "
                "`active(SKILL)`" if isinstance(e, CallV)
                else "conditions compare paths with literals, lists of literals or regexes")
        self.diags.append(diag("AFP106", f"{what} cannot stand in a condition", e.span, "not allowed here",
                               help=hint))
        return ir.Invalid(span=e.span)  # (not a `null`: the checks skip what holds it)

    # -------------------------------------------------------------- expressions
    def path(self, node: lark.Tree) -> ir.Path:
        root_tree = node.children[0]
        root_tok = root_tree.children[0] if not isinstance(root_tree, str) else root_tree
        segs: list[str | int] = []
        for tok in node.children[1:]:
            if tok.type == "NUMBER":
                segs.append(self.index(tok))
            else:
                segs.append(str(tok))
        return ir.Path(root=str(root_tok), segments=tuple(segs), span=self.span(node),
                       root_span=self.span(root_tok))

    def index(self, tok: lark.Token) -> int:
        value = self.number(tok)
        if not isinstance(value, int) or value < 0:
            self.diags.append(diag("AFP001", "a path index must be a whole number of at least 0",
                                   self.span(tok), "not a valid index"))
            return 0
        return value

    def cmp(self, node: lark.Tree) -> ir.Compare:
        left, op, right = node.children
        return ir.Compare(op=str(op), left=self.value(left), right=self.value(right), span=self.span(node))

    def in_(self, node: lark.Tree) -> ir.Compare:
        left, right = node.children
        return ir.Compare(op="in", left=self.value(left), right=self.value(right), span=self.span(node))

    def not_in(self, node: lark.Tree) -> ir.Compare:
        left, right = node.children
        return ir.Compare(op="not in", left=self.value(left), right=self.value(right), span=self.span(node))

    def matches(self, node: lark.Tree) -> ir.Compare:
        left, right = node.children
        return ir.Compare(op="matches", left=self.value(left), right=self.regex(right), span=self.span(node))

    def mentions(self, node: lark.Tree) -> ir.Compare:
        left, right = node.children
        return ir.Compare(op="mentions", left=self.value(left), right=self.value(right), span=self.span(node))

    def not_(self, node: lark.Tree) -> ir.Not:
        return ir.Not(item=self.value(node.children[0]), span=self.span(node))

    def and_(self, node: lark.Tree) -> ir.And:
        return ir.And(items=tuple(self.value(c) for c in node.children), span=self.span(node))

    def or_(self, node: lark.Tree) -> ir.Or:
        return ir.Or(items=tuple(self.value(c) for c in node.children), span=self.span(node))


# ---------------------------------------------------------------- helpers
def _same(new: tuple, old: tuple) -> bool:
    return all(a is b for a, b in zip(new, old))


BAD = object()  # marks literal data that could not be converted (a diagnostic was emitted)


def to_data(value: Any, diags: list[Diagnostic]) -> Any:
    """A lowered value as plain JSON data (frozen), or BAD after reporting why not."""
    if isinstance(value, ir.Lit):
        return value.value
    if isinstance(value, ir.ListExpr):
        items = [to_data(v, diags) for v in value.items]
        return BAD if any(i is BAD for i in items) else tuple(items)
    if isinstance(value, MapV):
        from .frozen import FrozenMap
        out = {}
        for key, _, v in value.items:
            d = to_data(v, diags)
            if d is BAD:
                return BAD
            out[key] = d
        return FrozenMap(out)
    span = getattr(value, "span", None)
    what = {ir.Path: "a reference", ir.Regex: "a regex", CallV: "a call"}.get(type(value), "an expression")
    help = "maps and lists used as data hold only strings, numbers, booleans, null, lists and maps"
    if isinstance(value, ir.Path):  # (most often a string written without its quotes)
        help = f"for the text, quote it: `{json.dumps(_path_text(value))}`; {help}"
    diags.append(diag("AFP106", f"{what} cannot stand inside literal data", span, "not literal data",
                      help=help))
    return BAD


def _path_text(p: ir.Path) -> str:
    return p.root + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in p.segments)
