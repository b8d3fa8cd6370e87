"""The self-contained HTML report of a run (tooling.md §5, ecosystem §A9).

Role:       one file, no network: the run's header, a timeline of iterations (cursor and route
            decisions with evidence, the context pieces with provenance, the tools offered, the
            LLM call, tool calls with arguments, results, policy and check-in decisions), the
            `why` tree of the answer, the graph with the run overlay (inline SVG from
            `graph_svg`, and its Mermaid source) and every event in a filterable table.
Invariants: every piece of data is HTML-escaped (text) or JSON with `<`, `>`, `&` escaped
            (the data island); a strict CSP meta tag forbids any request; inline CSS/JS only;
            reads only the redacted trace; deterministic for equal input.
"""
from __future__ import annotations

import html
import json
from typing import Any, Iterable, Mapping

from .trace import Event, json_text, run_events, tally
from .why import Locator, explain, items, payload, short
from .why_describe import describe

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; base-uri 'none'; form-action 'none'")

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header,main{max-width:1100px;margin:0 auto;padding:12px 20px}
header{background:#fff;border-bottom:1px solid #d0d7de}
h1{font-size:20px;margin:4px 0}h2{font-size:16px;margin:18px 0 6px}
h3{font-size:14px;margin:10px 0 4px}
.facts{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0}.facts span b{font-weight:600}
.answer{background:#fff;border-left:4px solid #1e8e3e;padding:8px 12px;white-space:pre-wrap}
.outcome-error,.outcome-denied{border-left-color:#d93025}.outcome-paused{border-left-color:#bf8700}
section.iteration{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:10px 0;
padding:6px 14px}
table{border-collapse:collapse;width:100%;margin:4px 0}th,td{text-align:left;padding:3px 6px;
border-bottom:1px solid #eaeef2;vertical-align:top}th{font-weight:600;background:#f6f8fa}
code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f6f8fa;padding:8px;overflow:auto;
white-space:pre-wrap}.graph{background:#fff;border:1px solid #d0d7de;border-radius:6px;
padding:8px;overflow:auto}.ok{color:#1e8e3e}.no{color:#d93025}.muted{color:#656d76}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:#eaeef2;font-size:12px}
input#filter{width:300px;max-width:100%;padding:4px;box-sizing:border-box}
td,th,.ev,.fact,pre,code{overflow-wrap:anywhere}.graph:focus{outline:2px solid #0969da}
"""

_JS = """
(function(){var f=document.getElementById('filter');if(!f)return;f.parentNode.hidden=false;
f.addEventListener('input',function(){var q=f.value.toLowerCase();
var rows=document.querySelectorAll('#events tbody tr');
for(var i=0;i<rows.length;i++){var r=rows[i];
r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';}});})();
"""


def esc(value: Any) -> str:
    """HTML-escape any value (quotes included) after a one-line JSON rendering of non-strings."""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return html.escape(value, quote=True)


def data_island(value: Any) -> str:
    """JSON safe inside <script type="application/json">: no `<`, `>`, `&` or line separators."""
    text = json_text(value, ensure_ascii=False, sort_keys=True, default=str)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return text


def report(events: Iterable[Event], *, run: Mapping[str, Any] | None = None, inner: Any = None,
           program: Any = None, mermaid: str | None = None, svg: str | None = None) -> str:
    """The HTML report of one run (`events`: its trace, or its `RunResult`, whose inner runs
    and program are then used unless given). `svg` (`graph_svg`, drawn) and `mermaid` (its
    source) are the graph with the run overlay; drawn from `program` when neither is given."""
    inner = getattr(events, "inner", None) if inner is None else inner
    program = getattr(events, "program", None) if program is None else program
    evs = run_events(events)
    if mermaid is None and svg is None and program is not None:
        from .graph_overlay import overlay_drawings
        mermaid, svg = overlay_drawings(program, evs)
    loc = Locator(program)
    run = dict(run or {})
    started = next((payload(e) for e in evs if e.kind == "run.started"), {})
    fin = next((payload(e) for e in reversed(evs) if e.kind == "run.finished"), None)
    fin = fin if fin is not None else tally(evs) if evs else {}  # unfinished: counted so far
    run_id = run.get("run_id") or started.get("run_id") or "?"
    body = [_header(run_id, run, started, fin, evs),
            "<main>",
            _section("why", "Why this answer", _why(run_id, evs, inner, program)),
            _section("timeline", "Timeline", "".join(_iteration(k, group, loc)
                                                   for k, group in _by_iteration(evs))),
            _section("graph", "Graph with the run overlay", _graph(mermaid, svg)),
            _section("events", "All events", _events_table(evs)),
            "</main>"]
    return _page(f"afp run {run_id}", "\n".join(body), {"run": run_id, "events":
                                                           [e.to_dict() for e in evs]})


def _why(run_id: str, evs: list[Event], inner: Any, program: Any) -> str:
    """The `why` tree of the answer, as `afpc why` prints it; when it cannot be built (its
    causal chain is deeper than Python's stack, as on runs of a few hundred iterations), a note
    saying so, and the rest of the report is still written."""
    from .trace import Trace
    try:
        text = explain(Trace(run_id, evs), inner=inner, program=program) if evs else ""
    except RecursionError:
        return ("<p id=\"why-tree\" class=\"no\">The explanation of this answer is too deep to "
                "build (a chain of causes through every iteration of a long run); the timeline "
                "and the events below show each step, and <code>afpc why RUN --event ID</code> "
                "explains an earlier event.</p>")
    return f"<pre id=\"why-tree\">{esc(text)}</pre>"


def _page(title: str, body: str, data: Any) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{esc(title)}</title>\n"
            f"<style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<script type=\"application/json\" id=\"afp-data\">{data_island(data)}</script>\n"
            f"<script>{_JS}</script>\n</body></html>\n")


def _section(sid: str, title: str, inner: str) -> str:
    return f"<section id=\"{sid}\"><h2>{esc(title)}</h2>\n{inner}\n</section>"


def _paused(evs: list[Event]) -> Mapping | None:
    """The check-in a run waits on (the `checkin.requested` its last `run.paused` names)."""
    last = evs[-1] if evs else None
    if last is None or last.kind != "run.paused":
        return None
    asked = [payload(e) for e in evs if e.kind == "checkin.requested"]
    return next((a for a in reversed(asked) if a.get("checkin") == payload(last).get("checkin")),
                {})


def _header(run_id: str, run: Mapping, started: Mapping, fin: Mapping, evs: list[Event]) -> str:
    waits = _paused(evs)
    outcome = (fin.get("outcome") or run.get("outcome") or run.get("status")
               or ("paused" if waits is not None else "unknown"))
    tokens = fin.get("tokens") if isinstance(fin.get("tokens"), list) else []
    facts = [("run", run_id), ("agent", started.get("agent") or run.get("agent")),
             ("model", started.get("model") or "default"), ("outcome", outcome),
             ("iterations", fin.get("iterations")), ("LLM calls", fin.get("llm_calls")),
             ("tool calls", fin.get("tool_calls")),
             ("tokens in/out", f"{tokens[0]}/{tokens[1]}" if len(tokens) == 2 else tokens),
             ("conversation", started.get("conversation")), ("spec", run.get("spec"))]
    spans = "".join(f"<span class=\"fact\" data-fact=\"{esc(k)}\"><b>{esc(k)}</b> {esc(v)}</span>"
                    for k, v in facts if v not in (None, ""))
    answer = fin.get("answer")
    if answer is None and waits is not None:
        answer = (f"(paused: check-in {waits.get('checkin')} waits for a decision on "
                  f"`{waits.get('tool')}`: {waits.get('question')})")
    err = f"<p class=\"no\">error: {esc(fin['error'])}</p>" if fin.get("error") else ""
    return (f"<header><h1>Run <code>{esc(run_id)}</code></h1>\n"
            f"<p class=\"muted\">user: {esc(started.get('message') or '')}</p>\n"
            f"<div class=\"facts\">{spans}</div>\n"
            f"<div id=\"answer\" class=\"answer outcome-{esc(outcome)}\">{esc(answer or '')}</div>"
            f"{err}</header>")


def _by_iteration(evs: list[Event]) -> list[tuple[int, list[Event]]]:
    """The events grouped by iteration, in order; a damaged stored event whose iteration is not
    an int (null, text) makes a group of its own after the others instead of failing the sort."""
    out: dict[Any, list[Event]] = {}
    for e in evs:
        out.setdefault(e.iteration, []).append(e)
    return sorted(out.items(), key=lambda kv: (0, kv[0], "") if type(kv[0]) is int
                  else (1, 0, repr(kv[0])))


def _iteration(k: int, evs: list[Event], loc: Locator) -> str:
    parts = [f"<section class=\"iteration\" data-iteration=\"{k}\"><h3>Iteration {k}</h3>"]
    for e in evs:
        fn = _RENDER.get(e.kind)
        try:
            parts.append(fn(e, loc) if fn else _line(e))
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            parts.append(_line(e))  # a malformed event of a foreign trace: its one-line form
    parts.append("</section>")
    return "\n".join(parts)


def _line(e: Event, extra: str = "") -> str:
    return (f"<div class=\"ev\" data-kind=\"{esc(e.kind)}\"><span class=\"tag\">{esc(e.kind)}"
            f"</span> <code class=\"muted\">{esc(e.id)}</code> {esc(describe(e))}{extra}</div>")


def _conds(conds: Iterable[Mapping]) -> str:
    rows = "".join(f"<tr><td class=\"{'ok' if c.get('passed') else 'no'}\">"
                   f"{'✓' if c.get('passed') else '✗'}</td>"
                   f"<td><code>{esc(c.get('text'))}</code>"
                   f"</td><td>{esc(short(c.get('actual'), 80))}</td></tr>" for c in conds)
    return (f"<table class=\"conditions\"><tr><th></th><th>condition</th><th>actual</th></tr>"
            f"{rows}</table>") if rows else ""


def _context(e: Event, loc: Locator) -> str:
    p = payload(e)
    rows = []
    for x in items(p, "pieces"):
        detail = _conds(items(x, "detail")) if x.get("reason") == "when" else ""
        rows.append(f"<tr class=\"piece\"><td>{esc(x.get('kind'))}</td><td><code>"
                    f"{esc(x.get('name'))}</code></td><td>{esc(x.get('reason'))}{detail}</td>"
                    f"<td>{esc(loc.span(x.get('source')) or '')}</td><td>{esc(x.get('chars'))}"
                    f"</td></tr>")
    for x in items(p, "skipped"):
        rows.append(f"<tr class=\"skipped muted\"><td>{esc(x.get('kind'))}</td><td><code>"
                    f"{esc(x.get('name'))}</code></td><td>not active: its <code>when</code> did "
                    f"not hold{_conds(items(x, 'conditions'))}</td><td></td><td></td></tr>")
    tools = ", ".join(f"{t.get('name')} ({t.get('origin')})" for t in items(p, "tools"))
    return (f"<div class=\"context\" data-kind=\"context.composed\"><b>Context</b> "
            f"<code class=\"muted\">{esc(e.id)}</code><table><tr><th>kind</th><th>name</th>"
            f"<th>why active</th><th>declared at</th><th>chars</th></tr>{''.join(rows)}</table>"
            f"<div class=\"tools\">tools offered: {esc(tools or 'none')}</div></div>")


def _replied(e: Event, loc: Locator) -> str:
    p = payload(e)
    calls = "".join(f"<li><code>{esc(c.get('tool'))}</code> ({esc(c.get('id'))}) "
                    f"<code>{esc(c.get('args'))}</code></li>" for c in items(p, "tool_calls"))
    text = f"<pre class=\"reply\">{esc(p.get('text'))}</pre>" if p.get("text") else ""
    usage = p.get("usage") or []
    return _line(e, f" <span class=\"muted\">tokens {esc(usage)}</span>{text}"
                    + (f"<ul>{calls}</ul>" if calls else ""))


def _tool_called(e: Event, loc: Locator) -> str:
    p = payload(e)
    body = json.dumps(p.get("args"), ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return _line(e, f"<pre class=\"args\">{esc(body)}</pre>")


def _tool_returned(e: Event, loc: Locator) -> str:
    p = payload(e)
    body = json.dumps(p.get("result"), ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return _line(e, f"<pre class=\"result\">{esc(body)}</pre>")


def _route(e: Event, loc: Locator) -> str:
    return _line(e, f" <span class=\"muted\">{esc(loc.span(e.source) or '')}</span>"
                    + _conds(items(payload(e), "conditions")))


def _moved(e: Event, loc: Locator) -> str:
    return _line(e, f" <span class=\"muted\">{esc(loc.span(e.source) or '')}</span>"
                    + _conds(items(payload(e), "witness")))


def _policy(e: Event, loc: Locator) -> str:
    return _line(e, f" <span class=\"muted\">{esc(loc.span(e.source) or '')}</span>")


_RENDER = {"context.composed": _context, "llm.replied": _replied, "tool.called": _tool_called,
           "tool.returned": _tool_returned, "route.evaluated": _route, "cursor.moved": _moved,
           "policy.decided": _policy}


def _graph(mermaid: str | None, svg: str | None = None) -> str:
    if not mermaid and not svg:
        return "<p class=\"muted\">no graph (the agent has none, or its spec was not found)</p>"
    out = ""
    if svg:  # (built by `graph_svg`, which escapes every text it writes)
        out += ("<p class=\"muted\">Skills the run visited are green, the edges it took thick "
                "green, edges whose guard refused dashed red (hover for the reason).</p>"
                "<div class=\"graph\" tabindex=\"0\" role=\"region\" "
                f"aria-label=\"skill graph (scrolls)\">{svg}</div>")
    if mermaid:
        src = (f"<pre id=\"mermaid\" class=\"mermaid-src\">{esc(mermaid)}</pre>")
        out += (f"<details><summary>Mermaid source (paste it into any Mermaid viewer)</summary>"
                f"{src}</details>" if svg else
                "<p class=\"muted\">Mermaid source with the run overlay (paste it into any "
                f"Mermaid viewer):</p>{src}")
    return out


def _events_table(evs: list[Event]) -> str:
    rows = "".join(f"<tr data-kind=\"{esc(e.kind)}\"><td><code>{esc(e.id)}</code></td><td>"
                   f"{e.iteration}</td><td>{esc(e.kind)}</td><td>{esc(describe(e))}</td>"
                   f"<td><code>{esc(', '.join(e.caused_by))}</code></td></tr>" for e in evs)
    return ("<p hidden><input id=\"filter\" type=\"search\" placeholder=\"filter events\" "
            "aria-label=\"filter events\"></p><table id=\"events\"><thead><tr><th>id</th>"
            "<th>iteration</th><th>kind</th><th>what</th><th>caused by</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


__all__ = ["report", "esc", "data_island", "CSP"]
