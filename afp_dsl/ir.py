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


# ---------------------------------------------------------------- values
@attrs.frozen(kw_only=True)
class Ref:
    """A reference `name` or `alias.name`; `span` covers exactly the written name."""

    name: str
    alias: str | None = None
    span: Span = _span()

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


@attrs.frozen(kw_only=True)
class Regex:
    pattern: str
    flags: str = ""
    span: Span = _span()

    def __str__(self) -> str:
        return f"/{self.pattern}/{self.flags}"


@attrs.frozen(kw_only=True)
class Text:
    """Prompt text, inline or read from `file(...)` (then `file` names it, relative to the spec)."""

    value: str
    file: str | None = None
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Data:
    """Literal JSON data (frozen); `file` is set when read from `file(...)`."""

    value: Any
    file: str | None = None
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Schema:
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
@attrs.frozen(kw_only=True)
class Path:
    """`root.seg[0].seg`; segments are field names (str) or indexes (int)."""

    root: str
    segments: tuple[str | int, ...] = ()
    span: Span = _span()
    root_span: Span = _span()


@attrs.frozen(kw_only=True)
class Lit:
    value: Any  # str | int | float | bool | None
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ListExpr:
    items: tuple["Expr", ...]
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Call:
    """`returned(tool)` or `active(skill)`."""

    func: str
    arg: Ref
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Compare:
    """`left OP right`; op is one of == != < <= > >= in `not in` matches mentions."""

    op: str
    left: "Expr"
    right: Union["Expr", Regex]
    span: Span = _span()


@attrs.frozen(kw_only=True)
class And:
    items: tuple["Expr", ...]
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Or:
    items: tuple["Expr", ...]
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Not:
    item: "Expr"
    span: Span = _span()


Expr = Union[Path, Lit, ListExpr, Call, Compare, And, Or, Not]


# ---------------------------------------------------------------- tool bodies
@attrs.frozen(kw_only=True)
class PythonImpl:
    target: str  # "package.module:attribute"
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ReturnsImpl:
    value: Any  # frozen JSON
    span: Span = _span()


@attrs.frozen(kw_only=True)
class AgentImpl:
    agent: Ref
    span: Span = _span()


Impl = Union[PythonImpl, ReturnsImpl, AgentImpl]


# ---------------------------------------------------------------- declarations
@attrs.frozen(kw_only=True)
class Agent:
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


@attrs.frozen(kw_only=True)
class Tool:
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


@attrs.frozen(kw_only=True)
class Step:
    tool: Ref
    note: str = ""
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Skill:
    name: str
    description: str = ""
    body: Text | None = None
    tools: tuple[Ref, ...] = ()
    steps: tuple[Step, ...] = ()
    on_skip: str = "advance"  # "advance" | "hold"
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Status:
    name: str
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Entry:
    skill: Ref
    when: Expr | None = None
    label: str | None = None
    span: Span = _span()  # the whole statement


@attrs.frozen(kw_only=True)
class Route:
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


@attrs.frozen(kw_only=True)
class Graph:
    name: str
    entries: tuple[Entry, ...] = ()
    routes: tuple[Route, ...] = ()
    scope_tools: bool = False
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Steering:
    name: str
    prompt: Text = Text(value="")
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Fact:
    name: str
    data: Text | Data = Text(value="")
    when: Expr | None = None
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Instruction:
    name: str
    prompt: Text = Text(value="")
    when: Expr | None = None
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Redact:
    name: str
    keys: tuple[str, ...] = ()
    patterns: tuple[Regex, ...] = ()
    placeholder: str = "[REDACTED]"
    model: bool = False
    span: Span = _span()
    full_span: Span = _span()


@attrs.frozen(kw_only=True)
class Rule:
    action: str  # "allow" | "deny" | "ask"
    when: Expr
    because: str | None = None
    span: Span = _span()  # the action keyword


@attrs.frozen(kw_only=True)
class PolicyBlock:
    moment: str  # "input" | "before" | "after" | "output"
    tool: Ref | None = None  # before/after TOOL; None with any_tool or for input/output
    any_tool: bool = False  # `before *`
    rules: tuple[Rule, ...] = ()
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Policy:
    name: str
    blocks: tuple[PolicyBlock, ...] = ()
    impl: PythonImpl | None = None
    span: Span = _span()
    full_span: Span = _span()


# ---------------------------------------------------------------- test scripts
@attrs.frozen(kw_only=True)
class UserSays:
    text: str
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ScriptedCall:
    tool: Ref
    args: Any = attrs.Factory(dict)  # frozen JSON object
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ModelCalls:
    calls: tuple[ScriptedCall, ...]
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ModelSays:
    text: str
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ToolReturns:
    tool: Ref
    value: Any
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ToolFails:
    tool: Ref
    message: str
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Decide:
    decision: str  # "approve" | "decline"
    by: str | None = None
    note: str | None = None
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectAnswer:
    matches: Regex | None = None
    equals: str | None = None
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectCalled:
    tool: Ref
    count: int  # `expect not called T` is count 0
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectRoute:
    src: Ref
    dst: Ref
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectCursor:
    skill: Ref
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectOutcome:
    outcome: str  # answered | paused | max_iterations | denied | error
    span: Span = _span()


@attrs.frozen(kw_only=True)
class ExpectTrace:
    kind: str  # an event kind, e.g. "route.conflict"
    span: Span = _span()


TestStmt = Union[UserSays, ModelCalls, ModelSays, ToolReturns, ToolFails, Decide, ExpectAnswer,
                 ExpectCalled, ExpectRoute, ExpectCursor, ExpectOutcome, ExpectTrace]


@attrs.frozen(kw_only=True)
class Test:
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
@attrs.frozen(kw_only=True)
class Import:
    path: str  # as written: "std/redact" or "./common.afp"
    alias: str
    module: str = ""  # the resolved module key ("" when it could not be resolved)
    span: Span = _span()  # the path string
    alias_span: Span = _span()


@attrs.frozen(kw_only=True)
class Comment:
    text: str
    span: Span = _span()


@attrs.frozen(kw_only=True)
class Module:
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


@attrs.frozen(kw_only=True)
class Program:
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
