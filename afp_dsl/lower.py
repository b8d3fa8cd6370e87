"""Parse tree → IR module: declarations, attributes, graph, policy and test statements.

Role:       reads `file(...)` through an injected reader. Attribute values are converted by the
            per-kind tables in `attributes`. Trees come from lark or from `fastparse` (same shape:
            a leaf is a `str` subclass with `.type`, a node has `.data`, `.children`, `.meta`).
Emits:      AFP001 (`=>` for `->`), AFP003 reserved-word, AFP007 nesting-too-deep, AFP104–AFP106
            (AFP106 as a warning for an attribute that has no effect), AFP109 file-not-found,
            AFP110 name-too-long, plus what `lower_values`/`lower_schema` emit.
Invariants: never raises; every Token is turned into str/Span before it reaches the IR.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from . import ir
from .attributes import NOT_QUICK, SCHEMAS, Converter, KindSchema
from .codes import diag
from .diagnostics import Diagnostic, Severity
from .fastlex import Lowered
from .lower_schema import SchemaLowerer, refiled
from .literals import MAX_NAME
from .lower_values import BAD, ValueLowerer, to_data
from .source import Span
from .suggest import closest

if TYPE_CHECKING:  # parse trees come from lark or from `fastparse`, of the same shape
    import lark

    from .spec_files import Unreadable

RESERVED = frozenset(
    "import as agent tool skill graph fact steering instruction redact policy test entry route on "
    "status when and or not in matches mentions true false null before after input output deny ask "
    "allow because user model calls says returns approve decline by expect called cursor answer".split())
MAX_DEPTH = 200

FileReader = Callable[[str], "str | Unreadable | None"]  # (None: unreadable, no reason given)


def lower_module(tree: lark.Tree, key: str, source: str, read_file: FileReader,
                 comments: tuple[ir.Comment, ...] = ()) -> tuple[ir.Module | None, list[Diagnostic]]:
    """Lower a whole file. Returns None (with AFP007) when the tree is nested too deeply."""
    diags: list[Diagnostic] = []
    deep = None if getattr(tree, "nesting_checked", False) else _too_deep(tree)
    if deep is not None:
        start = deep.meta.start_pos if not getattr(deep.meta, "empty", True) else 0
        diags.append(diag("AFP007", f"nesting deeper than {MAX_DEPTH} levels", Span(key, start, start + 1),
                          "too deep from here", help="flatten the value or move it to `file(...)`"))
        return None, diags
    lowerer = Lowerer(key, diags, read_file)
    lowerer.source = source
    imports, decls = [], []
    for child in tree.children:
        if child.data == "import_decl":
            imports.append(lowerer.import_(child))
        else:
            decl = lowerer.decl(child)
            if decl is not None:
                decls.append(decl)
    module = ir.Module(key=key, imports=tuple(imports), decls=tuple(decls), comments=comments, source=source)
    return module, diags


# The nodes that are one level of nesting (language.md: "lists, maps or expressions nested deeper
# than 200 levels"); a map's `pair`, a field and the declaration around a value add none.
_LEVELS = frozenset(("list", "map", "call", "cmp", "in_", "not_in", "matches", "mentions", "not_",
                     "and_expr", "or_expr", "type_list", "type_object"))


def _too_deep(tree: lark.Tree) -> lark.Tree | None:
    """The first node more than `MAX_DEPTH` levels of nesting deep, or None."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in _LEVELS:
            depth += 1
            if depth > MAX_DEPTH:
                return node
        for c in node.children:
            if not isinstance(c, str):
                stack.append((c, depth))
    return None


_COMMENT = re.compile(r"#[^\r\n]*")
_BLANKS = " \t\f\r\n\ufeff"  # (the language's blanks: `str.strip()` would keep U+FEFF)


class Lowerer:
    source = ""  # the module's text (set by `lower_module`)
    key_toks: dict[str, Any] = {}  # the current declaration's attribute keys (set by `attributes`)

    def __init__(self, key: str, diags: list[Diagnostic], read_file: FileReader):
        self.key = key
        self.diags = diags
        self.v = ValueLowerer(key, diags)
        self.schemas = SchemaLowerer(self.v)
        self.convert = Converter(self.v, diags, read_file)

    span = property(lambda self: self.v.span)

    # -------------------------------------------------------------- names
    def name(self, tok: lark.Token, what: str = "declaration") -> str:
        name = str(tok)
        if name in RESERVED:
            self.diags.append(diag("AFP003", f"`{name}` is a reserved word and cannot name a {what}",
                                   self.v.span(tok), "reserved word",
                                   help=f"choose another name, such as `{name}_`"))
        elif len(name) > MAX_NAME:
            self.diags.append(diag("AFP110", f"the name is {len(name)} characters long; at most {MAX_NAME} "
                                   "are allowed", self.v.span(tok), "name too long",
                                   notes=("names are also what the model sees and must match "
                                          "`^[a-zA-Z0-9_-]{1,64}$`",)))
        return name

    def import_(self, node: lark.Tree) -> ir.Import:
        path_tok, alias_tok = node.children
        return ir.Import(path=self.v.string(path_tok), alias=self.name(alias_tok, "module alias"),
                         span=self.v.span(path_tok), alias_span=self.v.span(alias_tok))

    # -------------------------------------------------------------- declarations
    def decl(self, node: lark.Tree) -> ir.Decl | None:
        if type(node) is Lowered:  # (already lowered by the fast parser)
            return refiled(node.value, self.key)
        kind = node.data[: -len("_decl")]
        children = node.children
        name_tok = children[0]
        name = self.name(name_tok)
        span = self.v.span(name_tok)
        fields, bad = self.attributes(kind, children, span, name)
        extra = _BODIES.get(kind)
        if extra is not None:
            fields.update(extra(self, children[1:], fields, span))
        if bad:
            fields = {k: v for k, v in fields.items() if v is not BAD}
        fields["name"] = name
        fields["span"] = span
        fields["full_span"] = self.v.span(node)
        if kind == "agent" and "max_iterations" in fields:
            fields["budget_span"] = self.attribute_span(children, "max_iterations")
        return _CLASSES[kind](**fields)

    def attribute_span(self, children: list, key: str) -> Span | None:
        """The span of the attribute `key = value` among a declaration's children."""
        for node in children:
            if not isinstance(node, str) and node.data in _ATTR_NODES:
                key_node = node.children[0]
                key_tok = key_node.children[0] if not isinstance(key_node, str) else key_node
                if str(key_tok) == key:  # (from the key to the value's end: no comma after it)
                    start, end = self.v.span(key_tok), self.v.span(node.children[-1])
                    return Span(start.file, start.start, end.end)
        return None

    def attributes(self, kind: str, children: list, decl_span: Span, decl_name: str) -> tuple[dict[str, Any], bool]:
        """(IR fields of the declaration's attributes, whether any holds `BAD`); `children` are the
        declaration's (its name first, then its body: only attribute nodes are read here)."""
        table = SCHEMAS[kind]
        out: dict[str, Any] = {}
        seen: dict[str, Any] = {}  # key -> its token (Speed: a span is made only for a diagnostic)
        bad = False
        for node in children:
            if isinstance(node, str) or node.data not in _ATTR_NODES:
                continue
            key_node, value_node = node.children[0], node.children[-1]
            key_tok = key_node.children[0] if not isinstance(key_node, str) else key_node
            key = str(key_tok)
            if key in seen:
                self.diags.append(diag("AFP106", f"attribute `{key}` is given twice", self.v.span(key_tok),
                                       "given again here"))
                continue
            seen[key] = key_tok
            spec = table.attrs.get(key)
            if spec is None:
                self.diags.append(self.convert.unknown(kind, key, self.v.span(key_tok), table))
            elif node.data == "schema_attr":  # a tool's `input { ... }`: one attribute with `input = ...`
                out[spec.field] = self.schemas.block(value_node)
            else:
                value = self.convert.quick(spec, value_node)
                if value is NOT_QUICK:
                    value = self.convert.run(spec, self.v.value(value_node), self.v.span(key_tok))
                    bad = bad or value is BAD
                out[spec.field] = value
        if table.required:
            self.missing(kind, table, seen, decl_span, decl_name)
        self.key_toks = seen
        return out, bad

    def missing(self, kind: str, table: KindSchema, seen: dict, decl_span: Span, decl_name: str) -> None:
        """AFP105 for each required attribute not given (unless a misspelt key is the cause)."""
        missing = [req for req in table.required if req not in seen]
        typos = {closest(k, table.attrs) for k in seen if k not in table.attrs} if missing else ()
        for req in missing:
            if req not in typos:  # a misspelt key is the root cause
                self.diags.append(diag("AFP105", f"{kind} `{decl_name}` is missing the required attribute `{req}`",
                                       decl_span, f"`{req}` missing",
                                       help=f"add `{req} = ...` to the {kind}"))

    def no_effect(self, key: str, fields: dict, why: str, help: str) -> None:
        """A warning at `key` (given with a good value) for an attribute that cannot take effect."""
        if key in self.key_toks and fields.get(key, BAD) is not BAD:
            self.diags.append(diag("AFP106", f"`{key}` has no effect {why}", self.v.span(self.key_toks[key]),
                                   "has no effect", help=help, severity=Severity.WARNING))

    # -------------------------------------------------------------- kind-specific bodies
    def body_tool(self, body: list, fields: dict, span: Span) -> dict:
        impl = fields.get("impl")
        if impl is not BAD and not isinstance(impl, ir.AgentImpl):
            self.no_effect("keep_runs", fields, "unless `impl = agent(...)`",
                           "only a tool that runs another agent keeps inner runs; remove `keep_runs`")
        return {}


    def body_skill(self, body: list, fields: dict, span: Span) -> dict:
        blocks = [n for n in body if not isinstance(n, str) and n.data == "steps_block"]
        if not blocks:
            self.no_effect("on_skip", fields, "without a `steps` block",
                           "`on_skip` says what `skip_step` does to the steps; remove it or add `steps { ... }`")
            return {}
        for extra in blocks[1:]:
            self.diags.append(diag("AFP106", "a skill has at most one `steps` block", self.v.span(extra),
                                   "second `steps` block"))
        if not blocks[0].children:  # (the original refuses `steps: []`; here it does nothing)
            self.diags.append(diag("AFP106", "an empty `steps` block has no effect: the skill runs no procedure",
                                   self.v.span(blocks[0]), "no steps", severity=Severity.WARNING,
                                   help="add the procedure's steps (`steps { TOOL \"note\" ... }`), or remove the block"))
        steps = []
        for s in blocks[0].children:
            tool_tok = s.children[0]
            note = self.v.string(s.children[1]) if len(s.children) > 1 else ""
            steps.append(ir.Step(tool=self.ref(tool_tok), note=note,
                                 span=self.v.span(s)))
        return {"steps": tuple(steps)}

    def body_graph(self, body: list, fields: dict, span: Span) -> dict:
        entries, routes = [], []
        for node in body:
            if isinstance(node, str):
                continue
            if node.data == "entry_stmt":
                entries.append(self.entry(node))
            elif node.data == "route_stmt":  # (already lowered by the fast parser: `Lowered`)
                routes.append(refiled(node.value, self.key) if type(node) is Lowered
                              else self.route(node))
        return {"entries": tuple(entries), "routes": tuple(routes)}

    def entry(self, node: lark.Tree) -> ir.Entry:
        skill_tok, *rest = node.children
        when, label = None, None
        if len(rest) == 2 or (rest and self._after_when(skill_tok, rest[0])):
            when, rest = self.v.expr(rest[0]), rest[1:]
        for part in rest:
            if isinstance(part, str) and part.type in ("STRING", "MLSTRING"):
                label = self.v.string(part)
            elif part is not None:
                when = self.v.expr(part)
        return ir.Entry(skill=self.ref(skill_tok), when=when, label=label, span=self.v.span(node))

    def _after_when(self, name: Any, part: Any) -> bool:
        """Is `part` written after `when`? (`entry a when "x"` and `entry a "x"` give the same
        children: a condition that is one string literal is told from a label by the source.)"""
        start, end = self.v.span(name).end, self.v.span(part).start
        between = _COMMENT.sub("", self.source[start:end])  # (blanks, comments, maybe `when`)
        return between.strip(_BLANKS) == "when"

    def route(self, node: lark.Tree) -> ir.Route:
        src, arrow, dst, *rest = node.children
        self.arrow(arrow)
        fields: dict[str, Any] = {}
        for part in rest:
            if isinstance(part, str):
                fields["label"] = self.v.string(part)
            elif part.data == "route_on":
                fields["on"] = self.ref(part.children[0])
            elif part.data == "route_status":
                fields["status"] = self.statuses(part.children[0])
            elif part.data == "route_when":
                fields["when"] = self.v.expr(part.children[0])
        return ir.Route(src=self.ref(src), dst=self.ref(dst), span=self.v.span(node), **fields)

    def arrow(self, tok: lark.Token) -> None:
        if str(tok) == "=>":
            self.diags.append(diag("AFP001", "routes use `->`, not `=>`", self.v.span(tok), "write `->` here"))

    def statuses(self, node: lark.Tree | lark.Token) -> tuple[ir.Status, ...]:
        toks = [node] if isinstance(node, str) else list(node.children)
        return tuple(ir.Status(name=str(t), span=self.v.span(t)) for t in toks)

    def body_policy(self, body: list, fields: dict, span: Span) -> dict:
        blocks = []
        for node in body:
            if not isinstance(node, str) and node.data == "policy_block":
                blocks.append(self.policy_block(node))
        if blocks and fields.get("impl") is not None:
            self.diags.append(diag("AFP106", "a policy has either rule blocks or `impl`, not both",
                                   blocks[0].span, "rules here", help="split it into two policies"))
        return {"blocks": tuple(blocks)}

    def policy_block(self, node: lark.Tree) -> ir.PolicyBlock:
        moment_tok = node.children[0].children[0]
        moment = str(moment_tok)
        tool, any_tool, rules = None, False, []
        for part in node.children[1:]:
            if isinstance(part, str) and part.type == "STAR":
                any_tool = True
            elif part.data == "qname":
                tool = self.ref(part)
            else:
                rules.append(self.rule(part))
        span = self.v.span(moment_tok)
        if moment in ("before", "after") and tool is None and not any_tool:
            self.diags.append(diag("AFP105", f"`{moment}` needs a tool name or `*`", span, "no tool named",
                                   help=f"write `{moment} TOOL {{ ... }}` or `{moment} * {{ ... }}`"))
            any_tool = True
        if moment in ("input", "output") and (tool is not None or any_tool):
            self.diags.append(diag("AFP106", f"`{moment}` rules apply to the whole run and take no tool",
                                   span, "remove the tool name"))
            tool, any_tool = None, False
        return ir.PolicyBlock(moment=moment, tool=tool, any_tool=any_tool, rules=tuple(rules),
                              span=self.v.span(node))

    def rule(self, node: lark.Tree) -> ir.Rule:
        action_tok = node.children[0].children[0]
        action = str(action_tok)
        when = self.v.expr(node.children[1])
        because = self.v.string(node.children[2]) if len(node.children) > 2 else None
        span = self.v.span(action_tok)
        if because is None and action in ("deny", "ask"):
            self.diags.append(diag("AFP105", f"`{action}` needs a reason", span, "no `because`",
                                   help=f'add `because "..."`: the reason is what the {"model" if action == "deny" else "person"} reads'))
        return ir.Rule(action=action, when=when, because=because, span=span)

    def body_test(self, body: list, fields: dict, span: Span) -> dict:
        from .lower_tests import lower_statement
        stmts = []
        for node in body:
            if not isinstance(node, str) and node.data not in ("attr",):
                stmt = lower_statement(self, node)
                if stmt is not None:
                    stmts.append(stmt)
        return {"statements": tuple(stmts)}

    # -------------------------------------------------------------- references
    def ref(self, node: lark.Token | lark.Tree) -> ir.Ref:
        """A `qname` (or a bare NAME token) as a reference."""
        if isinstance(node, str):
            return ir.Ref(name=str(node), span=self.v.span(node))
        parts = node.children
        if len(parts) == 2:
            return ir.Ref(name=str(parts[1]), alias=str(parts[0]), span=self.v.span(node))
        return ir.Ref(name=str(parts[0]), span=self.v.span(parts[0]))

    def data(self, node: Any) -> Any:
        return to_data(self.v.value(node), self.diags)


_ATTR_NODES = frozenset(("attr", "attr_graph", "schema_attr"))
_BODIES: dict[str, Callable] = {kind: getattr(Lowerer, f"body_{kind}") for kind in (
    "tool", "skill", "graph", "policy", "test")}
_CLASSES: dict[str, type] = {
    "agent": ir.Agent, "tool": ir.Tool, "skill": ir.Skill, "graph": ir.Graph, "steering": ir.Steering,
    "fact": ir.Fact, "instruction": ir.Instruction, "redact": ir.Redact, "policy": ir.Policy,
    "test": ir.Test,
}
