"""`afpc trace list|show|export` and `afpc why` over the run store (tooling.md §2, §5).

Role:       thin click commands reading `store.runs()`, `store.run(id)`, `store.events(id)`;
            exports come from `export`, `report_html`, `otel`; explanations from `why`.
            Registered by `cli._register_optional` (names `trace`, `why`).
Emits:      `afpc: …` lines on stderr: no store at the path (an absent default store is an empty
            one to `trace list`), a store that fails or is damaged (`StoreError`, with the fix),
            an unknown run, or (`why`) an unknown event, skill iteration or edge.
Invariants: prints only what the store holds (redacted events); read-only: never creates a
            store or folder (`open_store` opens only an existing one), and no file but the one
            `-o` names (never one the command reads: the store, the spec); exit 0 done, 1 an
            unknown run/event, a missing, failing or damaged store, or an export that cannot be
            made, 2 usage or internal error; no traceback for bad input.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from .cli_io import (FilePath, echo, emit, guarded, run_id_text, store_text, terminal_safe,
                     utf8_text)
from .graph_overlay import overlay_drawings
from .suggest import closest

_STORE = click.option("--store", "store_url", callback=store_text,
                      help="Run store (default .afp/runs.db or $AFP_STORE).")
_OUTPUT = click.option("-o", "--output", type=FilePath(writable=True),
                       help="Write to a file instead of standard output.")


def _fail(message: str, code: int = 1) -> None:
    click.echo(terminal_safe(f"afpc: {message}"), err=True)
    sys.exit(code)


def open_store(url: str | None, *, create: bool = False) -> Any:
    """The store `--store`/`AFP_STORE` names; a reader (`create=False`) gets only one that
    exists: a mistyped path is an error naming it, never a new empty store."""
    from .store import StoreError, from_url
    try:
        return from_url(url, create=create)
    except StoreError as e:
        _fail(str(e))


def store_errors(fn: Callable) -> Callable:
    """A store that fails or is damaged while read (`StoreError`): its message, exit 1."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        from .store import StoreError
        try:
            return fn(*args, **kw)
        except StoreError as e:
            _fail(str(e))
    return wrapper


def resolve(store: Any, run_id: str) -> str:
    """`last` names the most recent top-level run in the store."""
    if run_id != "last":
        return run_id
    tops = [r["run_id"] for r in store.runs() if r and not (r.get("meta") or {}).get("outer")]
    return tops[-1] if tops else run_id


def load_run(store: Any, run_id: str) -> tuple[dict, list]:
    """(run row, events) of a stored run (`last`: the latest), or exit 1 naming close ids."""
    run_id = resolve(store, run_id)
    row = store.run(run_id)
    events = store.events(run_id) if row is not None else []
    if row is not None and not events:
        _fail(f"run `{run_id}` in the store `{getattr(store, 'path', '?')}` has no events stored "
              f"(its process may have ended before its first save); pick another run "
              f"(`afpc trace list`)")
    if row is None:
        ids = [r["run_id"] for r in store.runs()]
        close = closest(run_id, ids)
        hint = f"; did you mean `{close}`?" if close else ("; the store has no runs"
                                                              if not ids else "")
        _fail(f"no run `{run_id}` in the store `{getattr(store, 'path', '?')}`{hint}")
    return row, events


def inner_lookup(store: Any):
    """Inner runs of agent-backed tools are stored under `<run>/<call id>`."""
    def find(run_id: str):
        return store.trace(run_id) if store.run(run_id) is not None else None
    return find


def spec_program(row: dict) -> Any:
    """The run's spec, loaded for source locations and the graph; None when it cannot be."""
    spec = row.get("spec")
    if not spec or not Path(spec).is_file():
        return None
    try:
        from .api import load
        return load(spec)
    except Exception:  # noqa: BLE001 - a spec that changed since the run: report without it
        return None


def warn_if_spec_changed(row: dict, program: Any) -> None:
    """A spec edited since the run (`afpc run` keeps its SHA-256 with the run): the `file:line`
    of each event is read from the spec as it is now, so say that they may be off."""
    meta = row.get("meta")
    digest = meta.get("spec_digest") if isinstance(meta, dict) else None
    if program is None or not isinstance(digest, str):
        return
    from .cli_run import spec_digest
    if digest != spec_digest(program):
        click.echo(f"afpc: warning: the spec `{row.get('spec')}` (or a module it imports) changed "
                   f"since run `{row.get('run_id')}` was recorded; its `file:line` locations are "
                   f"read from the spec as it is now and may be off", err=True)


def overlay_mermaid(program: Any, events: list) -> str | None:
    return overlay_drawings(program, events)[0]


# ---------------------------------------------------------------- trace
@click.group(name="trace")
def trace() -> None:
    """Read recorded runs: list them, show one, export one."""


@trace.command(name="list")
@_STORE
@click.option("--all", "show_all", is_flag=True, help="Include inner runs of agent-backed tools.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@_OUTPUT
@guarded
@store_errors
def list_(store_url: str | None, show_all: bool, fmt: str, output: str | None = None) -> None:
    """List the runs in the store: id, agent, outcome, start, iterations."""
    store = None if _no_default_store(store_url) else open_store(store_url)
    rows = [] if store is None else _rows(store, show_all)
    reads = [getattr(store, "path", None)]
    if fmt == "json":
        _put(json.dumps(rows, ensure_ascii=False, sort_keys=True, indent=2), output, reads)
        return
    if not rows:
        click.echo("no runs recorded", err=True)
        if output:
            _put("", output, reads)
        return
    head = ("RUN", "AGENT", "OUTCOME", "STARTED", "ITERATIONS")
    table = [head] + [(x["run_id"], str(x["agent"]), str(x["outcome"]), x["started"] or "-",
                       str(x["iterations"])) for x in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    _put("\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table),
         output, reads, human=True)


def _put(text: str, output: str | None, reads: list, *, human: bool = False) -> None:
    """A report to standard output, or to the file `-o` names (never one the command reads);
    human text through `terminal_safe` either way."""
    text = terminal_safe(text) if human else text
    if not output:
        echo(text)
        return
    emit(text + "\n" if text else "", output, reads)
    click.echo(f"wrote {output}", err=True)


def _no_default_store(store_url: str | None) -> bool:
    """No store named (`--store`, `AFP_STORE`) and nothing at `.afp/runs.db`: no run was recorded
    here yet, which `trace list` shows as an empty store. A store that was named must exist (a
    typo is no empty list), and anything else at the default path (a folder, a dangling link,
    `.afp` a file) is left to `open_store` to name."""
    from .store import DEFAULT_PATH
    if store_url is not None or os.environ.get("AFP_STORE"):
        return False
    try:
        os.lstat(DEFAULT_PATH)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        pass
    return False


def _rows(store: Any, show_all: bool) -> list[dict]:
    rows = []
    for r in store.runs():
        if r is None or (not show_all and (r.get("meta") or {}).get("outer")):
            continue
        rows.append(run_summary(r))
    return rows


def run_summary(r: dict) -> dict:
    """A run's row as `trace list --format json` and `trace show --format json` give it."""
    return {"run_id": r["run_id"], "agent": r.get("agent"),
            "outcome": shown_outcome(r), "status": r.get("status"),
            "started": r.get("started"),  # (a wall-clock stamp: `afpc run` gives one)
            "time": r.get("time") or 0,  # (logical: the last event's tick)
            "iterations": r.get("iterations") or 0,
            "events": r.get("events") or 0}


@trace.command(name="show")
@click.argument("run_id", callback=run_id_text)
@_STORE
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: the run's row and its events (the JSONL schema).")
@_OUTPUT
@guarded
@store_errors
def show(run_id: str, store_url: str | None, fmt: str, output: str | None = None) -> None:
    """Print a run (RUN, or `last`) as an indented timeline of its iterations."""
    store = open_store(store_url)
    row, events = load_run(store, run_id)
    reads = [getattr(store, "path", None)]
    if fmt == "json":
        from .trace import json_text  # (a NaN in a tool's result is "NaN", as in the JSONL)
        shown = {"run": run_summary(row), "events": [e.to_dict() for e in events]}
        _put(json_text(shown, ensure_ascii=False, sort_keys=True, indent=2), output, reads)
        return
    _put(timeline(row, events), output, reads, human=True)


def shown_outcome(row: dict) -> str:
    """The outcome, marked when an unhandled exception cut the run short (status `interrupted`)."""
    outcome = row.get("outcome") or row.get("status")
    return f"{outcome} (interrupted)" if row.get("status") == "interrupted" else str(outcome)


def timeline(row: dict, events: list) -> str:
    from .trace import tally
    from .why import Locator
    from .why_describe import describe
    program = spec_program(row)
    warn_if_spec_changed(row, program)
    loc = Locator(program)  # (its sources give `file:line` from any folder)
    fin = next((e.payload for e in reversed(events) if e.kind == "run.finished"), None)
    fin = fin if isinstance(fin, dict) else tally(events)
    tokens = fin.get("tokens")
    tokens = tokens if isinstance(tokens, list) and tokens else ["?", "?"]  # (a damaged event)
    outcome = shown_outcome(row)
    lines = [f"run {row['run_id']} ({row.get('agent')}): {outcome} — "
             f"{fin.get('iterations', '?')} iterations, {fin.get('llm_calls', '?')} LLM calls, "
             f"{fin.get('tool_calls', '?')} tool calls, tokens {tokens[0]}/{tokens[-1]}"
             + (" so far" if fin.get("so_far") else "")]
    tool_events = {e.id for e in events if e.kind == "tool.called"}
    current = None
    for e in events:
        if e.iteration != current:
            current = e.iteration
            lines.append(f"iteration {current}")
        nested = any(c in tool_events for c in e.caused_by) and e.kind != "tool.called"
        where = f" ({loc.span(e.source)})" if e.source else ""
        lines.append(("      " if nested else "  ") + f"[{e.id}] {describe(e)}{where}")
    return "\n".join(lines)


_EXPORTS = ("jsonl", "html", "otlp-json", "thinking")


@trace.command(name="export")
@click.argument("run_id", callback=run_id_text)
@click.option("--format", "fmt", type=click.Choice(_EXPORTS), required=True,
              help="jsonl (event schema), html (report), otlp-json (OpenTelemetry), thinking.")
@_OUTPUT
@_STORE
@guarded
@store_errors
def export(run_id: str, fmt: str, output: str | None, store_url: str | None) -> None:
    """Export a run as JSONL, a self-contained HTML report, OTLP JSON or a thinking trace."""
    store = open_store(store_url)
    row, events = load_run(store, run_id)
    reads = [getattr(store, "path", None)]  # (and, for html, the spec files the report reads)
    emit(render_export(fmt, store, row, events, reads), output, reads=reads)
    if output:
        click.echo(f"wrote {output}", err=True)


def render_export(fmt: str, store: Any, row: dict, events: list,
                  reads: list | None = None) -> str:
    """The export's text; `reads` gains the files it read besides the store (the html report
    reads the run's spec and its modules), which `-o` must not replace."""
    if fmt == "jsonl":
        from .export import to_jsonl
        return to_jsonl(events)
    if fmt == "thinking":
        from .export import thinking_json
        return thinking_json(events, row)
    if fmt == "otlp-json":
        from .otel import OtelUnavailable, to_otlp_json
        try:
            return to_otlp_json(events, inner=inner_lookup(store))
        except OtelUnavailable as e:
            _fail(str(e))
    from .report_html import report
    program = spec_program(row)
    warn_if_spec_changed(row, program)  # (the report's timeline and tree give `file:line`)
    if reads is not None and program is not None:
        reads += [row.get("spec"), *(m.key for m in getattr(program, "ir", program).modules)]
    mermaid, svg = overlay_drawings(program, events)
    return report(events, run=row, inner=inner_lookup(store), program=program, mermaid=mermaid,
                  svg=svg)


# ---------------------------------------------------------------- why
@click.command(name="why")
@click.argument("run_id", callback=run_id_text)
@click.option("--event", "event_id", metavar="ID", callback=utf8_text,
              help="Explain this event (id or seq number).")
@click.option("--skill", metavar="S", callback=utf8_text,
              help="Why was skill S active or not?")
@click.option("--iteration", type=click.IntRange(min=1), metavar="K",
              help="With --skill: at iteration K (default: the last one).")
@click.option("--edge", metavar="A->B", callback=utf8_text,
              help="Why did (or didn't) this edge fire?")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@_STORE
@guarded
@store_errors
def why(run_id: str, event_id: str | None, skill: str | None, iteration: int | None,
        edge: str | None, fmt: str, store_url: str | None) -> None:
    """Explain a run's answer (or an event, a skill, an edge) back to its sources.

    RUN is a run id, or `last` for the most recent run in the store."""
    if sum(x is not None for x in (event_id, skill, edge)) > 1:
        raise click.UsageError("give at most one of --event, --skill, --edge")
    if iteration is not None and skill is None:
        raise click.UsageError("--iteration goes with --skill")
    if event_id is not None and not event_id.strip():
        raise click.BadParameter("needs an event id or seq number, e.g. `--event 12`",
                                 param_hint="--event")
    if skill is not None and not skill.strip():
        raise click.BadParameter("needs a skill name, e.g. `--skill triage`", param_hint="--skill")
    from .trace import Trace
    from .why import why_tree, render_text, to_json
    store = open_store(store_url)
    row, events = load_run(store, run_id)
    run_id = row["run_id"]
    if edge is not None:
        _warn_if_no_such_edge(row, edge)
    if skill is not None:
        _warn_if_no_such_skill(row, skill)
    program = spec_program(row)
    warn_if_spec_changed(row, program)
    node, query = why_tree(Trace(run_id, events), event_id, inner=inner_lookup(store),
                           program=program, skill=skill, iteration=iteration, edge=edge)
    if node.kind in ("missing", "empty"):
        _fail(node.text)
    if fmt == "json":
        echo(to_json(run_id, query, node), nl=False)
    else:
        echo(render_text(node), human=True)


def _warn_if_no_such_edge(row: dict, edge: str) -> None:
    """`why --edge A->B` for an edge the run's spec does not declare: say so, with the edges
    that do leave A (the answer, from the trace alone, would only say it never fired)."""
    from .why_query import parse_edge
    parsed = parse_edge(edge)
    program = spec_program(row) if parsed else None
    edges = _spec_edges(program) if program is not None else None
    if edges is None or parsed in edges:
        return
    a, b = parsed
    outs = ", ".join(f"`{a} -> {t}`" for t in sorted({t for f, t in edges if f == a}))
    click.echo(f"afpc: warning: the run's spec `{row.get('spec')}` declares no edge `{a} -> {b}`"
               + (f"; edges from `{a}`: {outs}" if outs else f"; no edge leaves `{a}`"), err=True)


def _warn_if_no_such_skill(row: dict, skill: str) -> None:
    """`why --skill S` for a skill the run's spec does not declare: say so, with the closest
    (the answer, from the trace alone, would only say it was never active)."""
    from . import ir
    from .suggest import closest
    program = spec_program(row)
    if program is None:
        return
    kinds = (ir.Skill, ir.Fact, ir.Instruction, ir.Steering)  # (`--skill` takes a piece too)
    names = {d.name for m in program.ir.modules for d in m.decls if isinstance(d, kinds)}
    if skill in names or skill.rpartition(".")[2] in names:
        return
    close = closest(skill.rpartition(".")[2], names)
    click.echo(f"afpc: warning: the run's spec `{row.get('spec')}` declares no skill, fact, "
               f"instruction or steering `{skill}`"
               + (f"; did you mean `{close}`?" if close else
                  f"; declared: {', '.join(f'`{n}`' for n in sorted(names)) or 'none'}"), err=True)


def _spec_edges(program: Any) -> set[tuple[str, str]]:
    """(from skill, to skill) of every edge of every graph of `program`."""
    from .graph_export import graph_names, to_json
    out: set[tuple[str, str]] = set()
    for name in graph_names(program):
        doc = json.loads(to_json(program, name))
        skill = {n["id"]: n.get("skill") for n in doc.get("nodes", [])}
        out |= {(skill.get(e.get("from")), skill.get(e.get("to"))) for e in doc.get("edges", [])
                if e.get("from") is not None}
    return out


__all__ = ["trace", "why", "timeline", "render_export"]
