"""The HTML report: escaped, self-contained, and rendered for real in headless Chromium.

Chromium (Debian's `chromium`, installed by `.ci/chromium.sh`) is driven over the DevTools
protocol through `--remote-debugging-pipe` (no extra dependency): it opens the file:// URL,
and the test checks the key elements, that the XSS canary stayed text, that the inline script
ran under the page's CSP, and — from the Network events — that no request other than the file
itself was made. A screenshot goes to tests/artifacts/report.png. Without chromium the browser
test is skipped with its reason, except under CI=true, where it fails.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from test_trace_canary import XSS, canary_run

from afp_dsl import report_html
from afp_dsl.cli_trace import overlay_drawings

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def _report(tmp_path: Path, **row: str) -> tuple[Path, object]:
    agent, r = canary_run()
    program = agent.session.program if hasattr(agent, "session") else None
    mermaid, svg = overlay_drawings(program, list(r.trace))
    text = report_html.report(r.trace, run={"run_id": r.run_id, "agent": "g", **row},
                              inner=r.inner,
                              program=program, mermaid=mermaid, svg=svg)
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    return path, r


def test_report_escapes_everything_and_is_self_contained(tmp_path):
    path, r = _report(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "<script>window.__xss" not in text and 'onerror="window' not in text
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in text  # shown, as text
    assert text.count("<script") == 2  # the JSON data island and the one inline script
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    for needle in ("http://", "https://", "//cdn", "<link", "@import", "url("):
        assert needle not in text, needle
    tags = re.findall(r"<[A-Za-z][^>]*>", text)
    assert tags and not [t for t in tags if re.search(r"\s(src|href|action)=", t)]
    island = text.split('id="afp-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in island and json.loads(island)["run"] == r.run_id
    for section in ('id="why"', 'id="timeline"', 'id="graph"', 'id="events"',
                    'class="iteration"', 'class="piece"', 'id="mermaid"'):
        assert section in text, section


def test_report_is_deterministic(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, _ = _report(tmp_path / "a")
    b, _ = _report(tmp_path / "b")
    assert a.read_text(encoding="utf-8") == b.read_text(encoding="utf-8")


# ---------------------------------------------------------------- Chromium over the DevTools pipe
class Browser:
    """A headless Chromium spoken to over `--remote-debugging-pipe` (fds 3 and 4)."""

    def __init__(self, exe: str, profile: str):
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()

        def fds() -> None:
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-dev-shm-usage", '--host-resolver-rules=MAP * ~NOTFOUND',
                f"--user-data-dir={profile}", "--remote-debugging-pipe",
                "--window-size=1200,900", "about:blank"]
        os.set_inheritable(to_child_r, True)
        os.set_inheritable(from_child_w, True)
        # close_fds=False: the fds 3 and 4 made by `fds` after the fork must survive the exec
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, limit: int = 2000) -> dict:
        for e in self.events:
            if e.get("method") == method:
                return e
        for _ in range(limit):
            e = self._read()
            self.events.append(e)
            if e.get("method") == method:
                return e
        raise RuntimeError(f"no {method} event")

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._from_child_r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_child_w)
        os.close(self._from_child_r)


def _chromium() -> str | None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        reason = "chromium is not installed (run .ci/chromium.sh)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason + " — required under CI")
        pytest.skip(reason)
    return exe


def _open(exe: str, path: Path, probe: str, *, width: int = 1200, script: bool = True,
          keys: int = 0) -> tuple[dict, list[dict]]:
    """(the probe's JSON value, every DevTools event) after opening `path` in a fresh headless
    Chromium `width` CSS pixels wide, with page scripts on or off, after pressing Tab `keys`
    times."""
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(exe, profile)
        try:
            target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Network", "Page", "Runtime", "Log"):
                b.send(f"{domain}.enable", session=s)
            b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 800,
                   "deviceScaleFactor": 1, "mobile": width < 600}, session=s)
            b.send("Emulation.setScriptExecutionDisabled", {"value": not script}, session=s)
            b.send("Page.navigate", {"url": path.resolve().as_uri()}, session=s)
            b.wait_for("Page.loadEventFired", limit=100_000)
            for _ in range(keys):
                for kind in ("rawKeyDown", "keyUp"):
                    b.send("Input.dispatchKeyEvent", {"type": kind, "key": "Tab", "code": "Tab",
                           "windowsVirtualKeyCode": 9}, session=s)
            got = b.send("Runtime.evaluate", {"expression": probe, "returnByValue": True},
                         session=s)["result"]["value"]
        finally:
            b.close()
    return json.loads(got), b.events


def _complaints(events: list[dict]) -> list[dict]:
    """Uncaught exceptions, console errors and warnings, and browser log errors."""
    return [e for e in events if e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled"
                and e["params"]["type"] in ("error", "warning"))
            or (e.get("method") == "Log.entryAdded"
                and e["params"]["entry"]["level"] in ("error", "warning"))]


def test_report_renders_in_headless_chromium_without_any_request(tmp_path):
    exe = _chromium()
    path, r = _report(tmp_path)
    url = path.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(exe, profile)
        try:
            target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Network", "Page", "Runtime", "Log"):
                b.send(f"{domain}.enable", session=s)
            b.send("Page.navigate", {"url": url}, session=s)
            b.wait_for("Page.loadEventFired")
            probe = """JSON.stringify({
              iterations: document.querySelectorAll('section.iteration').length,
              pieces: document.querySelectorAll('tr.piece').length,
              events: document.querySelectorAll('#events tbody tr').length,
              answer: document.getElementById('answer').textContent,
              why: document.getElementById('why-tree').textContent.slice(0, 60),
              mermaid: (document.getElementById('mermaid') || {}).textContent || '',
              graph: (function(){var g=document.getElementById('graph-svg');
                if(!g) return null; var b=g.getBoundingClientRect();
                return {w: b.width, h: b.height, nodes: g.querySelectorAll('g.node').length,
                        visited: g.querySelectorAll('g.node.visited').length,
                        taken: g.querySelectorAll('g.edge.taken').length};})(),
              xss: window.__xss === undefined ? null : window.__xss,
              imgs: document.images.length,
              filtered: (function(){var f=document.getElementById('filter');
                f.value='tool.returned';f.dispatchEvent(new Event('input'));
                return Array.prototype.filter.call(document.querySelectorAll('#events tbody tr'),
                  function(x){return x.style.display!=='none';}).length;})()
            })"""
            got = json.loads(b.send("Runtime.evaluate", {"expression": probe,
                                                         "returnByValue": True},
                                    session=s)["result"]["value"])
            shot = b.send("Page.captureScreenshot", {"format": "png"}, session=s)["data"]
        finally:
            b.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(base64.b64decode(shot))
    assert got["iterations"] >= 3 and got["pieces"] >= 3
    assert got["events"] == len(r.trace)
    assert XSS.split(">")[0] in got["answer"]  # the canary is visible as text ...
    assert got["xss"] is None and got["imgs"] == 0  # ... and never ran or loaded
    assert got["why"].startswith("[") and "flowchart TD" in got["mermaid"]
    graph = got["graph"]  # drawn, with the run's overlay, under the same CSP
    assert graph and graph["w"] > 100 and graph["h"] > 100, graph
    assert graph["nodes"] >= 2 and graph["visited"] >= 1 and graph["taken"] >= 1, graph
    assert 0 < got["filtered"] < got["events"]  # the inline script ran under the CSP
    requests = [e["params"]["request"]["url"] for e in b.events
                if e.get("method") == "Network.requestWillBeSent"]
    assert requests == [url], requests
    blocked = [e for e in b.events if e.get("method") == "Log.entryAdded"
               and "Content Security Policy" in e["params"]["entry"].get("text", "")]
    assert not blocked, blocked


# ---------------------------------------------------------------- as a reader opens it
PAGE_PROBE = """JSON.stringify({
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  active: document.activeElement ? (document.activeElement.id || document.activeElement.className)
          : null,
  filterShown: !!document.getElementById('filter') &&
               document.getElementById('filter').getClientRects().length > 0,
  why: document.getElementById('why-tree').textContent.slice(0, 80),
  rows: document.querySelectorAll('#events tbody tr').length,
  iterations: document.querySelectorAll('section.iteration').length
})"""


def test_report_fits_a_phone_screen_and_its_graph_scrolls_by_keyboard(tmp_path):
    """At 360 px nothing but the graph's own box scrolls sideways (long ids, JSON and the spec's
    path in the header wrap); the graph box is the first stop of Tab (a scrolling box a keyboard
    cannot focus cannot be scrolled with it). Chromium focuses a scrolling box by itself;
    browsers that do not need the box's own `tabindex`, checked in the text."""
    exe = _chromium()
    path, _ = _report(tmp_path, spec="/home/someone/projects/agents/examples/x/support_desk.afp")
    assert '<div class="graph" tabindex="0" role="region" aria-label=' in path.read_text("utf-8")
    got, events = _open(exe, path, PAGE_PROBE, width=360, keys=1)
    assert got["overflow"] <= 0, got
    assert got["active"] == "graph", got
    assert got["filterShown"] and not _complaints(events), (got, _complaints(events))


def test_report_without_javascript_shows_everything_but_the_filter(tmp_path):
    """Scripts off: the why tree, the timeline and every event are there (plain HTML), and the
    filter box, which would do nothing, is not shown."""
    exe = _chromium()
    path, r = _report(tmp_path)
    got, events = _open(exe, path, PAGE_PROBE, script=False)
    assert got["rows"] == len(r.trace) and got["iterations"] >= 3 and got["why"].startswith("[")
    assert not got["filterShown"] and not _complaints(events), got


def _long_run(n: int):
    import afp_dsl as afp
    spec = """
agent desk { graph = g max_iterations = 5000 }
tool ping { description = "p" impl = returns("ok") }
tool pong { description = "q" impl = returns("ok") }
skill a { description = "a" tools = [ping] }
skill b { description = "b" tools = [pong] }
graph g { entry a  route a -> b on ping  route b -> a on pong }
"""
    program = afp.load(spec)
    script = [[("ping" if i % 2 == 0 else "pong", {})] for i in range(n)] + ["done"]
    return program, program.agent(provider=afp.providers.mock(script)).run("go")


def test_a_10000_event_run_gets_a_report_that_opens(tmp_path):
    """1,430 iterations, 10,016 events (≈ 7.8 MB): the report is written and opens in the
    browser with every event in its table and no console error (the why tree of so long a
    chain may be a note instead: `report_html._why`)."""
    exe = _chromium()
    program, r = _long_run(1430)
    assert r.outcome == "answered" and len(r.trace) >= 10_000
    mermaid, svg = overlay_drawings(program, list(r.trace))
    path = tmp_path / "long.html"
    path.write_text(report_html.report(r.trace, run={"run_id": r.run_id}, program=program,
                                       mermaid=mermaid, svg=svg), encoding="utf-8")
    got, events = _open(exe, path, PAGE_PROBE)
    assert got["rows"] == len(r.trace) and got["iterations"] == 1431, got
    assert got["why"] and not _complaints(events), (got, _complaints(events))


def test_the_report_is_written_when_the_why_tree_is_too_deep(monkeypatch):
    """`explain` runs out of stack on a long enough chain of causes (about 120 iterations of a
    route loop, at Python's default recursion limit): the report says so in its why section
    instead of failing the whole export."""
    def too_deep(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(report_html, "explain", too_deep)
    _, r = _long_run(3)
    text = report_html.report(r.trace, run={"run_id": r.run_id})
    assert "too deep to build" in text and 'id="events"' in text
    assert text.count('<tr data-kind=') == len(r.trace)


def test_a_paused_run_says_what_it_waits_for():
    """Without a store row (the API's own trace) a run that ends on `run.paused` is `paused`,
    and the answer box names the check-in, its tool and its question rather than staying
    blank."""
    import afp_dsl as afp
    spec = ('agent g { tools = [pay] }\ntool pay { description = "Pay." '
            'input { amount: number } check_in = args.amount > 100 impl = returns("paid") }')
    r = afp.load(spec).agent(provider=afp.providers.mock([[("pay", {"amount": 500})], "ok"])
                             ).run("pay 500")
    assert r.outcome == "paused"
    text = report_html.report(r.trace, run={"run_id": r.run_id})
    header = text.split("<header>", 1)[1].split("</header>", 1)[0]
    assert 'data-fact="outcome"><b>outcome</b> paused' in header
    answer = header.split('id="answer"', 1)[1].split("</div>", 1)[0]
    assert "outcome-paused" in answer and "paused: check-in" in answer and "`pay`" in answer


def test_a_trace_read_back_with_a_non_int_iteration_still_reports():
    """`Trace.from_json` takes a foreign document as it is: an event whose iteration is null or
    text made the report's sort by iteration raise; it is a group of its own, after the others."""
    from afp_dsl.trace import Trace
    _, r = canary_run()
    doc = json.loads(r.trace.to_json())
    doc["events"][1]["iteration"] = None
    doc["events"][2]["iteration"] = "2"
    page = report_html.report(Trace.from_json(json.dumps(doc)))
    assert page.startswith("<!DOCTYPE html>") and "Iteration None" in page
