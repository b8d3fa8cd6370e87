"""The typed, frozen IR of an `.afp` program: declarations, expressions, schemas, test scripts.

Role:       the value every later stage reads (checks, interpreter, graph export, serde); values
            and expressions are declared in `ir_expr` and re-exported here.
Invariants: immutable (`attrs.frozen`, tuples, `FrozenMap`); spans are excluded from equality;
            references are unresolved `Ref`s (resolution lives in `analysis`); no lark types.
"""
from __future__ import annotations

from typing import Any, Union

import attrs

from .ir_expr import (  # noqa: F401 - re-exported: `ir` is the one name the other stages use
    NOSPAN, And, Call, Compare, Data, Expr, Invalid, ListExpr, Lit, Node, Not, Or, Path, Ref, Regex,
    Schema, Text, maker, node, span_field,
)
from .source import Span


# ---------------------------------------------------------------- tool bodies
@node
class PythonImpl(Node):
    target: str  # "package.module:attribute"
    span: Span = span_field()


@node
class ReturnsImpl(Node):
    value: Any  # frozen JSON
    span: Span = span_field()


@node
class AgentImpl(Node):
    agent: Ref
    span: Span = span_field()


Impl = Union[PythonImpl, ReturnsImpl, AgentImpl]


# ---------------------------------------------------------------- declarations
@node
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
    span: Span = span_field()  # the name
    full_span: Span = span_field()
    budget_span: Span | None = attrs.field(default=None, eq=False, repr=False)  # `max_iterations = N`


@node
class Tool(Node):
    name: str
    description: str = ""
    input: Schema | None = None
    output: Schema | None = None
    impl: Impl | None = None
    keep_runs: int = 20
    check_in: Expr | None = None
    max_result_chars: int | None = None
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Step(Node):
    tool: Ref
    note: str = ""
    span: Span = span_field()


@node
class Skill(Node):
    name: str
    description: str = ""
    body: Text | None = None
    tools: tuple[Ref, ...] = ()
    steps: tuple[Step, ...] = ()
    on_skip: str = "advance"  # "advance" | "hold"
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Status(Node):
    name: str
    span: Span = span_field()


@node
class Entry(Node):
    skill: Ref
    when: Expr | None = None
    label: str | None = None
    span: Span = span_field()  # the whole statement


@node
class Route(Node):
    src: Ref
    dst: Ref
    on: Ref | None = None
    status: tuple[Status, ...] = ()
    when: Expr | None = None
    label: str | None = None
    span: Span = span_field()  # the whole statement

    @property
    def deterministic(self) -> bool:
        """Bare edges (no `on`, `status` or `when`) only fire through the model's pick."""
        return self.on is not None or bool(self.status) or self.when is not None


@node
class Graph(Node):
    name: str
    entries: tuple[Entry, ...] = ()
    routes: tuple[Route, ...] = ()
    scope_tools: bool = False
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Steering(Node):
    name: str
    prompt: Text = Text(value="")
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Fact(Node):
    name: str
    data: Text | Data = Text(value="")
    when: Expr | None = None
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Instruction(Node):
    name: str
    prompt: Text = Text(value="")
    when: Expr | None = None
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Redact(Node):
    name: str
    keys: tuple[str, ...] = ()
    patterns: tuple[Regex, ...] = ()
    placeholder: str = "[REDACTED]"
    model: bool = False
    span: Span = span_field()
    full_span: Span = span_field()


@node
class Rule(Node):
    action: str  # "allow" | "deny" | "ask"
    when: Expr
    because: str | None = None
    span: Span = span_field()  # the action keyword


@node
class PolicyBlock(Node):
    moment: str  # "input" | "before" | "after" | "output"
    tool: Ref | None = None  # before/after TOOL; None with any_tool or for input/output
    any_tool: bool = False  # `before *`
    rules: tuple[Rule, ...] = ()
    span: Span = span_field()


@node
class Policy(Node):
    name: str
    blocks: tuple[PolicyBlock, ...] = ()
    impl: PythonImpl | None = None
    span: Span = span_field()
    full_span: Span = span_field()


# ---------------------------------------------------------------- test scripts
@node
class UserSays(Node):
    text: str
    span: Span = span_field()


@node
class ScriptedCall(Node):
    tool: Ref
    args: Any = attrs.Factory(dict)  # frozen JSON object; None when rejected (AFP106)
    span: Span = span_field()


@node
class ModelCalls(Node):
    calls: tuple[ScriptedCall, ...]
    span: Span = span_field()


@node
class ModelSays(Node):
    text: str
    span: Span = span_field()


@node
class ToolReturns(Node):
    tool: Ref
    value: Any
    span: Span = span_field()


@node
class ToolFails(Node):
    tool: Ref
    message: str
    span: Span = span_field()


@node
class Decide(Node):
    decision: str  # "approve" | "decline"
    by: str | None = None
    note: str | None = None
    span: Span = span_field()


@node
class ExpectAnswer(Node):
    matches: Regex | None = None
    equals: str | None = None
    span: Span = span_field()


@node
class ExpectCalled(Node):
    tool: Ref
    count: int  # `expect not called T` is count 0
    span: Span = span_field()


@node
class ExpectRoute(Node):
    src: Ref
    dst: Ref
    span: Span = span_field()


@node
class ExpectCursor(Node):
    skill: Ref
    span: Span = span_field()


@node
class ExpectOutcome(Node):
    outcome: str  # answered | paused | max_iterations | denied | error
    span: Span = span_field()


@node
class ExpectTrace(Node):
    kind: str  # an event kind, e.g. "route.conflict"
    span: Span = span_field()


TestStmt = Union[UserSays, ModelCalls, ModelSays, ToolReturns, ToolFails, Decide, ExpectAnswer,
                 ExpectCalled, ExpectRoute, ExpectCursor, ExpectOutcome, ExpectTrace]


@node
class Test(Node):
    name: str
    agent: Ref | None = None
    statements: tuple[TestStmt, ...] = ()
    span: Span = span_field()
    full_span: Span = span_field()


Decl = Union[Agent, Tool, Skill, Graph, Steering, Fact, Instruction, Redact, Policy, Test]

KIND_OF: dict[type, str] = {
    Agent: "agent", Tool: "tool", Skill: "skill", Graph: "graph", Steering: "steering",
    Fact: "fact", Instruction: "instruction", Redact: "redact", Policy: "policy", Test: "test",
}


def kind_of(decl: Decl) -> str:
    return KIND_OF[type(decl)]


def a_kind(decl: Decl) -> str:
    """`kind_of` with its article, for messages: "an agent", "a tool"."""
    kind = kind_of(decl)
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


# ---------------------------------------------------------------- modules
@node
class Import(Node):
    path: str  # as written: "std/redact" or "./common.afp"
    alias: str
    module: str = ""  # the resolved module key ("" when it could not be resolved)
    span: Span = span_field()  # the path string
    alias_span: Span = span_field()


@node
class Comment(Node):
    text: str
    span: Span = span_field()


@node
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


@node
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
