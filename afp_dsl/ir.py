"""The typed, frozen IR of an `.afp` program: declarations, expressions, schemas, test scripts.

Role:       the value every later stage reads (checks, interpreter, graph export, serde).
Invariants: immutable (`attrs.frozen`, tuples, `FrozenMap`); spans are excluded from equality;
            references are unresolved `Ref`s (resolution lives in `analysis`); no lark types.
"""
from __future__ import annotations

from typing import Any, Union

import attrs

from .source import Span

NOSPAN = Span("", 0, 0)


def _span():
    return attrs.field(default=NOSPAN, eq=False, repr=False)


class Node:
    """Equality, hashing and repr shared by every IR class, written once here: attrs would compile
    these three methods for each of the ~50 classes at import, about half of this module's import
    time, which every `afpc` command pays. Same meaning as attrs' own: a node equals a node of
    the same class whose compared fields are equal; fields declared `eq=False` (spans) take no
    part in equality, hashing or repr."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) == _key(other)

    def __ne__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) != _key(other)

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, _key(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[1])
        return f"{self.__class__.__name__}({shown})"


_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(compared field names, shown field names) of an IR class."""
    names = _NAMES.get(cls)
    if names is None:
        fields = attrs.fields(cls)
        names = _NAMES[cls] = (tuple(f.name for f in fields if f.eq),
                               tuple(f.name for f in fields if f.repr))
    return names


def _key(node: Node) -> tuple:
    return tuple([getattr(node, n) for n in _names(node.__class__)[0]])


_node = attrs.frozen(kw_only=True, eq=False, repr=False)


# ---------------------------------------------------------------- values
@_node
class Ref(Node):
    """A reference `name` or `alias.name`; `span` covers exactly the written name."""

    name: str
    alias: str | None = None
    span: Span = _span()

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


@_node
class Regex(Node):
    pattern: str
    flags: str = ""
    span: Span = _span()

    def __str__(self) -> str:
        return f"/{self.pattern}/{self.flags}"


@_node
class Text(Node):
    """Prompt text, inline or read from `file(...)` (then `file` names it, relative to the spec)."""

    value: str
    file: str | None = None
    span: Span = _span()


@_node
class Data(Node):
    """Literal JSON data (frozen); `file` is set when read from `file(...)`."""

    value: Any
    file: str | None = None
    span: Span = _span()


@_node
class Schema(Node):
    """A JSON Schema 2020-12 document (frozen), from a schema block, a raw map or a file.

    `pointers` maps JSON pointers inside `json` (e.g. `/properties/city`) to source spans, so
    later stages can underline the field a problem is about.
    """

    json: Any
    origin: str = "block"  # "block" | "map" | "file"
    file: str | None = None
    pointers: tuple[tuple[str, Span], ...] = attrs.field(default=(), eq=False, repr=False)
    span: Span = _span()

    def span_of(self, pointer: str) -> Span:
        for p, s in self.pointers:
            if p == pointer:
                return s
        return self.span


# ---------------------------------------------------------------- expressions
@_node
class Path(Node):
    """`root.seg[0].seg`; segments are field names (str) or indexes (int)."""

    root: str
    segments: tuple[str | int, ...] = ()
    span: Span = _span()
    root_span: Span = _span()


@_node
class Lit(Node):
    value: Any  # str | int | float | bool | None
    span: Span = _span()


@_node
class ListExpr(Node):
    items: tuple["Expr", ...]
    span: Span = _span()


@_node
class Call(Node):
    """`returned(tool)` or `active(skill)`."""

    func: str
    arg: Ref
    span: Span = _span()


@_node
class Compare(Node):
    """`left OP right`; op is one of == != < <= > >= in `not in` matches mentions."""

    op: str
    left: "Expr"
    right: Union["Expr", Regex]
    span: Span = _span()


@_node
class And(Node):
    items: tuple["Expr", ...]
    span: Span = _span()


@_node
class Or(Node):
    items: tuple["Expr", ...]
    span: Span = _span()


@_node
class Not(Node):
    item: "Expr"
    span: Span = _span()


Expr = Union[Path, Lit, ListExpr, Call, Compare, And, Or, Not]


# ---------------------------------------------------------------- tool bodies
@_node
class PythonImpl(Node):
    target: str  # "package.module:attribute"
    span: Span = _span()


@_node
class ReturnsImpl(Node):
    value: Any  # frozen JSON
    span: Span = _span()


@_node
class AgentImpl(Node):
    agent: Ref
    span: Span = _span()


Impl = Union[PythonImpl, ReturnsImpl, AgentImpl]


# ---------------------------------------------------------------- declarations
@_node
class Agent(Node):
    name: str
    system: Text = Text(value="")
    model: str | None = None
    max_iterations: int = 10
    wrap_up: bool = True
    tools: tuple[Ref, ...] = ()
    skills: tuple[Ref, ...] = ()
    graph: Ref | None = None
    context: tuple[Ref, ...] = ()
    policies: tuple[Ref, ...] = ()
    redact: tuple[Ref, ...] = ()
    continuity: str = "run"  # "run" | "conversation"
    tool_scope: str = "always"  # "always" | "active"
    span: Span = _span()  # the name
    full_span: Span = _span()


@_node
class Tool(Node):
    name: str
    description: str = ""
    input: Schema | None = None
    output: Schema | None = None
    impl: Impl | None = None
    keep_runs: int = 20
    check_in: Expr | None = None
    max_result_chars: int | None = None
    span: Span = _span()
    full_span: Span = _span()


@_node
class Step(Node):
    tool: Ref
    note: str = ""
    span: Span = _span()


@_node
class Skill(Node):
    name: str
    description: str = ""
    body: Text | None = None
    tools: tuple[Ref, ...] = ()
    steps: tuple[Step, ...] = ()
    on_skip: str = "advance"  # "advance" | "hold"
    span: Span = _span()
    full_span: Span = _span()


@_node
class Status(Node):
    name: str
    span: Span = _span()


@_node
class Entry(Node):
    skill: Ref
    when: Expr | None = None
    label: str | None = None
    span: Span = _span()  # the whole statement


@_node
class Route(Node):
    src: Ref
    dst: Ref
    on: Ref | None = None
    status: tuple[Status, ...] = ()
    when: Expr | None = None
    label: str | None = None
    span: Span = _span()  # the whole statement

    @property
    def deterministic(self) -> bool:
        """Bare edges (no `on`, `status` or `when`) only fire through the model's pick."""
        return self.on is not None or bool(self.status) or self.when is not None


@_node
class Graph(Node):
    name: str
    entries: tuple[Entry, ...] = ()
    routes: tuple[Route, ...] = ()
    scope_tools: bool = False
    span: Span = _span()
    full_span: Span = _span()


@_node
class Steering(Node):
    name: str
    prompt: Text = Text(value="")
    span: Span = _span()
    full_span: Span = _span()


@_node
class Fact(Node):
    name: str
    data: Text | Data = Text(value="")
    when: Expr | None = None
    span: Span = _span()
    full_span: Span = _span()


@_node
class Instruction(Node):
    name: str
    prompt: Text = Text(value="")
    when: Expr | None = None
    span: Span = _span()
    full_span: Span = _span()


@_node
class Redact(Node):
    name: str
    keys: tuple[str, ...] = ()
    patterns: tuple[Regex, ...] = ()
    placeholder: str = "[REDACTED]"
    model: bool = False
    span: Span = _span()
    full_span: Span = _span()


@_node
class Rule(Node):
    action: str  # "allow" | "deny" | "ask"
    when: Expr
    because: str | None = None
    span: Span = _span()  # the action keyword


@_node
class PolicyBlock(Node):
    moment: str  # "input" | "before" | "after" | "output"
    tool: Ref | None = None  # before/after TOOL; None with any_tool or for input/output
    any_tool: bool = False  # `before *`
    rules: tuple[Rule, ...] = ()
    span: Span = _span()


@_node
class Policy(Node):
    name: str
    blocks: tuple[PolicyBlock, ...] = ()
    impl: PythonImpl | None = None
    span: Span = _span()
    full_span: Span = _span()


# ---------------------------------------------------------------- test scripts
@_node
class UserSays(Node):
    text: str
    span: Span = _span()


@_node
class ScriptedCall(Node):
    tool: Ref
    args: Any = attrs.Factory(dict)  # frozen JSON object
    span: Span = _span()


@_node
class ModelCalls(Node):
    calls: tuple[ScriptedCall, ...]
    span: Span = _span()


@_node
class ModelSays(Node):
    text: str
    span: Span = _span()


@_node
class ToolReturns(Node):
    tool: Ref
    value: Any
    span: Span = _span()


@_node
class ToolFails(Node):
    tool: Ref
    message: str
    span: Span = _span()


@_node
class Decide(Node):
    decision: str  # "approve" | "decline"
    by: str | None = None
    note: str | None = None
    span: Span = _span()


@_node
class ExpectAnswer(Node):
    matches: Regex | None = None
    equals: str | None = None
    span: Span = _span()


@_node
class ExpectCalled(Node):
    tool: Ref
    count: int  # `expect not called T` is count 0
    span: Span = _span()


@_node
class ExpectRoute(Node):
    src: Ref
    dst: Ref
    span: Span = _span()


@_node
class ExpectCursor(Node):
    skill: Ref
    span: Span = _span()


@_node
class ExpectOutcome(Node):
    outcome: str  # answered | paused | max_iterations | denied | error
    span: Span = _span()


@_node
class ExpectTrace(Node):
    kind: str  # an event kind, e.g. "route.conflict"
    span: Span = _span()


TestStmt = Union[UserSays, ModelCalls, ModelSays, ToolReturns, ToolFails, Decide, ExpectAnswer,
                 ExpectCalled, ExpectRoute, ExpectCursor, ExpectOutcome, ExpectTrace]


@_node
class Test(Node):
    name: str
    agent: Ref | None = None
    statements: tuple[TestStmt, ...] = ()
    span: Span = _span()
    full_span: Span = _span()


Decl = Union[Agent, Tool, Skill, Graph, Steering, Fact, Instruction, Redact, Policy, Test]

KIND_OF: dict[type, str] = {
    Agent: "agent", Tool: "tool", Skill: "skill", Graph: "graph", Steering: "steering",
    Fact: "fact", Instruction: "instruction", Redact: "redact", Policy: "policy", Test: "test",
}


def kind_of(decl: Decl) -> str:
    return KIND_OF[type(decl)]


# ---------------------------------------------------------------- modules
@_node
class Import(Node):
    path: str  # as written: "std/redact" or "./common.afp"
    alias: str
    module: str = ""  # the resolved module key ("" when it could not be resolved)
    span: Span = _span()  # the path string
    alias_span: Span = _span()


@_node
class Comment(Node):
    text: str
    span: Span = _span()


@_node
class Module(Node):
    """One `.afp` file. `key` is its display path (`std/redact.afp` for the standard library)."""

    key: str
    imports: tuple[Import, ...] = ()
    decls: tuple[Decl, ...] = ()
    comments: tuple[Comment, ...] = attrs.field(default=(), eq=False)
    source: str = attrs.field(default="", eq=False, repr=False)

    def get(self, name: str) -> Decl | None:
        for d in self.decls:
            if d.name == name:
                return d
        return None


@_node
class Program(Node):
    """The root module and every module it imports (root first, then in load order)."""

    root: str
    modules: tuple[Module, ...] = ()

    def module(self, key: str) -> Module | None:
        for m in self.modules:
            if m.key == key:
                return m
        return None

    @property
    def root_module(self) -> Module:
        m = self.module(self.root)
        assert m is not None
        return m
