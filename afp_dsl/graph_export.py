"""Skill graphs as Mermaid, Graphviz DOT and JSON (tooling.md §4).

Role:       pure side branch of the pipeline: a checked program → diagram text.
Invariants: deterministic; nodes in skill declaration order (tooling.md §4); entry edges first, then routes in declaration order; every
            Mermaid caption is entity-escaped (`#`, `|`, `"`, `<`, `>`) and written between
            quotes when it holds a bracket, `@` or `~` (`in [a, b]` stays readable), so any
            label parses.
            Statements whose skills do not resolve are left out (the checker reports them).
            A run overlay (`run_overlay`) is drawn in every format: Mermaid classes and link
            styles, DOT colours and pen widths, JSON `visited`/`taken`/`refused` fields.
            `scrub` (a run's `known_secrets.run_scrubber`) rewrites every caption, label and
            guard text before it is drawn; without it the spec's text is drawn as written.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Union

import attrs

from . import ir
from .analysis import Analysis
from .api import Program, gc_paused
from .checks import graphview as G
from .graph_captions import (  # noqa: F401 - re-exported: the captions are part of the API
    entry_caption, guard_caption, guarded_caption, mermaid_caption, mermaid_escape,
    readable_condition, route_caption,
)
from .source import SourceFile, Span

# what the graph functions draw: what `afp.load` returns, or its IR or analysis
Drawable = Union[Program, ir.Program, Analysis]

_NOT_ID = re.compile(r"[^A-Za-z0-9_]")  # what a node id cannot hold
Scrub = Callable[[str], str]


class Edge(NamedTuple):
    """One arrow. Speed: a named tuple (one C call to build; a diagram has one per route)."""

    kind: str  # "entry" | "route"
    src: str | None  # node id (None for entries: the start node)
    dst: str
    deterministic: bool
    caption: str | None
    stmt: ir.Entry | ir.Route


@attrs.frozen
class Diagram:
    module: str
    graph: ir.Graph
    nodes: tuple[tuple[str, str, G.Node], ...]  # (id, label, node)
    edges: tuple[Edge, ...]


# ---------------------------------------------------------------- choosing the graph
def _analysis(program: Any) -> Analysis:
    if isinstance(program, Analysis):
        return program
    if isinstance(program, ir.Program):
        return Analysis(program)
    inner = getattr(program, "analysis", None)
    if isinstance(inner, Analysis):
        return inner
    hint = (": load the spec first, `afp.to_mermaid(afp.load(path))`"
            if isinstance(program, (str, bytes)) or hasattr(program, "__fspath__") else "")
    raise TypeError(f"expected an afp Program (what `afp.load` returns), an ir.Program or an "
                    f"Analysis, not a value of type `{type(program).__name__}`{hint}")


def graph_names(program: Any) -> list[str]:
    a = _analysis(program)
    return [_display(a, m, g) for m, g in a.decls(ir.Graph)]


def _display(a: Analysis, module: str, g: ir.Graph) -> str:
    if module == a.program.root:
        return g.name
    alias = next((i.alias for i in a.program.root_module.imports if i.module == module), None)
    return f"{alias}.{g.name}" if alias else g.name


def no_graph_named(name: str, names: list[str]) -> str:
    """Why `name` picks no graph, with the closest name and the graphs there are."""
    from .suggest import closest
    close = closest(name, names)
    hint = f"did you mean `{close}`? " if close else ""
    return f"no graph named `{name}`; {hint}graphs: {', '.join(f'`{n}`' for n in names) or 'none'}"


class GraphChoiceError(ValueError):
    """No graph of that name, no graph at all, or several and none named: the caller's choice,
    not a fault of the drawing (a `ValueError`, as documented for `to_mermaid`)."""


def find_graph(program: Any, name: str | None = None) -> tuple[Analysis, str, ir.Graph]:
    """The named graph (`name` or `alias.name`), or the only graph; GraphChoiceError otherwise."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"graph= is a graph's name (a `str`), or None for the only graph, "
                        f"not a `{type(name).__name__}`")
    a = _analysis(program)
    found = [(m, g) for m, g in a.decls(ir.Graph)]
    if name is not None:
        hits = [(m, g) for m, g in found if _display(a, m, g) == name]
        hits = hits or [(m, g) for m, g in found if g.name == name]
    else:
        hits = _default_graphs(a, found)
    if len(hits) == 1:
        return a, hits[0][0], hits[0][1]
    if name is not None and not hits:
        raise GraphChoiceError(no_graph_named(name, [_display(a, m, g) for m, g in found]))
    if not hits:
        raise GraphChoiceError("the program declares no graph")
    names = ", ".join(f"`{_display(a, m, g)}`" for m, g in hits)
    raise GraphChoiceError(f"the program declares several graphs ({names}); choose one")


def _default_graphs(a: Analysis, found: list[tuple[str, ir.Graph]]) -> list[tuple[str, ir.Graph]]:
    """The graphs drawn when none is named: the root module's; else those its agents use (a
    graph imported from another module); else those of the modules it imports, the standard
    library's aside (its graphs are self-test scaffolding: `import "std/tools"` in a spec without
    a graph must not draw `tools_desk`)."""
    root = [(m, g) for m, g in found if m == a.program.root]
    if root:
        return root
    used: list[tuple[str, ir.Graph]] = []
    for agent in a.root_decls(ir.Agent):
        hit = a.resolve(a.program.root, agent.graph) if agent.graph is not None else None
        if hit is not None and isinstance(hit.decl, ir.Graph) and (hit.module, hit.decl) not in used:
            used.append((hit.module, hit.decl))
    return used or [(m, g) for m, g in found if not m.startswith("std/")]


def diagram(program: Any, graph: str | None = None, scrub: Scrub | None = None) -> Diagram:
    """The graph's nodes and edges; `scrub` rewrites every caption."""
    with gc_paused():
        d = _diagram(program, graph)
    if scrub is None:
        return d
    guard = getattr(scrub, "guard", None)  # (a run's: hides what a guard compares a secret with)
    edges = [e._replace(caption=guarded_caption(e.stmt, guard)) if guard else e for e in d.edges]
    return attrs.evolve(d, edges=tuple(e._replace(caption=scrub(e.caption)) if e.caption else e
                                       for e in edges))


def _diagram(program: Any, graph: str | None = None) -> Diagram:
    a, module, g = find_graph(program, graph)
    v = G.view(a, module, g)
    ids: dict[G.NodeKey, str] = {}
    used: set[str] = set()
    nodes = []
    order = _declaration_order(a)
    for key, node in sorted(v.nodes.items(), key=lambda kv: order.get(kv[0], (len(order), 0))):
        base = "n_" + _NOT_ID.sub("_", node.name)
        nid, n = base, 2
        while nid in used:
            nid, n = f"{base}_{n}", n + 1
        used.add(nid)
        ids[key] = nid
        nodes.append((nid, node.name, node))
    edges = [Edge("entry", None, ids[e.dst], True, entry_caption(e.entry), e.entry) for e in v.entries]
    edges += [Edge("route", ids[e.src], ids[e.dst], e.deterministic, route_caption(e.route), e.route)
              for e in v.routes]
    return Diagram(module, g, tuple(nodes), tuple(edges))


def _declaration_order(a: Analysis) -> dict[tuple[str, str], tuple[int, int]]:
    """Skills are drawn in declaration order: module load order, then place in the module."""
    return {(m.key, d.name): (i, j) for i, m in enumerate(a.program.modules)
            for j, d in enumerate(m.decls) if isinstance(d, ir.Skill)}


def to_mermaid(program: Drawable, graph: str | None = None, *, visited: Iterable[str] = (),
               taken: Iterable[tuple[str | None, str]] = (),
               refused: Mapping[tuple[str | None, str], str] | None = None,
               scrub: Scrub | None = None) -> str:
    """Mermaid `flowchart TD` text of a graph; `visited` skills and `taken` (src, dst) edges
    (src None for an entry) are styled when given (the `--run` overlay); `refused` maps an
    edge whose guard refused (and that was never taken) to a note added to its caption. A skill
    is named as the graph writes it (`lib.helper`) or by its declaration name (`helper`, as a
    run records it). `scrub` rewrites every caption (a run's redaction)."""
    d = diagram(program, graph, scrub)
    taken = set(taken)
    refused = {k: v for k, v in (refused or {}).items() if k not in taken}
    took = _run_keys(d, taken) if taken else set()  # (no overlay: no name table to build)
    notes = _run_notes(d, refused, took)
    lines = ["flowchart TD", "  __start__([▶ start])"]
    lines += [f'  {nid}["{mermaid_escape(label)}"]' for nid, label, _ in d.nodes]
    for e in d.edges:
        arrow = "-->" if e.deterministic else "-.->"
        text = e.caption
        note = notes.get((e.src, e.dst))
        if note is not None:
            text = f"{text} ✗ refused: {note}" if text else f"✗ refused: {note}"
        caption = f"|{mermaid_caption(text)}|" if text else ""
        lines.append(f"  {e.src or '__start__'} {arrow}{caption} {e.dst}")
    if visited or taken or refused:
        lines += _overlay(d, set(visited), took, set(notes))
    return "\n".join(lines) + "\n"


def _by_name(d: Diagram) -> dict[str, str]:
    """Skill name → node id. A run names a skill by its declaration name (`helper`), the diagram
    as the graph writes it (`lib.helper` for an imported one): both are accepted."""
    by_name = {label: nid for nid, label, _ in d.nodes}
    by_name.update({n.skill.name: nid for nid, _, n in d.nodes})
    return by_name


def _run_keys(d: Diagram, pairs: Iterable[tuple]) -> set[tuple[str | None, str]]:
    """A run's (src or None, dst) skill-name pairs as (src id or None, dst id) edge keys; a name
    no node has becomes a key no edge has."""
    by_name = _by_name(d)

    def nid(name: Any) -> Any:
        return by_name.get(name, ("?", name)) if name is not None else None
    return {(nid(s), nid(t)) for s, t in pairs}


def _run_notes(d: Diagram, refused: Mapping[tuple, str], took: set) -> dict[tuple, str]:
    """The refused edges' notes by edge key, leaving out the edges the run took."""
    out: dict[tuple, str] = {}
    for pair, note in refused.items():
        (key,) = _run_keys(d, [pair])
        if key not in took:
            out.setdefault(key, note)
    return out


def _overlay(d: Diagram, visited: set[str], taken: set, refused: set) -> list[str]:
    """`classDef`/`class` for visited skills, `linkStyle` for taken and refused edges; `taken`
    and `refused` hold edge keys (`_run_keys`)."""
    by_name = _by_name(d)
    out = ["  classDef visited fill:#e6f4ea,stroke:#1e8e3e,stroke-width:2px"]
    hit = list(dict.fromkeys(by_name[s] for s in sorted(visited) if s in by_name))
    if hit:
        out.append(f"  class {','.join(hit)} visited")

    def links(keys) -> list[str]:
        return [str(i) for i, e in enumerate(d.edges) if (e.src, e.dst) in keys]
    if links(taken):
        out.append(f"  linkStyle {','.join(links(taken))} stroke:#1e8e3e,stroke-width:3px")
    if refused and links(refused):
        out.append(f"  linkStyle {','.join(links(refused))} stroke:#d93025,stroke-width:2px,"
                   "stroke-dasharray:4 3")
    return out


def run_overlay(events: Iterable[Any]) -> tuple[set[str], set, dict]:
    """(visited skills, taken (src, dst) edges, refused edges → note) from a run's events; an
    entry is keyed (None, skill), and one refused at a cold start (`cursor.moved`'s
    `refused_entries`, also when no entry fired) is noted as a refused route is."""
    visited: set[str] = set()
    taken: set = set()
    refused: dict = {}
    for e in events:
        p = e.payload if isinstance(e.payload, dict) else {}
        src, dst = (_skill_name(p.get(k)) for k in ("from", "to"))
        if e.kind == "cursor.moved":
            visited.update(x for x in (src, dst) if x)
            if p.get("cause") in ("route", "model-pick") and src != dst and dst:
                taken.add((src, dst))
            elif p.get("cause") == "entry" and dst:
                taken.add((None, dst))
            entries = p.get("refused_entries") if isinstance(p.get("refused_entries"), list) else []
            for x in (x for x in entries if isinstance(x, dict) and _skill_name(x.get("skill"))):
                refused.setdefault((None, x["skill"]), _refusal_note(x))
        elif e.kind == "route.evaluated" and not p.get("fired") and dst:
            refused.setdefault((src, dst), _refusal_note(p))
    return visited, taken, refused


def _skill_name(x: Any) -> str | None:
    """Skill names are text; anything else (a hand-edited or damaged event) names no skill."""
    return x if isinstance(x, str) and x else None


def _refusal_note(evidence: Mapping) -> str:
    """The first failing condition of a refused route or entry, with its actual value (or the
    reason it could not be evaluated), written as captions write guards."""
    conditions = evidence.get("conditions") if isinstance(evidence.get("conditions"), list) else []
    failed = [c for c in conditions if isinstance(c, dict) and not c.get("passed")]
    note = (f"{readable_condition(str(failed[0].get('text')))} "
            f"(actual {str(failed[0].get('actual'))[:40]})"
            if failed else (evidence.get("reason") or "did not hold"))
    return str(note).replace("`", "")


# ---------------------------------------------------------------- DOT and JSON
def _dot_str(text: str) -> str:
    """A DOT quoted string: `\\` and `"` escaped, a newline as `\\n`; a NUL, which Graphviz
    cannot read inside a string (it rejects the whole file), as `␀` (U+2400)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\x00", "\u2400") + '"'


@attrs.frozen
class Marks:
    """A run overlaid on a diagram: visited node ids; per edge (in order) taken, refused note."""

    visited: frozenset[str]
    taken: tuple[bool, ...]
    refused: tuple[str | None, ...]


def marks(d: Diagram, visited: Iterable[str] | None, taken: Iterable[tuple] | None,
          refused: Mapping[tuple, str] | None) -> Marks | None:
    """The overlay of `run_overlay`'s sets on `d` (keyed like `to_mermaid`), or None without
    a run."""
    if visited is None and taken is None and refused is None:
        return None
    by_name = _by_name(d)
    keys = [(e.src, e.dst) for e in d.edges]
    took = _run_keys(d, taken or ())
    notes = _run_notes(d, refused or {}, took)
    return Marks(frozenset(by_name[s] for s in visited or () if s in by_name),
                 tuple(k in took for k in keys), tuple(notes.get(k) for k in keys))


def to_dot(program: Drawable, graph: str | None = None, *, visited: Iterable[str] | None = None,
           taken: Iterable[tuple] | None = None, refused: Mapping[tuple, str] | None = None,
           scrub: Scrub | None = None) -> str:
    """Graphviz DOT text of a graph (bare routes dashed); with a run (`run_overlay`'s sets),
    visited skills filled green, taken edges thick green, refused edges red with the note."""
    d = diagram(program, graph, scrub)
    m = marks(d, visited, taken, refused)
    lines = [f"digraph {_dot_str(d.graph.name)} {{", "  rankdir=TB;",
             "  node [shape=box, style=rounded];",
             '  "__start__" [label="▶ start", shape=oval];']
    for nid, label, _ in d.nodes:
        on = m is not None and nid in m.visited
        lines.append(f"  {_dot_str(nid)} [label={_dot_str(label)}{_DOT_VISITED if on else ''}];")
    for i, e in enumerate(d.edges):
        lines.append(f"  {_dot_str(e.src or '__start__')} -> {_dot_str(e.dst)}"
                     f"{_dot_edge_attrs(e, m, i)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


_DOT_VISITED = ', style="rounded,filled", fillcolor="#e6f4ea", color="#1e8e3e", penwidth=2'


def _dot_edge_attrs(e: Edge, m: Marks | None, i: int) -> str:
    note = m.refused[i] if m is not None else None
    caption = f"{e.caption} ✗ refused: {note}" if note and e.caption else \
        (f"✗ refused: {note}" if note else e.caption)
    out = [f"label={_dot_str(caption)}"] if caption else []
    if not e.deterministic or note:
        out.append("style=dashed")
    if m is not None and m.taken[i]:
        out += ['color="#1e8e3e"', "penwidth=3"]
    elif note:
        out += ['color="#d93025"', 'fontcolor="#d93025"']
    return f" [{', '.join(out)}]" if out else ""


def to_json(program: Drawable, graph: str | None = None, *, visited: Iterable[str] | None = None,
            taken: Iterable[tuple] | None = None, refused: Mapping[tuple, str] | None = None,
            scrub: Scrub | None = None) -> str:
    """Nodes and edges with captions and source spans, as indented JSON; with a run, every
    node also has `visited` and every edge `taken` and `refused` (the note, or null)."""
    d = diagram(program, graph, scrub)
    m = marks(d, visited, taken, refused)
    a = _analysis(program)
    files = {m_.key: SourceFile.of(m_.key, m_.source) for m_ in a.program.modules}
    nodes = [{"id": nid, "skill": label, "module": n.key[0], "span": _span(files, n.ref.span)}
             for nid, label, n in d.nodes]
    edges = [_edge_json(files, e, scrub) for e in d.edges]
    if m is not None:
        for node in nodes:
            node["visited"] = node["id"] in m.visited
        for i, edge in enumerate(edges):
            edge["taken"], edge["refused"] = m.taken[i], m.refused[i]
    doc = {"graph": d.graph.name, "module": d.module, "nodes": nodes, "edges": edges}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _edge_json(files, e: Edge, scrub: Scrub | None = None) -> dict:
    s = e.stmt
    scrub = scrub or str
    out = {"kind": e.kind, "from": e.src, "to": e.dst, "deterministic": e.deterministic,
           "caption": e.caption, "label": scrub(s.label) if s.label is not None else None}
    if isinstance(s, ir.Route):
        out["on"] = str(s.on) if s.on is not None else None
        out["status"] = [x.name for x in s.status]
    from .evaluate import render_expr
    guard = getattr(scrub, "guard", None) or (lambda when: when)
    out["when"] = scrub(render_expr(guard(s.when))) if s.when is not None else None
    out["span"] = _span(files, s.span)
    return out


def _span(files: dict[str, SourceFile], span: Span) -> dict | None:
    sf = files.get(span.file)
    if sf is None:
        return None
    (line, col), (end_line, end_col) = sf.line_col(span.start), sf.line_col(span.end)
    return {"file": span.file, "line": line, "column": col, "end_line": end_line,
            "end_column": end_col}
