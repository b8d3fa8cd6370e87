"""The graph a recorded run took, drawn for a report: Mermaid text and inline SVG with its overlay.

Role:       picks the graph of the agent that ran (from `run.started`), folds the run's path
            (`graph_export.run_overlay`) and its redaction (`known_secrets.run_scrubber`), and
            draws both forms; the HTML report (from the CLI or from Python) and `afpc trace
            export --format html` share it.
Invariants: every caption is scrubbed with the run's redaction; (None, None) when the program
            has no graph for that agent (a run of an agent with no graph draws nothing).
"""
from __future__ import annotations

from typing import Any


def overlay_drawings(program: Any, events: list) -> tuple[str | None, str | None]:
    """(Mermaid text, inline SVG) of the graph of the run's agent with the run's overlay, or
    (None, None) when there is none to draw; its captions scrubbed with the run's redaction."""
    from . import graph_export, graph_svg
    from .known_secrets import run_scrubber
    if program is None or not graph_export.graph_names(program):
        return None, None
    graph = run_graph(program, events)
    if graph is None:
        return None, None
    visited, taken, refused = graph_export.run_overlay(events)
    scrub = run_scrubber(program, events)
    try:
        return (graph_export.to_mermaid(program, graph or None, visited=visited, taken=taken,
                                        refused=refused, scrub=scrub),
                graph_svg.to_svg(program, graph or None, visited=visited, taken=taken,
                                 refused=refused, scrub=scrub))
    except graph_export.GraphChoiceError:  # (the run names no graph the spec has: no diagram)
        return None, None


def run_graph(program: Any, events: list) -> str | None:
    """The graph of the agent the run ran (as `graph --graph` names it): None when that agent
    has no graph (no diagram), "" when the run does not say which agent (the only graph)."""
    from . import ir
    from .graph_export import graph_names
    started = next((e.payload for e in events if e.kind == "run.started"), None)
    name = started.get("agent") if isinstance(started, dict) else None
    agent = next((d for d in getattr(program, "ir", program).root_module.decls
                  if isinstance(d, ir.Agent) and d.name == name), None) if name else None
    if agent is None:
        return ""
    if agent.graph is None:
        return None
    ref = agent.graph
    wanted = f"{ref.alias}.{ref.name}" if ref.alias else ref.name
    return wanted if wanted in graph_names(program) else ""


__all__ = ["overlay_drawings", "run_graph"]
