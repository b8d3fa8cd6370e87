"""`afpc test`: run `test` blocks against the scripted mock, pytest-like.

Role:       turns `ir.Test` statements into a mock script, tool stubs, runs (one per `user`,
            follow-ups in one conversation), decisions and expectations; reports failures with
            the statement's `file:line`, expected vs actual and the trace's last events.
Invariants: a test never hangs (an exhausted script is a provider error naming the call);
            unused script lines or stubs at the end fail the test; `expect called`/`trace`
            see every inner run of the latest run, whatever `keep_runs` keeps; no wall clock in results;
            failure messages show only redacted values (answers as the trace recorded them,
            expected answers redacted as the run is).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from . import ir
from .effects import Effects, counter_ids
from .evaluate import compile_regex
from .regex_budget import refusal, too_costly
from .frozen import thaw
from .providers.base import Reply, ToolCall
from .providers.mock import MockProvider
from .runtime import Stub, Stubs
from .testing_select import parse_pattern
from .trace import Event, Trace, takes_edge


@attrs.frozen
class TestResult:
    __test__ = False  # (not a pytest test class, whatever its name)
    file: str
    name: str
    passed: bool
    failures: tuple[str, ...] = ()
    error: str | None = None

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


def _script(test: ir.Test) -> tuple[list[Reply], Stubs]:
    replies: list[Reply] = []
    stubs = Stubs()
    for st in test.statements:
        n = len(replies) + 1
        if isinstance(st, ir.ModelCalls):
            calls = tuple(ToolCall(f"call-{n}-{i + 1}", c.tool.name, thaw(c.args))
                          for i, c in enumerate(st.calls))
            replies.append(Reply(tool_calls=calls, stop_reason="tool_use"))
        elif isinstance(st, ir.ModelSays):
            replies.append(Reply(text=st.text))
        elif isinstance(st, ir.ToolReturns):
            stubs.add(st.tool.name, Stub(returns=thaw(st.value)))
        elif isinstance(st, ir.ToolFails):
            stubs.add(st.tool.name, Stub(fails=st.message))
    return replies, stubs


def _stub_lines(test: ir.Test) -> dict[str, list[Any]]:
    """Each tool's `returns`/`fails` statements, in the order of its stub queue."""
    lines: dict[str, list[Any]] = {}
    for st in test.statements:
        if isinstance(st, (ir.ToolReturns, ir.ToolFails)):
            lines.setdefault(st.tool.name, []).append(st)
    return lines


class _Case:
    """One test's live state: the agent, the conversation, the latest result."""

    def __init__(self, program: Any, test: ir.Test, agent_name: str | None,
                 observe: Callable[[Any], None] | None = None):
        from .runner import Agent
        replies, self.stubs = _script(test)
        self.test = test
        self.said = [st for st in test.statements if isinstance(st, (ir.ModelCalls, ir.ModelSays))]
        self.stub_lines = _stub_lines(test)
        self.provider = MockProvider(replies)
        self.agent = Agent(program, agent_name, provider=self.provider, stubs=self.stubs,
                           effects=Effects(run_ids=counter_ids(f"{test.name}")))
        self.inner: dict[str, Trace] = {}  # every inner run, by run id (its latest trace)
        self.agent.session.inner_sink = lambda t: self.inner.__setitem__(t.run_id, t)
        self.conv = self.agent.conversation()
        self.program = program
        self.result: Any = None
        self.failures: list[str] = []
        self.observe = observe
        self.ran_out_told = False
        self.started_by: Any = None  # the `user` or decision line of the latest run
        self.shown: tuple | None = None  # the run (id, length) whose last events were shown

    def record(self, result: Any) -> None:
        self.result = result
        if self.observe is not None:
            self.observe(result)
        n = self.provider.ran_out
        if n is not None and not self.ran_out_told:  # (language §5: a failure, whatever `expect` says)
            self.ran_out_told = True
            self.failures.append(f"the script has no model reply for LLM call #{n} (in the run of "
                                 f"the {_started(self)}){_inner_ask(self, n)}; the run ended with: "
                                 f"{result.error or result.outcome}" + self.context())

    def fail(self, st: Any, what: str, expected: Any, actual: Any) -> None:
        """A failure of statement `st`, headed by what failed and its `file:line`."""
        self.failures.append(f"{what} ({_at(self, st)})\n    expected: {expected}\n"
                             f"    actual:   {actual}" + self.context())

    def context(self) -> str:
        """The latest run's last events, once per run (a later failure of it points above)."""
        if self.result is None or self.shown == (self.result.run_id, len(self.result.trace)):
            return ""
        self.shown = (self.result.run_id, len(self.result.trace))
        events = list(self.result.trace)[-8:]
        lines = "\n".join(f"      {_brief(e)}" for e in events)
        return f"\n    last events of run {self.result.run_id}:\n{lines}"


def _inner_ask(case: _Case, n: int) -> str:
    """What the model was asked at call `n` when an inner run (an agent run as a tool) made it:
    the outer run's error names only its own call, so the inner run's recorded (redacted)
    error is quoted here. Empty when the outer run made call `n` itself."""
    def made(error: Any) -> bool:  # (the head of the error, not a tool result it quotes)
        head = error.split("; the model was asked: ", 1)[0] if isinstance(error, str) else ""
        return f"provider error on LLM call #{n}:" in head

    if made(case.result.error):
        return ""
    prefix = case.result.run_id + "/"
    for run_id, trace in case.inner.items():
        fin = trace.tail(1)
        error = (fin[0].payload or {}).get("error") if fin and fin[0].kind == "run.finished" else None
        if run_id.startswith(prefix) and made(error):
            asked = error.split("; the model was asked: ", 1)[-1]
            return f", made by the inner run {run_id}; the model was asked: {asked}"
    return ""


def _started(case: _Case) -> str:
    st = case.started_by
    word = "user" if isinstance(st, ir.UserSays) else getattr(st, "decision", "?")
    return f"`{word}` line at {_at(case, st)}"


def _brief(e: Event) -> str:
    text = str(e.payload)
    return f"{e.id} {e.kind} {text if len(text) <= 110 else text[:109] + '…'}"


def run_test(program: Any, test: ir.Test, file: str = "", *,
             observe: Callable[[Any], None] | None = None) -> TestResult:
    """Run one test block; `observe` sees every `RunResult` (exports and `why` tests use it)."""
    agent = str(test.agent) if test.agent is not None else None  # (`lib.x`: that module's)
    try:
        case = _Case(program, test, agent, observe)
    except Exception as exc:  # a spec problem the checker could not see: report, don't crash
        return TestResult(file, test.name, False, (), f"cannot start the test: {exc}")
    for st in test.statements:
        _step(case, st)
    if case.result is None and not case.failures:  # (an empty test would pass checking nothing)
        case.failures.append(f"the test runs nothing ({_at(case, test)}): it has no `user` line; "
                             f"add `user \"…\"`, the model's replies (`model says \"…\"`) and "
                             f"what to expect")
    _leftovers(case)
    return TestResult(file, test.name, not case.failures, tuple(case.failures))


def _step(case: _Case, st: Any) -> None:
    if isinstance(st, ir.UserSays):
        if case.result is not None and case.result.paused:  # (the check-in would be dropped)
            case.fail(st, "a `user` message while the run waits on a check-in",
                      "`approve` or `decline` before the next `user` line",
                      f"run {case.result.run_id} paused at check-in {case.result.checkin.id}")
            return
        case.started_by = st
        case.record(case.conv.run(st.text))
    elif isinstance(st, ir.Decide):
        _decide(case, st)
    elif type(st) in _EXPECTS:
        if case.result is None:
            case.failures.append(f"`expect` before any `user` message ({_at(case, st)}): an "
                                 f"expectation looks at a run; put it after a `user` line")
            return
        _EXPECTS[type(st)](case, st)


def _at(case: _Case, st: Any) -> str:
    """`file:line` of a statement of the test."""
    from .why import Locator
    span = getattr(st, "span", None)
    return Locator(case.program)(span.file, span.start) if span is not None else "?"


def _decide(case: _Case, st: ir.Decide) -> None:
    from .runner import approve, decline
    r = case.result
    if r is None or not r.paused:
        case.fail(st, f"`{st.decision}` has no pending check-in to answer", "a paused run",
                  f"outcome {r.outcome if r else 'no run yet'}")
        return
    make = approve if st.decision == "approve" else decline
    case.started_by = st
    case.record(case.agent.resume(r.checkpoint, make(r.checkin, by=st.by, note=st.note)))


def _leftovers(case: _Case) -> None:
    left = case.provider.remaining
    if left:
        made = case.provider.calls
        first = _at(case, case.said[made])
        case.failures.append(f"{left} scripted model repl{'y was' if left == 1 else 'ies were'} "
                             f"never used, the first at {first} (the run made {made} LLM "
                             f"call{'' if made == 1 else 's'})" + case.context())
    for tool, queue in case.stubs.queues.items():  # (a queue is used from its front)
        for st in case.stub_lines[tool][len(case.stub_lines[tool]) - len(queue):]:
            case.failures.append(f"the stub for `{tool}` ({_at(case, st)}) was never used")


# ---------------------------------------------------------------- expectations
def _traces(case: _Case, deep: bool = False) -> list[Any]:
    """The latest run's trace; `deep` adds the inner runs of its agent-backed tools, nested ones
    included, all of them: `keep_runs` bounds what `why` keeps, not what a test counts."""
    out = [case.result.trace]
    if deep:
        prefix = case.result.run_id + "/"
        out += [t for run_id, t in case.inner.items() if run_id.startswith(prefix)]
    return out


def _events(case: _Case, kind: str, deep: bool = False) -> list[Event]:
    """Events of the latest run (`deep`: and of its inner runs, see `_traces`)."""
    return [e for t in _traces(case, deep) for e in t if e.kind == kind]


def _answer(case: _Case, st: ir.ExpectAnswer) -> None:
    answer = case.result.answer
    if st.matches is not None:
        rx = st.matches
        if isinstance(answer, str) and too_costly(rx.pattern, rx.flags, len(answer)):
            case.fail(st, "answer not searched", _quoted(case, str(rx)),  # (never a hang)
                      refusal(rx.pattern, rx.flags, len(answer)))
            return
        ok = isinstance(answer, str) and compile_regex(rx.pattern, rx.flags).search(answer)
        if not ok:
            case.fail(st, "answer does not match", _quoted(case, str(rx)), _show(case, answer))
    elif st.equals is not None and answer != st.equals:
        # (scrubbed, then quoted: `repr` doubles a backslash, so a secret holding one would
        # no longer be found in the quoted text)
        case.fail(st, "answer differs", repr(_quoted(case, st.equals)), _show(case, answer))


def _quoted(case: _Case, text: str) -> str:
    """An expectation as shown beside the recorded (redacted) answer: redacted as the run is."""
    from .known_secrets import test_scrubber
    return test_scrubber(case.agent, case.test)(text)


def _show(case: _Case, answer: Any) -> str:
    """The answer as recorded (redacted) in the trace, never the caller's raw answer."""
    r = case.result
    extra = f" (outcome {r.outcome}" + (f": {r.error}" if r.error else "") + ")"
    return repr(_recorded_answer(r, answer)) + extra


def _recorded_answer(result: Any, raw: Any) -> Any:
    fin = [e for e in result.trace if e.kind == "run.finished"]
    if fin:
        return (fin[-1].payload or {}).get("answer")
    return None if raw is None else "[answer not recorded]"


def _ran(payload: dict, after: set) -> bool:
    """An execution as `expect called` counts it: the tool's body or stub ran; for a built-in
    (`read_skill`, `skip_step`, which have no body), the call was accepted — a success, or a
    pick an `after` link then denied (the pick stands; `after` hears only accepted calls). A
    skip an `after` link denied did nothing (semantics §5: a denial never advances)."""
    tool = payload.get("tool")
    if tool in ("read_skill", "skip_step"):
        return payload.get("status") == "success" or (
            tool == "read_skill" and payload.get("call_id") in after)
    return bool(payload.get("executed"))


def _called(case: _Case, st: ir.ExpectCalled) -> None:
    n = 0
    for trace in _traces(case, deep=True):
        after = {e.payload.get("call_id") for e in trace
                 if e.kind == "policy.decided" and e.payload.get("moment") == "after"}
        n += sum(1 for e in trace if e.kind == "tool.returned"
                 and e.payload.get("tool") == st.tool.name and _ran(e.payload, after))
    if n != st.count:
        what = f"`{st.tool.name}` ran {n} time(s)"
        case.fail(st, what, f"{st.count} execution(s)", f"{n} execution(s)")


def _route(case: _Case, st: ir.ExpectRoute) -> None:
    moved = _events(case, "cursor.moved")
    if not any(takes_edge(e.payload, st.src.name, st.dst.name) for e in moved):
        moves = [(e.payload.get("from"), e.payload.get("to")) for e in moved
                 if e.payload.get("cause") in ("route", "model-pick") and e.payload.get("edge")]
        taken = ", ".join(f"{a} -> {b}" for a, b in moves) or "none"
        case.fail(st, f"edge `{st.src.name} -> {st.dst.name}` was not taken",
                  f"{st.src.name} -> {st.dst.name}", f"edges taken: {taken}")


def _cursor(case: _Case, st: ir.ExpectCursor) -> None:
    moves = _events(case, "cursor.moved")
    actual = moves[-1].payload.get("to") if moves else None
    if actual != st.skill.name:
        case.fail(st, "the cursor ended elsewhere", st.skill.name, actual)


def _outcome(case: _Case, st: ir.ExpectOutcome) -> None:
    r = case.result
    if r.outcome != st.outcome:
        case.fail(st, "outcome differs", st.outcome, r.outcome + (f" ({r.error})" if r.error else ""))


def _trace(case: _Case, st: ir.ExpectTrace) -> None:
    if not _events(case, st.kind, deep=True):
        kinds = sorted({e.kind for e in case.result.trace})
        case.fail(st, f"no `{st.kind}` event was recorded", st.kind, "kinds seen: " + ", ".join(kinds))


_EXPECTS = {ir.ExpectAnswer: _answer, ir.ExpectCalled: _called, ir.ExpectRoute: _route,
            ir.ExpectCursor: _cursor, ir.ExpectOutcome: _outcome, ir.ExpectTrace: _trace}


# ---------------------------------------------------------------- suites
@attrs.frozen
class FileProblem:
    file: str
    message: str


def collect(program: Any, file: str, pattern: str | None) -> list[ir.Test]:
    tests = [d for d in program.ir.root_module.decls if isinstance(d, ir.Test)]
    if pattern:
        selected = parse_pattern(pattern)
        tests = [t for t in tests if selected(f"{file}::{t.name}")]
    return tests


def run_files(files: Iterable[Path], pattern: str | None = None, *, found: list[str] | None = None,
              progress: Callable[[int, int, Path], None] | None = None,
              clock: Callable[[], float] | None = None, seconds: dict[str, float] | None = None,
              modules: list[str] | None = None) -> tuple[list[TestResult], list[FileProblem]]:
    """Run the tests of `files` that `pattern` selects; `found`, if given, receives the names
    of every test the loaded files declare (selected or not), and `modules` the key of every
    module loaded (imports included); `progress(i, n, file)` is called
    before the i-th (1-based) of the n files is loaded; with `clock` (seconds, monotonic) and
    `seconds`, each test's duration is filed in `seconds` under its id."""
    from .api import Program, analyse
    from .diagnostics import has_errors
    results: list[TestResult] = []
    problems: list[FileProblem] = []
    files = list(files)
    for i, f in enumerate(files, 1):
        if progress is not None:
            progress(i, len(files), f)
        loaded, diags = analyse(f)
        if modules is not None and loaded is not None:
            modules.extend(m.key for m in loaded.modules)
        if loaded is None or has_errors(diags):
            problems.append(FileProblem(str(f), _load_errors(loaded, diags)))
            continue
        program = Program(loaded, diags)
        if found is not None:
            found.extend(t.name for t in collect(program, str(f), None))
        for t in collect(program, str(f), pattern):
            began = clock() if clock is not None else 0.0
            results.append(run_test(program, t, str(f)))
            if clock is not None and seconds is not None:
                seconds[results[-1].id] = clock() - began
    return results, problems


def _load_errors(loaded: Any, diags: list) -> str:
    """The errors that stop a file from loading, one `file:line:col: error[AFPnnn] …` line each."""
    from .render import render
    sources = {m.key: m.source for m in loaded.modules} if loaded is not None else {}
    return render([d for d in diags if d.is_error] or diags, sources, "short").rstrip("\n")
