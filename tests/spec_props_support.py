"""Random valid specs for the run property tests (tests/test_spec_properties.py): a `Plan` drawn
by `plans()` prints as `.afp` text exercising a graph (entries, guarded routes, bare edges, open
skills), steps (`on_skip`), `check_in`, policies (`before`/`after` a tool or `*`, `allow`/`deny`/
`ask`, `input`/`output`), redact rules (keys, a pattern, `model`, placeholders), `when`s reading
`returned(t)`, `active(s)` and `last`, a budget (`max_iterations`, `wrap_up`), `continuity` and
agent-backed tools. `scripts_for(plan)` draws mock scripts calling its tools with valid and
invalid arguments, unknown tools, `read_skill` and `skip_step`, and answers echoing secrets;
`HostTools` answers host-bound tools from a drawn queue (structured secrets, JSON text, raises).

Secrets (each only ever under its redacted key, except where a reply or an argument copies it):
`run_props_support.PATTERN_SECRET` (the pattern), `FACT_SECRET` (a fact: known from the start),
`RETURNS_SECRET` (a `returns` value: known from the start), `TOKEN` (results, key `token`),
`PASSWORD` (arguments, key `password`), `SESSION` (JSON text results, key `session`).
"""
from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import strategies as st
from run_props_support import FACT_SECRET, PASSWORD, PATTERN_SECRET, TOKEN

from afp_dsl.envelopes import absent, described

RETURNS_SECRET = "TOK-RETURNS-SECRET-3"
SESSION = "SESS-JSONTEXT-SECRET-5"
REMEMBERED = {"token": TOKEN, "password": PASSWORD, "session": SESSION}  # key → its only value
ABSOLUTE = (PATTERN_SECRET, FACT_SECRET)  # secrets from the run's first event on (`Plan.absolute`)
PLACEHOLDERS = ("[REDACTED]", "[R1]")
ECHO = f"echo {TOKEN} {PASSWORD} {SESSION} {PATTERN_SECRET} {FACT_SECRET} {RETURNS_SECRET}"

INPUTS = {"none": "", "id": "input { id: string(min_length: 2) }",
          "pay": 'input { amount: number, password: string = "" }', "q": "input { q: string }"}
RETURNS = ['"ok"', '{ status: "found", n: 3 }', f'{{ status: "proc", api_key: "{RETURNS_SECRET}" }}',
           '"forbidden"', '"has SECRET-1234 inside"']
STATUSES = ["success", "failure", "denied", "invalid", "absent", "pending", "partial"]


@attrs.frozen
class Tool:
    name: str
    input: str  # a key of INPUTS
    impl: str  # host | returns | agent
    returns: str = '"ok"'
    check_in: str | None = None

    def text(self) -> str:
        impl = {"host": "", "returns": f" impl = returns({self.returns})",
                "agent": " impl = agent(inner)"}[self.impl]
        check = f" check_in = {self.check_in}" if self.check_in else ""
        return f'tool {self.name} {{ description = "Tool {self.name}." {INPUTS[self.input]}{impl}{check} }}'


@attrs.frozen
class Skill:
    name: str
    tools: tuple[str, ...]
    body: bool
    steps: tuple[str, ...] = ()
    on_skip: str | None = None

    def text(self) -> str:
        body = f' body = "Body of {self.name}."' if self.body else ""
        tools = f" tools = [{', '.join(self.tools)}]" if self.tools else ""
        steps = ""
        if self.steps:
            steps = " steps { " + " ".join(f'{t} "do {t}"' for t in self.steps) + " }"
            steps += f' on_skip = "{self.on_skip}"' if self.on_skip else ""
        return f'skill {self.name} {{ description = "Skill {self.name}."{body}{tools}{steps} }}'


@attrs.frozen
class Plan:
    tools: tuple[Tool, ...]
    skills: tuple[Skill, ...]
    baseline: tuple[str, ...]
    graph: tuple[str, ...] | None  # its statements
    open_skills: tuple[str, ...]
    instructions: tuple[str, ...]  # `when` expressions
    policies: tuple[str, ...]  # policy bodies
    redacts: tuple[str, ...]  # redact bodies
    inner_tools: tuple[str, ...]
    max_iterations: int
    wrap_up: bool
    continuity: str
    tool_scope: str | None

    def text(self) -> str:
        ctx = ["creds"] + [f"i{k}" for k in range(len(self.instructions))]
        attrs_ = ['system = "S"', f"max_iterations = {self.max_iterations}",
                  f"wrap_up = {json.dumps(self.wrap_up)}", f'continuity = "{self.continuity}"',
                  f"context = [{', '.join(ctx)}]",
                  f"redact = [{', '.join(f'r{k}' for k in range(len(self.redacts)))}]"]
        if self.baseline:
            attrs_.append(f"tools = [{', '.join(self.baseline)}]")
        if self.graph is not None:
            attrs_.append("graph = m")
        if self.open_skills:
            attrs_.append(f"skills = [{', '.join(self.open_skills)}]")
        if self.policies:
            attrs_.append(f"policies = [{', '.join(f'p{k}' for k in range(len(self.policies)))}]")
        if self.tool_scope:
            attrs_.append(f'tool_scope = "{self.tool_scope}"')
        lines = ["agent g {\n  " + "\n  ".join(attrs_) + "\n}",
                 f'fact creds {{ data = {{ api_key: "{FACT_SECRET}", user: "maya" }} }}']
        if self.inner_tools:
            lines.append(f"agent inner {{ max_iterations = 2 tools = [{', '.join(self.inner_tools)}] }}")
        lines += [f'instruction i{k} {{ prompt = "I{k}" when = {w} }}' for k, w in enumerate(self.instructions)]
        lines += [t.text() for t in self.tools] + [s.text() for s in self.skills]
        if self.graph is not None:
            lines.append("graph m {\n  " + "\n  ".join(self.graph) + "\n}")
        lines += [f"policy p{k} {{\n  {body}\n}}" for k, body in enumerate(self.policies)]
        lines += [f"redact r{k} {{ {body} }}" for k, body in enumerate(self.redacts)]
        return "\n".join(lines) + "\n"

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def absolute(self) -> tuple[str, ...]:
        """The secrets the run knows from its start: the pattern's, the fact's, and a `returns`
        value's under a redacted key when one of the agent's tools holds it."""
        words = {w for line in self.graph or () for w in line.split()} | set(self.open_skills)
        mine = set(self.baseline) | {t for s in self.skills if s.name in words for t in s.tools}
        held = any(t.impl == "returns" and RETURNS_SECRET in t.returns and t.name in mine
                   for t in self.tools)
        return ABSOLUTE + ((RETURNS_SECRET,) if held else ())

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)


# ---------------------------------------------------------------- drawing a plan
@st.composite
def tools_st(draw) -> tuple[Tool, ...]:
    out = []
    for k in range(draw(st.integers(1, 4))):
        impl = draw(st.sampled_from(["host", "host", "returns", "agent"]))
        inp = "q" if impl == "agent" else draw(st.sampled_from(["none", "id", "pay"]))
        check = draw(st.sampled_from([None, None, "true"] + (["args.amount > 1000"] * 2 if inp == "pay" else [])))
        out.append(Tool(f"t{k}", inp, impl, draw(st.sampled_from(RETURNS)), check))
    return tuple(out)


@st.composite
def skills_st(draw, tools: tuple[Tool, ...]) -> tuple[Skill, ...]:
    names = [t.name for t in tools]
    out = []
    for k in range(draw(st.integers(1, 4))):
        own = tuple(draw(st.lists(st.sampled_from(names), unique=True, max_size=3)))
        steps = tuple(draw(st.lists(st.sampled_from(own), unique=True, max_size=3))) if own else ()
        on_skip = draw(st.sampled_from([None, "advance", "hold"])) if steps else None
        out.append(Skill(f"s{k}", own, draw(st.booleans()), steps, on_skip))
    return tuple(out)


def _route_guard(draw, src: Skill, plan_tools: tuple[Tool, ...]) -> str:
    forms = ["", 'when result.status == "found"', f"status {draw(st.sampled_from(STATUSES))}",
             'when status == "success" and iteration < 4', 'when message mentions "go"']
    if src.tools:
        t = draw(st.sampled_from(src.tools))
        forms += [f"on {t}", f"on {t} status {draw(st.sampled_from(['success', 'failure']))}",
                  f"on {t} status [success, absent]", f'on {t} when result.n > 2',
                  f'on {t} when result.status == "proc" or result.n == 3']
    return draw(st.sampled_from(forms))


@st.composite
def graph_st(draw, skills: tuple[Skill, ...], tools: tuple[Tool, ...]) -> tuple[str, ...]:
    names = [s.name for s in skills]
    entries = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(
        ["", "", ' when message mentions "go"', " when iteration == 1", " when message matches /pay/i"])),
        min_size=1, max_size=2, unique_by=lambda e: e[0]))
    out = [f"entry {s}{w}" for s, w in entries]
    for _ in range(draw(st.integers(0, 6)) if len(names) > 1 else 0):
        src, dst = draw(st.lists(st.sampled_from(skills), min_size=2, max_size=2, unique=True))
        out.append(f"route {src.name} -> {dst.name} {_route_guard(draw, src, tools)}".rstrip())
    return tuple(dict.fromkeys(out))  # (a statement twice is a duplicate route: drawn once)


def _rule(draw, moment: str, tool: Tool | None) -> str:
    conds = {"before": ["iteration > 3", 'tool == "t0"', 'skill == "s0"'],
             "after": ['result matches /forbidden/', 'status == "failure"', 'result.status == "hidden"'],
             "input": ["message matches /ignore previous/i"], "output": ["text matches /refuse-me/"]}[moment]
    if moment == "before" and tool is not None and tool.input == "pay":
        conds = conds + ["args.amount > 5000", "args.amount > 100"]
    verbs = ["deny", "allow"] + (["ask", "ask"] if moment == "before" else [])
    verb, cond = draw(st.sampled_from(verbs)), draw(st.sampled_from(conds))
    return f'{verb} when {cond} because "{verb} {moment}"'


@st.composite
def policy_st(draw, tools: tuple[Tool, ...]) -> str:
    blocks = []
    for moment in draw(st.lists(st.sampled_from(["before", "before", "after", "input", "output"]),
                                min_size=1, max_size=3, unique=True)):
        tool = draw(st.sampled_from(tools + (None,))) if moment in ("before", "after") else None
        head = moment + ("" if moment in ("input", "output") else f" {tool.name if tool else '*'}")
        rules = [_rule(draw, moment, tool) for _ in range(draw(st.integers(1, 2)))]
        blocks.append(f"{head} {{ " + " ".join(rules) + " }")
    return "\n  ".join(blocks)


@st.composite
def redacts_st(draw) -> tuple[str, ...]:
    keys = ["password", "token", "api_key", "session"]
    split = draw(st.integers(0, len(keys)))
    bodies = []
    for k, part in enumerate((keys[:split], keys[split:])):
        if not part and k == 1:
            continue
        pattern = ' patterns = [/SECRET-[0-9]{4}/]' if k == 0 else ""
        keys_ = f" keys = {json.dumps(part)}" if part else ""
        model = f" model = {json.dumps(draw(st.booleans()))}"
        placeholder = ' placeholder = "[R1]"' if k == 1 and draw(st.booleans()) else ""
        bodies.append(f"{keys_}{pattern}{model}{placeholder}".strip())
    return tuple(bodies)


INSTRUCTION_WHENS = ["returned({t})", "active({s})", 'last.status == "failure"', 'skill == "{s}"',
                     'message mentions "go"', "iteration > 1", 'last.result.status == "found"',
                     "not returned({t}) and iteration >= 2"]


@st.composite
def plans(draw) -> Plan:
    tools = draw(tools_st())
    skills = draw(skills_st(tools))
    names = [s.name for s in skills]
    graph = draw(st.one_of(st.none(), *[graph_st(skills, tools)] * 3))
    in_graph = {w for line in graph or () for w in line.split() if w in names}
    open_skills = tuple(draw(st.lists(st.sampled_from([n for n in names if n not in in_graph] or [None]),
                                      unique=True, max_size=2)))
    whens = draw(st.lists(st.sampled_from(INSTRUCTION_WHENS), max_size=2))
    instructions = tuple(w.format(t=draw(st.sampled_from(tools)).name, s=draw(st.sampled_from(names)))
                         for w in whens)
    host = [t.name for t in tools if t.impl != "agent"]
    inner = tuple(draw(st.lists(st.sampled_from(host), unique=True, min_size=1, max_size=2))) if host else ()
    tools = tuple(t if t.impl != "agent" or inner else attrs.evolve(t, impl="host") for t in tools)
    return Plan(tools=tools, skills=skills,
                baseline=tuple(draw(st.lists(st.sampled_from([t.name for t in tools]), unique=True, max_size=2))),
                graph=graph, open_skills=tuple(s for s in open_skills if s),
                instructions=instructions, policies=tuple(draw(st.lists(policy_st(tools), max_size=2))),
                redacts=draw(redacts_st()), inner_tools=inner if any(t.impl == "agent" for t in tools) else (),
                max_iterations=draw(st.sampled_from([1, 3, 4, 5, 6, 6])), wrap_up=draw(st.booleans()),
                continuity=draw(st.sampled_from(["run", "conversation"])),
                tool_scope=draw(st.sampled_from([None, "always", "active"])))


# ---------------------------------------------------------------- scripts
plain_texts = st.one_of(st.text(max_size=12).filter(lambda t: not any(
    s in t for s in REMEMBERED.values())), st.sampled_from(["done", "refuse-me", "forbidden", ""]))
answers = st.one_of(plain_texts, st.just(ECHO), st.builds(lambda t: f"{t} {ECHO}", plain_texts))
junk_args = st.one_of(st.dictionaries(st.sampled_from(["id", "amount", "q", "x", "reason"]),
                                      st.one_of(st.none(), st.integers(), plain_texts, st.just(TOKEN)),
                                      max_size=3), st.just([1, 2]))


def valid_args(tool: Tool):
    return {"none": st.just({}),
            "id": st.fixed_dictionaries({"id": st.sampled_from(["AB", "found", TOKEN, SESSION, "proc"])}),
            "pay": st.fixed_dictionaries({"amount": st.sampled_from([50, 200, 2000, 6000])},
                                         optional={"password": st.just(PASSWORD)}),
            "q": st.fixed_dictionaries({"q": answers})}[tool.input]


def calls_for(plan: Plan):
    known = [st.tuples(st.just(t.name), st.one_of(*[valid_args(t)] * 3, junk_args)) for t in plan.tools]
    builtins = [st.tuples(st.just("read_skill"), st.fixed_dictionaries(
                    {"id": st.sampled_from(plan.skill_names + ("zz",))})),
                st.tuples(st.just("skip_step"), st.fixed_dictionaries({"reason": st.sampled_from(["n/a", ""])})),
                st.tuples(st.just("nope"), junk_args)]
    return st.one_of(*known, *known, *builtins)


def scripts_for(plan: Plan):
    calls = st.lists(calls_for(plan), min_size=1, max_size=3)
    reply = st.one_of(calls, calls, calls, answers, st.fixed_dictionaries({"text": answers, "calls": calls}))
    return st.builds(lambda head, tail: head + tail, st.lists(reply, min_size=2, max_size=6),
                     st.lists(answers, min_size=2, max_size=3))


# ---------------------------------------------------------------- host tools
host_values = st.one_of(
    st.sampled_from(["ok", "forbidden", f"has {PATTERN_SECRET} inside", "", "x" * 300]),
    st.fixed_dictionaries({"status": st.sampled_from(["found", "proc", "hidden", ""]),
                           "n": st.one_of(st.integers(-2, 5), st.floats(allow_nan=True))}),
    st.builds(lambda n: {"token": TOKEN, "status": "found", "n": n}, st.integers(0, 5)),
    st.builds(lambda n: json.dumps({"session": SESSION, "status": "proc", "n": n}), st.integers(0, 5)),
    st.builds(lambda t: json.dumps([{"session": SESSION}]) + t, plain_texts),
    st.just(absent("nothing here", searched="db")),
    st.just(described({"token": TOKEN, "v": 1}, description="d")),
)
host_outcomes = st.lists(st.one_of(host_values.map(lambda v: ("ok", v)), st.sampled_from([
    ("raise", ValueError(f"db said {PATTERN_SECRET}")), ("raise", RuntimeError("down"))])), max_size=6)


class HostTools:
    """Host bodies for a plan's host-bound tools, answering from one queue of outcomes (then
    "no more"); a fresh instance replays the same answers."""

    def __init__(self, plan: Plan, outcomes: list):
        self.queue = list(outcomes)
        self.bound = {t.name: self._body for t in plan.tools if t.impl == "host"}

    def _body(self, **_args: Any) -> Any:
        kind, value = self.queue.pop(0) if self.queue else ("ok", "no more")
        if kind == "raise":
            raise type(value)(*value.args)
        return value
