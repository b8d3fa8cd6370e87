"""Hypothesis strategies for valid IR modules: every declaration kind, expression form, schema
block shape, policy block and test statement.

Role:       feeds the printer round-trip properties (tests/test_properties.py, bench/fuzz.py).
Invariants: generated IR is what the front end produces from some text without diagnostics:
            names avoid reserved words and stay within 64 characters, data is frozen
            (tuples, FrozenMap), schema blocks are built the way `lower_schema` builds them,
            regexes compile and hold no bare `/`. Spans are left unset (equality ignores them).
"""
from __future__ import annotations

import functools

import attrs
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl.frozen import FrozenMap, freeze
from afp_dsl.lower import RESERVED
from afp_dsl.lower_schema import CONSTRAINTS, json_type
from afp_dsl.schema_bounds import crossed
from afp_dsl.schema_enum import enum_left
from afp_dsl.lower_tests import OUTCOMES
from afp_dsl.resources import stdlib_names
from afp_dsl.trace import KINDS

KEYWORDS = sorted(RESERVED)
# Plain names that are also words of the grammar or of the schema language: soft keywords.
TRICKY = ["steps", "note", "file", "python", "returned", "active", "string", "integer", "number",
          "boolean", "any", "object", "message", "result", "args", "iteration", "text", "last",
          "pattern", "min", "max", "_", "A" * 64, "x_" + "9" * 62]

names = st.one_of(
    st.sampled_from(TRICKY),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True),
).filter(lambda n: n not in RESERVED)
segments = st.one_of(names, st.sampled_from(KEYWORDS))  # keys, fields, path segments
texts = st.one_of(st.text(max_size=30), st.sampled_from(["", " ", "a\nb", "\t", '"', "\\", "é€😀",
                                                         "\u2028", "\x7f", "\x00"]))
multiline_texts = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                                   max_size=12), min_size=2, max_size=4).map("\n".join)
prompt_texts = st.one_of(texts, multiline_texts)
finite = st.floats(allow_nan=False, allow_infinity=False)
numbers = st.one_of(st.integers(), finite)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)


def data(max_leaves: int = 8) -> st.SearchStrategy:
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3).map(tuple),
                                st.dictionaries(st.one_of(segments, texts), inner, max_size=3).map(FrozenMap)),
        max_leaves=max_leaves)


maps = st.dictionaries(st.one_of(segments, texts), data(4), max_size=3).map(FrozenMap)


# ---------------------------------------------------------------- refs, regexes
def refs(alias: bool = True) -> st.SearchStrategy:
    aliases = st.one_of(st.none(), names) if alias else st.none()
    return st.builds(ir.Ref, name=names, alias=aliases)


_PIECES = ["a", "b+", "[0-9]{2,}", "\\d", "\\$", "x|y", "(?:ab)", "\\/", ".", "\\b", "é", " ", "\\\\",
           "[^a]", "\\s*", "^", "$"]
patterns = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join)
flags = st.sets(st.sampled_from("imsx")).map(lambda s: "".join(sorted(s)))
regexes = st.builds(ir.Regex, pattern=patterns, flags=flags)


# ---------------------------------------------------------------- expressions
def _operand_leaf(calls: bool) -> st.SearchStrategy:
    paths = st.builds(ir.Path, root=st.one_of(names, st.sampled_from(["tool", "status", "skill"])),
                      segments=st.lists(st.one_of(segments, st.integers(0, 99)), max_size=3).map(tuple))
    lits = st.builds(ir.Lit, value=scalars)
    leaves = [paths, lits, st.builds(ir.ListExpr, items=st.lists(lits, max_size=3).map(tuple))]
    if calls:
        leaves.append(st.builds(ir.Call, func=st.sampled_from(["returned", "active"]), arg=refs()))
    return st.one_of(*leaves)


@functools.cache
def expressions(calls: bool = True, max_leaves: int = 6) -> st.SearchStrategy:
    leaf = _operand_leaf(calls)
    lists = st.builds(ir.ListExpr, items=st.lists(leaf, max_size=3).map(tuple))

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        two = st.lists(inner, min_size=2, max_size=3).map(tuple)
        ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
        return st.one_of(
            st.builds(ir.Compare, op=ops, left=inner, right=inner),
            st.builds(ir.Compare, op=st.sampled_from(["in", "not in"]), left=inner, right=lists),
            st.builds(ir.Compare, op=st.just("matches"), left=inner, right=regexes),
            st.builds(ir.Compare, op=st.just("mentions"), left=inner,
                      right=st.one_of(st.builds(ir.Lit, value=texts), lists)),
            st.builds(ir.Not, item=inner), st.builds(ir.And, items=two), st.builds(ir.Or, items=two))

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def opt(strategy: st.SearchStrategy, default=None) -> st.SearchStrategy:
    return st.one_of(st.just(default), strategy)


# ---------------------------------------------------------------- schema blocks
_NAMED = {"string": {"type": "string"}, "integer": {"type": "integer"}, "number": {"type": "number"},
          "boolean": {"type": "boolean"}, "object": {"type": "object"}, "null": {"type": "null"},
          "any": {}}
# No `object` defaults (nor list defaults): lower_schema validates the frozen default, so jsonschema
# rejects every map and list default (see test_properties.test_map_and_list_defaults_are_accepted).
_DEFAULTS = {"string": texts, "integer": st.integers(), "number": numbers, "boolean": st.booleans(),
             "object": None, "null": st.none(), "any": data(4).filter(lambda v: not isinstance(v, (tuple, FrozenMap)))}


def _union(values: list) -> dict:
    kinds = {json_type(v) for v in values}
    out = {"enum": tuple(values)}
    return {"type": kinds.pop(), **out} if len(kinds) == 1 else out


def stypes(depth: int) -> st.SearchStrategy:
    """(type schema, default strategy or None)."""
    named = st.sampled_from(sorted(_NAMED)).map(lambda n: (_NAMED[n], _DEFAULTS[n]))
    lits = st.one_of(texts, st.integers(), finite, st.booleans())
    unions = st.lists(lits, min_size=1, max_size=4).map(lambda vs: (_union(vs), st.sampled_from(vs)))
    options = [named, unions]
    if depth > 0:
        options.append(stypes(depth - 1).map(lambda t: ({"type": "array", "items": t[0]}, None)))
        options.append(_constrained(depth - 1).map(lambda t: ({"type": "array", "items": t}, None)))
        options.append(objects(depth - 1).map(lambda o: (o, None)))
    return st.one_of(*options)


def _applicable(schema: dict) -> list[str]:
    """The constraints that fit one of the types the field's values can have (`any`: none; a
    union of literals of several types: those fitting one of them), as the checker requires."""
    t = schema.get("type")
    types = {t} if t is not None else {json_type(v) for v in schema.get("enum", ())}
    return [k for k, (_, applies, _) in CONSTRAINTS.items()
            if any(x in applies or (x == "integer" and "number" in applies) for x in types)]


def _constraint_value(key: str) -> st.SearchStrategy:
    kind = CONSTRAINTS[key][2]
    if key == "pattern":
        return patterns
    if kind is str:
        return texts
    return st.integers(0, 10**6) if kind == "count" else numbers


@st.composite
def _constrained(draw, depth: int) -> dict:
    """An item type with constraints (`[string(min_length: 1)]`)."""
    schema = dict(draw(stypes(depth))[0])
    _constrain(draw, schema)
    return schema


def _constrain(draw, schema: dict) -> list[str]:
    """Add up to two constraints that fit `schema`'s type; the keys drawn."""
    keys = draw(st.lists(st.sampled_from(_applicable(schema)), unique=True, max_size=2)) \
        if _applicable(schema) else []
    for k in keys:
        value = draw(_constraint_value(k))
        if crossed(CONSTRAINTS[k][0], value, schema, schema.get("type") == "integer") is None and (
                "enum" not in schema or enum_left(schema, CONSTRAINTS[k][0], value)):
            schema[CONSTRAINTS[k][0]] = value  # (bounds or literals that leave no value are AFP301)
    return keys


@st.composite
def fields(draw, depth: int) -> tuple[dict, bool]:
    """(field schema, required)."""
    schema, defaults = draw(stypes(depth))
    schema = dict(schema)
    keys = _constrain(draw, schema)
    if draw(st.booleans()):
        schema["description"] = draw(texts)
    if defaults is not None and not keys and draw(st.booleans()):
        schema["default"] = draw(defaults)
        return schema, False
    return schema, draw(st.booleans())


# `steps` after a field default reads as the skill keyword (test_field_named_steps_after_a_default).
field_names = segments.filter(lambda n: n != "steps")


@st.composite
def objects(draw, depth: int = 2) -> dict:
    named = draw(st.lists(st.tuples(field_names, fields(depth)), unique_by=lambda f: f[0], max_size=4))
    out = {"type": "object", "properties": {n: s for n, (s, _) in named},
           "required": [n for n, (_, req) in named if req]}
    if not draw(st.booleans()):
        out["additionalProperties"] = False
    return out


schemas = st.one_of(
    objects().map(lambda o: ir.Schema(json=freeze(o), origin="block")),
    maps.map(lambda m: ir.Schema(json=m, origin="map")))


# ---------------------------------------------------------------- declarations
def _text() -> st.SearchStrategy:
    return st.builds(ir.Text, value=prompt_texts)


targets = st.from_regex(r"[a-z_][a-z0-9_]{0,6}(\.[a-z_][a-z0-9_]{0,6}){0,2}:[A-Za-z_][A-Za-z0-9_]{0,6}",
                        fullmatch=True)
pythons = st.builds(ir.PythonImpl, target=targets)
ref_tuples = st.lists(refs(), max_size=3).map(tuple)


def agents(name: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(
        ir.Agent, name=name, system=opt(_text(), ir.Text(value="")), model=opt(texts),
        max_iterations=st.integers(1, 10**9), wrap_up=st.booleans(), tools=ref_tuples, skills=ref_tuples,
        graph=opt(refs()), context=ref_tuples, policies=ref_tuples, redact=ref_tuples,
        continuity=st.sampled_from(["run", "conversation"]), tool_scope=st.sampled_from(["always", "active"]))


def tools(name: st.SearchStrategy, calls: bool) -> st.SearchStrategy:
    impls = st.one_of(pythons, st.builds(ir.ReturnsImpl, value=data(4)), st.builds(ir.AgentImpl, agent=refs()))
    return st.builds(
        ir.Tool, name=name, description=texts, input=opt(schemas), output=opt(schemas), impl=opt(impls),
        keep_runs=st.integers(0, 10**6), check_in=opt(expressions(calls)),
        max_result_chars=opt(st.integers(1, 10**9))).map(  # `keep_runs` only with `agent(...)` (else a warning)
            lambda t: t if isinstance(t.impl, ir.AgentImpl) else attrs.evolve(t, keep_runs=20))


def skills(name: st.SearchStrategy) -> st.SearchStrategy:
    steps = st.builds(ir.Step, tool=refs(), note=texts)
    return st.builds(
        ir.Skill, name=name, description=texts, body=opt(_text()), tools=ref_tuples,
        steps=st.lists(steps, max_size=3).map(tuple), on_skip=st.sampled_from(["advance", "hold"])).map(
            lambda s: s if s.steps else attrs.evolve(s, on_skip="advance"))  # `on_skip` only with steps


def graphs(name: st.SearchStrategy, calls: bool) -> st.SearchStrategy:
    local = refs()
    # A bare string condition reads back as the label (test_entry_when_a_bare_string).
    conditions = expressions(calls).filter(lambda e: not (isinstance(e, ir.Lit) and isinstance(e.value, str)))
    entries = st.builds(ir.Entry, skill=local, when=opt(conditions), label=opt(texts))
    statuses = st.lists(st.builds(ir.Status, name=names), max_size=3).map(tuple)
    routes = st.builds(ir.Route, src=local, dst=local, on=opt(local), status=statuses,
                       when=opt(expressions(calls)), label=opt(texts))
    return st.builds(ir.Graph, name=name, entries=st.lists(entries, max_size=3).map(tuple),
                     routes=st.lists(routes, max_size=3).map(tuple), scope_tools=st.booleans())


def contexts(name: st.SearchStrategy, calls: bool) -> st.SearchStrategy:
    facts_data = st.one_of(_text(), st.builds(ir.Data, value=data(6).filter(lambda v: isinstance(v, (tuple, FrozenMap)))))
    return st.one_of(
        st.builds(ir.Steering, name=name, prompt=_text()),
        st.builds(ir.Fact, name=name, data=facts_data, when=opt(expressions(calls))),
        st.builds(ir.Instruction, name=name, prompt=_text(), when=opt(expressions(calls))),
        st.builds(ir.Redact, name=name, keys=st.lists(texts, max_size=3).map(tuple),
                  patterns=st.lists(regexes, max_size=3).map(tuple), placeholder=texts, model=st.booleans()))


@st.composite
def policy_blocks(draw, calls: bool) -> ir.PolicyBlock:
    moment = draw(st.sampled_from(["input", "output", "before", "after"]))
    tool, any_tool = None, False
    if moment in ("before", "after"):
        tool = draw(opt(refs()))
        any_tool = tool is None
    rules = []
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["allow", "deny", "ask"]))
        because = draw(texts if action != "allow" else opt(texts))
        rules.append(ir.Rule(action=action, when=draw(expressions(calls)), because=because))
    return ir.PolicyBlock(moment=moment, tool=tool, any_tool=any_tool, rules=tuple(rules))


def policies(name: st.SearchStrategy, calls: bool) -> st.SearchStrategy:
    return st.one_of(
        st.builds(ir.Policy, name=name, impl=pythons),
        st.builds(ir.Policy, name=name, blocks=st.lists(policy_blocks(calls), max_size=3).map(tuple)))


def statements() -> st.SearchStrategy:
    local = refs()
    trace_kinds = st.sampled_from(KINDS)  # (a kind no run records is AFP106)
    return st.one_of(
        st.builds(ir.UserSays, text=texts),
        st.builds(ir.ModelCalls, calls=st.lists(st.builds(ir.ScriptedCall, tool=local, args=maps),
                                                min_size=1, max_size=3).map(tuple)),
        st.builds(ir.ModelSays, text=texts),
        st.builds(ir.ToolReturns, tool=local, value=data(6)),
        st.builds(ir.ToolFails, tool=local, message=texts),
        st.builds(ir.Decide, decision=st.sampled_from(["approve", "decline"]), by=opt(texts), note=opt(texts)),
        st.builds(ir.ExpectAnswer, matches=regexes),
        st.builds(ir.ExpectAnswer, equals=texts),
        st.builds(ir.ExpectCalled, tool=local, count=st.integers(0, 10**6)),
        st.builds(ir.ExpectRoute, src=local, dst=local),
        st.builds(ir.ExpectCursor, skill=local),
        st.builds(ir.ExpectOutcome, outcome=st.sampled_from(OUTCOMES)),
        st.builds(ir.ExpectTrace, kind=trace_kinds))


def tests_(name: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(ir.Test, name=name, agent=opt(refs()), statements=st.lists(statements(), max_size=5).map(tuple))


@functools.cache
def declarations(name: st.SearchStrategy = names, calls: bool = True) -> st.SearchStrategy:
    return st.one_of(agents(name), tools(name, calls), skills(name), graphs(name, calls),
                     contexts(name, calls), policies(name, calls), tests_(name))


@st.composite
def modules(draw, calls: bool = True, max_decls: int = 4) -> ir.Module:
    decls = draw(st.lists(declarations(names, calls), max_size=max_decls))
    unique = draw(st.lists(names, unique=True, min_size=len(decls), max_size=len(decls)))
    decls = tuple(attrs.evolve(d, name=n) for d, n in zip(decls, unique))
    aliases = draw(st.lists(names, unique=True, max_size=2))
    std = stdlib_names() or ["redact"]
    imports = tuple(ir.Import(path=f"std/{draw(st.sampled_from(std))}", alias=a) for a in aliases)
    return ir.Module(key="gen.afp", imports=imports, decls=decls)

