"""A skill graph drawn as inline SVG, with a run's overlay: the HTML report's picture (tooling §5).

Role:       pure side branch beside `graph_export`: the same `Diagram` (nodes in declaration
            order, entry edges then routes) laid out in layers and written as one `<svg>`
            element that needs no script, stylesheet or network (presentation attributes only,
            so the report's Content-Security-Policy has nothing to allow).
Invariants: deterministic (the same program and overlay, the same bytes); every text is
            escaped; visited skills are filled, taken edges drawn thick, refused edges dashed
            with their note in the edge's `<title>`, bare (model-pick) edges dotted.
Why not Mermaid's renderer: it is a browser script of several megabytes that would have to
be inlined into every report; this layout is a few dozen lines and enough for skill graphs.
"""
from __future__ import annotations

from html import escape
from typing import Any, Iterable, Mapping

from .graph_export import Diagram, Edge, Scrub, _run_keys, _run_notes, diagram

_H, _GAP_X, _GAP_Y, _PAD = 40, 36, 64, 24  # node height, gaps between nodes and layers, margin
_CHAR = 7.2  # width of a character of the label font (13px sans-serif), for node widths
_GREEN, _RED, _INK, _MUTED = "#1e8e3e", "#d93025", "#3c4043", "#80868b"
START = "__start__"


def to_svg(program: Any, graph: str | None = None, *, visited: Iterable[str] = (),
           taken: Iterable[tuple[str | None, str]] = (),
           refused: Mapping[tuple[str | None, str], str] | None = None,
           scrub: Scrub | None = None) -> str:
    """The graph as an `<svg>` element; the overlay and `scrub` arguments are those of
    `to_mermaid` (captions are scrubbed before they are clipped)."""
    return draw(diagram(program, graph, scrub), set(visited), set(taken), dict(refused or {}))


def draw(d: Diagram, visited: set[str], taken: set, refused: dict) -> str:
    names = {nid: label for nid, label, _ in d.nodes}
    skills = {nid: node.skill.name for nid, _, node in d.nodes}
    layers = _layers(d)
    width = max((_CHAR * len(label) + 28 for label in names.values()), default=80)
    width = max(width, 96.0)
    rows: dict[int, list[str]] = {}
    for nid in [START] + list(names):
        rows.setdefault(layers[nid], []).append(nid)
    span = max(len(r) for r in rows.values())
    content_w = _PAD + span * width + (span - 1) * _GAP_X
    back = [e for e in d.edges if e.src and e.src != e.dst and layers[e.dst] < layers[e.src]]
    label_w = max((_CHAR * 0.85 * len(_clip(e.caption or "")) for e in back), default=0)
    lane = content_w + 40  # back edges run up this lane, right of every node
    total_w = (lane + 8 + label_w if back else content_w + 60) + _PAD  # (a label may stick out)
    pos = {}
    for layer, row in sorted(rows.items()):
        row_w = len(row) * width + (len(row) - 1) * _GAP_X
        x0 = _PAD + (span * width + (span - 1) * _GAP_X - row_w) / 2
        for i, nid in enumerate(row):
            pos[nid] = (x0 + i * (width + _GAP_X), _PAD + layer * (_H + _GAP_Y))
    total_h = _PAD * 2 + (max(rows) + 1) * _H + max(rows) * _GAP_Y + _GAP_Y * 0.6  # (a
    # same-layer edge of the last layer runs under it)
    # a run names skills by declaration name (`helper`), the diagram as written (`lib.helper`)
    taken = _run_keys(d, taken)
    refused = _run_notes(d, refused, taken)
    parts = []
    out_of: dict[str, int] = {}
    for i, e in enumerate(d.edges):
        key = (e.src, e.dst)
        nth = out_of[e.src or START] = out_of.get(e.src or START, -1) + 1
        parts.append(_edge(i, e, pos, width, key in taken, refused.get(key), lane, nth))
    parts.append(_start(pos[START], width))
    for nid, label, _ in d.nodes:
        parts.append(_node(nid, label, pos[nid], width, skills[nid] in visited or label in visited))
    return (f'<svg id="graph-svg" role="img" '
            f'aria-label="skill graph {escape(d.graph.name)}" width="{total_w:.0f}" '
            f'height="{total_h:.0f}" viewBox="0 0 {total_w:.0f} {total_h:.0f}" overflow="visible" '
            f'font-family="sans-serif" font-size="13">' + "".join(parts) + "</svg>")


def _layers(d: Diagram) -> dict[str, int]:
    """Breadth-first depth from the start node over every edge; a skill no edge reaches goes
    in the layer below the deepest."""
    out = {START: 0}
    frontier = [START]
    succ: dict[str, list[str]] = {}
    for e in d.edges:
        succ.setdefault(e.src or START, []).append(e.dst)
    while frontier:
        nxt = []
        for nid in frontier:
            for dst in succ.get(nid, ()):
                if dst not in out:
                    out[dst] = out[nid] + 1
                    nxt.append(dst)
        frontier = nxt
    deepest = max(out.values())
    for nid, _, _ in d.nodes:
        out.setdefault(nid, deepest + 1)
    return out


def _node(nid: str, label: str, at: tuple[float, float], width: float, hit: bool) -> str:
    x, y = at
    fill, stroke, sw = ("#e6f4ea", _GREEN, 2.5) if hit else ("#ffffff", _INK, 1.2)
    return (f'<g class="node{" visited" if hit else ""}" id="svg-{escape(nid)}" '
            f'data-skill="{escape(label)}"><title>{escape(label)}'
            f'{" (visited by the run)" if hit else ""}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{_H}" rx="6" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>'
            f'<text x="{x + width / 2:.1f}" y="{y + _H / 2 + 4.5:.1f}" text-anchor="middle" '
            f'fill="{_INK}">{escape(label)}</text></g>')


def _start(at: tuple[float, float], width: float) -> str:
    x, y = at
    cx = x + width / 2
    return (f'<g class="node start"><title>start</title><rect x="{cx - 38:.1f}" y="{y:.1f}" '
            f'width="76" height="{_H}" rx="20" fill="#f1f3f4" stroke="{_MUTED}"/>'
            f'<text x="{cx:.1f}" y="{y + _H / 2 + 4.5:.1f}" text-anchor="middle" '
            f'fill="{_INK}">▶ start</text></g>')


def _edge(i: int, e: Edge, pos: dict, width: float, taken: bool, note: str | None,
          lane: float, nth: int = 0) -> str:
    (sx, sy), (dx, dy) = pos[e.src or START], pos[e.dst]
    if taken:
        colour, sw, dash = _GREEN, 3, ""
    elif note is not None:
        colour, sw, dash = _RED, 1.8, ' stroke-dasharray="5 4"'
    else:
        colour, sw, dash = _INK, 1.3, "" if e.deterministic else ' stroke-dasharray="2 4"'
    path, lx, ly, anchor, arrow = _route(sx, sy, dx, dy, width, lane, e.src == e.dst)
    ly += 14 * nth  # (labels of edges leaving one node, one under the other)
    tip = (e.caption or ("model pick" if not e.deterministic else "")) + (
        f" ✗ refused: {note}" if note else "") + (" (taken by the run)" if taken else "")
    label = ""
    if e.caption:
        label = (f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" fill="{colour}" '
                 f'stroke="#ffffff" stroke-width="4" paint-order="stroke" font-size="11">'
                 f'{escape(_clip(e.caption))}</text>')
    cls = "edge" + (" taken" if taken else "") + (" refused" if note is not None else "")
    return (f'<g class="{cls}" id="svg-edge-{i}"><title>{escape(tip.strip())}</title>'
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{sw}"{dash}/>'
            f'{_head(*arrow, colour)}{label}</g>')


def _route(sx: float, sy: float, dx: float, dy: float, width: float, lane: float,
           loop: bool) -> tuple[str, float, float, str, tuple[float, float, float, float]]:
    """The path of an edge and where its label goes (x, y, anchor): down to a lower layer as a
    gentle curve; within a layer under both nodes; back up from the source's top, out to the
    lane right of every node and into the target's right side; a self-loop over the node's
    top right corner. The last item is the tip: its point and the direction it points in."""
    if loop:
        x, y = sx + width, sy
        return (f"M{x - 26:.1f},{y:.1f} C{x - 26:.1f},{y - 30:.1f} {x + 24:.1f},{y - 12:.1f} "
                f"{x:.1f},{y + 12:.1f}"), x + 4, y - 16, "start", (x, y + 12, -0.7071, 0.7071)
    x1, y1, x2 = sx + width / 2, sy + _H, dx + width / 2
    if dy == sy:  # the same layer: under both nodes, into the bottom of the target
        low = sy + _H + _GAP_Y * 0.45
        return (f"M{x1:.1f},{y1:.1f} C{x1:.1f},{low:.1f} {x2:.1f},{low:.1f} {x2:.1f},{y1:.1f}",
                (x1 + x2) / 2, low - 2, "middle", (x2, y1, 0.0, -1.0))
    if dy > sy:
        mid = (y1 + dy) / 2
        return (f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{dy:.1f}",
                (x1 + x2) / 2, mid - 4, "middle", (x2, dy, 0.0, 1.0))
    top, yb, xb = sy - _GAP_Y / 3, dy + _H / 2, dx + width
    return (f"M{x1:.1f},{sy:.1f} C{x1:.1f},{top:.1f} {lane:.1f},{top:.1f} {lane:.1f},"
            f"{(top + yb) / 2:.1f} S{lane:.1f},{yb:.1f} {xb:.1f},{yb:.1f}",
            lane + 6, (top + yb) / 2, "start", (xb, yb, -1.0, 0.0))


def _head(x: float, y: float, ux: float, uy: float, colour: str) -> str:
    """An arrowhead with its tip at (x, y) pointing along (ux, uy): a small filled triangle
    (drawn, not an SVG marker: a marker is referred to by `url(#…)`)."""
    bx, by, px, py = x - 9 * ux, y - 9 * uy, -uy * 4.5, ux * 4.5
    return (f'<polygon points="{x:.1f},{y:.1f} {bx + px:.1f},{by + py:.1f} '
            f'{bx - px:.1f},{by - py:.1f}" fill="{colour}"/>')


def _clip(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


__all__ = ["to_svg", "draw"]
