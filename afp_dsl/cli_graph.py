"""`afpc graph FILE [--graph G] [--format mermaid|dot|json] [--run RUN] [-o OUT]`: draw a graph.

Role:       a thin click command over `graph_export`; registered by `cli._register_optional`.
            `--run RUN` overlays a recorded run: visited skills and taken edges styled, edges
            whose guards refused annotated with the failing condition (Mermaid and DOT); the
            JSON gains `visited` (nodes) and `taken`/`refused` (edges) fields. With a run,
            every caption is scrubbed with the run's redaction (`known_secrets.run_scrubber`).
Invariants: exit 0 drawn, 1 the spec has errors (diagnostics on stderr), no graph to draw or
            an unknown run, 2 usage (a missing file, an unknown `--graph`) or internal error.
"""
from __future__ import annotations

import sys
from typing import Any

import click

from . import graph_export
from .cli import checked_program
from .cli_io import FilePath, emit, guarded, run_id_text, store_text, terminal_safe

_FORMATS = {"mermaid": graph_export.to_mermaid, "dot": graph_export.to_dot, "json": graph_export.to_json}


@click.command(name="graph")
@click.argument("file", type=FilePath())
@click.option("--graph", "graph_name", metavar="G", help="The graph to draw (default: the only one).")
@click.option("--format", "fmt", type=click.Choice(sorted(_FORMATS)), default="mermaid",
              show_default=True, help="Output format.")
@click.option("-o", "--output", type=FilePath(writable=True),
              help="Write the diagram to a file instead of standard output.")
@click.option("--run", "run_id", metavar="RUN", callback=run_id_text,
              help="Overlay the path a recorded run took (a run id, or `last`).")
@click.option("--store", "store_url", callback=store_text, help="Run store (default .afp/runs.db or $AFP_STORE).")
@guarded
def graph(file: str, graph_name: str | None, fmt: str, output: str | None,
          run_id: str | None = None, store_url: str | None = None) -> None:
    """Draw a skill graph as Mermaid, Graphviz DOT or JSON."""
    program = checked_program(file)
    reads = [file, *(m.key for m in program.modules)]  # (files `-o` must not replace)
    names = graph_export.graph_names(program)
    if graph_name is not None and graph_name not in names and \
            graph_name not in [n.rsplit(".", 1)[-1] for n in names]:
        raise click.BadParameter(graph_export.no_graph_named(graph_name, names), param_hint="--graph")
    try:
        if run_id is not None:
            run_id, overlay, agent, own = _overlay(program, run_id, store_url, reads)
            graph_name = graph_name if graph_name is not None else own or None
            text = _FORMATS[fmt](program, graph_name, **overlay)
            if not _warn_if_foreign(program, graph_name, overlay["visited"], run_id):
                _warn_if_other_agent(program, agent, run_id)
        else:
            text = _FORMATS[fmt](program, graph_name)
    except graph_export.GraphChoiceError as e:  # (any other error is a bug: `guarded`, exit 2)
        if "several" in str(e):  # (a choice to make, like an unknown --graph: usage, exit 2)
            raise click.UsageError(f"{e}; pass --graph NAME") from None
        click.echo(f"afpc: {e}", err=True)  # (nothing to draw: exit 1)
        sys.exit(1)
    emit(text, output, reads)
    if output:
        click.echo(f"wrote {output}", err=True)


def _overlay(program: Any, run_id: str, store_url: str | None,
             reads: list) -> tuple[str, dict, Any, str | None]:
    """The run's id (`last` resolved), the path it took and its redaction, for
    `to_mermaid|dot|json`, the name of the agent that ran and its graph (what is drawn when
    `--graph` does not say: the spec may have several); adds the store's file to `reads`."""
    from .graph_overlay import run_graph
    from .cli_trace import load_run, open_store, resolve
    from .known_secrets import run_scrubber
    store = open_store(store_url)  # (a reader: a mistyped path is an error, never a new store)
    reads.append(getattr(store, "path", None))
    run_id = resolve(store, run_id)
    _, events = load_run(store, run_id)  # (an unknown id exits 1, naming the closest one)
    visited, taken, refused = graph_export.run_overlay(events)
    started = next((e.payload for e in events if e.kind == "run.started"), None)
    agent = started.get("agent") if isinstance(started, dict) else None
    return run_id, {"visited": visited, "taken": taken, "refused": refused,
                    "scrub": run_scrubber(program, events)}, agent, run_graph(program, events)


def _warn_if_other_agent(program: Any, agent: Any, run_id: str) -> None:
    """A run of an agent this spec does not declare, or of one with no graph, visited no skill:
    say so (the diagram alone would look like a run that went nowhere)."""
    from . import ir
    if not isinstance(agent, str):
        return
    loaded = getattr(program, "ir", program)
    agents = {d.name: d for m in loaded.modules for d in m.decls if isinstance(d, ir.Agent)}
    if agent not in agents:
        own = sorted(d.name for d in loaded.root_module.decls if isinstance(d, ir.Agent))
        why = (f"which this spec does not declare (its agents: "
               f"{', '.join(f'`{a}`' for a in own) or 'none'}): it was recorded for another spec")
    elif agents[agent].graph is None:
        why = "which has no graph"
    else:
        return
    click.echo(terminal_safe(f"afpc: warning: run `{run_id}` is a run of agent `{agent}`, {why}, "
                             f"so no path is drawn"), err=True)


def _warn_if_foreign(program: Any, graph_name: str | None, visited: set, run_id: str) -> bool:
    """A run whose path names no skill of this graph was recorded for another spec or graph:
    say so (the diagram would show no path at all, silently). True when it warned."""
    import json
    nodes = json.loads(graph_export.to_json(program, graph_name)).get("nodes", [])
    skills = {n.get("skill") for n in nodes} | {n.get("id", "")[2:] for n in nodes}
    if visited and not visited & skills:
        shown = ", ".join(f"`{v}`" for v in sorted(visited)[:5])
        click.echo(f"afpc: warning: run `{run_id}` went through {shown}, which this graph does "
                   f"not have: it was recorded for another spec or graph, so no path is drawn",
                   err=True)
        return True
    return False
