"""What a running loop works with: effect requests and their drivers, the run context.

Role:       the loop and the tool pipeline are generators that `yield` effect requests (an LLM
            call, a host call); `drive_sync` / `drive_async` perform them, so one core serves
            `run()` and `await arun()`, and inner agents nest with `yield from`.
            A host tool that declares a `_context` parameter also receives a read-only
            `ToolContext` (run id, tool, call id, `now()` through the Effects clock, `fact(name)`).
            A model call collects its provider's events into its own list (`listening`).
Invariants: the core never performs I/O itself; events are recorded through `recorder`; what an
            effect raises as an `Exception` is thrown into the core, and so is a host tool's
            or a provider's `SystemExit` (as `ToolExit`, `ProviderExit`); any other
            `BaseException` ends the drive.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections import OrderedDict, deque
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Callable, Generator

import attrs

from .frozen import plain, thaw
from .recorder import Recorder
from .redaction import Redactor
from .source import Span
from .trace import Trace


# ---------------------------------------------------------------- effect requests
@attrs.frozen
class LLMCall:
    """One model call; `events`, when a list, receives what the provider publishes during it."""

    provider: Any
    request: Any
    events: list | None = None

    def run_sync(self) -> Any:
        try:
            if self.events is None:
                return self.provider.complete(self.request)
            with listening(self.provider, self.events):
                return self.provider.complete(self.request)
        except SystemExit as exc:  # (as a tool body's: a provider may not end the host process)
            raise ProviderExit(exc.code) from None

    async def run_async(self) -> Any:
        try:
            if self.events is None:
                return await self._acomplete()
            with listening(self.provider, self.events):
                return await self._acomplete()
        except SystemExit as exc:
            raise ProviderExit(exc.code) from None

    async def _acomplete(self) -> Any:
        acomplete = getattr(self.provider, "acomplete", None)
        if not callable(acomplete):  # a duck-typed provider with `complete` only (as the
            return self.provider.complete(self.request)  # base class's default does)
        value = acomplete(self.request)  # (a plain `def acomplete` answers at once)
        return (await value) if inspect.isawaitable(value) else value


# The event list of the model call running in this thread or task (None outside calls).
_CALL_EVENTS: ContextVar[list | None] = ContextVar("afp_call_events", default=None)


@contextlib.contextmanager
def listening(provider: Any, events: list):
    """Subscribe to `provider` for one call: `events` gets what it publishes in this call's
    context (this thread or task, or a thread given a copy, as `asyncio.to_thread` does), never
    another call's on the same provider; the hook is removed when the call ends."""
    def hook(event: Any) -> None:
        if _CALL_EVENTS.get() is events:
            events.append(event)

    unsubscribe = provider.subscribe(hook)
    token = _CALL_EVENTS.set(events)
    try:
        yield
    finally:
        _CALL_EVENTS.reset(token)
        if callable(unsubscribe):
            unsubscribe()


class ProviderExit(Exception):
    """A provider called `sys.exit` (raised `SystemExit`) during a model call: it may not end
    the host process either, so the drivers deliver this `Exception` to the core, which ends
    the run as for any provider failure (AFP502, resumable)."""

    def __init__(self, code: Any):
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        code = "" if self.code is None else repr(self.code)
        return (f"the provider called sys.exit({code}): a provider cannot end the program, so "
                f"this counts as the model call failing")


class ToolExit(Exception):
    """A host tool body called `sys.exit` (raised `SystemExit`): a tool may not end the host
    process, so the drivers deliver this `Exception` to the core, which makes it the tool's
    failure. `str()` is what the model reads after the tool's name."""

    def __init__(self, code: Any):
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        code = "" if self.code is None else repr(self.code)
        return (f"called sys.exit({code}): a tool cannot end the program, so this counts as the "
                f"tool failing")


@attrs.frozen
class HostCall:
    fn: Callable[..., Any]
    args: Mapping[str, Any]

    def run_sync(self) -> Any:
        try:
            value = self.fn(**self.args)
            if inspect.isawaitable(value):
                return _await_sync(value)
            return value
        except SystemExit as exc:  # (KeyboardInterrupt and the rest go on: the run is interrupted)
            raise ToolExit(exc.code) from None

    async def run_async(self) -> Any:
        try:
            value = self.fn(**self.args)
            if inspect.isawaitable(value):
                return await value
            return value
        except SystemExit as exc:
            raise ToolExit(exc.code) from None


async def _await(value: Any) -> Any:
    return await value


def _await_sync(value: Any) -> Any:
    """What an async host tool gives under `run()`: awaited in a loop of its own; inside a running
    event loop (`run()` called from async code) there can be none, and the tool's failure says
    to `await agent.arun(...)` instead (not asyncio's own words, which name no fix)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(value))
    close = getattr(value, "close", None)
    if callable(close):
        close()  # (never awaited: no "coroutine was never awaited" warning)
    raise RuntimeError("this tool is async, and the run was started with `run()` inside a "
                       "running event loop, which cannot await it; use `await agent.arun(...)` "
                       "(or `await agent.aresume(...)`) in async code")


Core = Generator[Any, Any, Any]


def drive_sync(gen: Core, before_model: Callable[[], None] | None = None) -> Any:
    """Run a core generator to completion, performing its effect requests synchronously.
    `before_model` is called before each model call (the runner saves progress there); what it
    raises ends the drive, it is not the core's to handle."""
    value: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        value, exc = None, None
        if before_model is not None and type(req) is LLMCall:
            before_model()
        try:
            value = req.run_sync()
        except Exception as e:  # delivered into the core, which decides what it means
            exc = e


async def drive_async(gen: Core, before_model: Callable[[], None] | None = None) -> Any:
    """`drive_sync` for `await`: model and host calls are awaited."""
    value: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        value, exc = None, None
        if before_model is not None and type(req) is LLMCall:
            before_model()
        try:
            value = await req.run_async()
        except Exception as e:
            exc = e


# ---------------------------------------------------------------- test stubs
@attrs.frozen
class Stub:
    returns: Any = None
    fails: str | None = None


class Stubs:
    """Per-tool queues of scripted results (`tool T returns V` / `tool T fails "m"`)."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[Stub]] = {}

    def add(self, tool: str, stub: Stub) -> None:
        self.queues.setdefault(tool, deque()).append(stub)

    def take(self, tool: str) -> Stub | None:
        q = self.queues.get(tool)
        return q.popleft() if q else None

    def unused(self) -> list[tuple[str, Stub]]:
        return [(t, s) for t, q in self.queues.items() for s in q]


class InnerRuns:
    """Inner runs of one agent-backed tool, kept for `why`, the newest `keep` (LRU): by the
    session under their run ids (`<outer run>/<call id>`), by a `RunResult` under the outer
    call ids of its run (`of_run`)."""

    def __init__(self, keep: int):
        self.keep = keep
        self.runs: OrderedDict[str, Trace] = OrderedDict()
        self.dropped = 0

    def put(self, run_id: str, trace: Trace) -> None:
        if self.keep <= 0:
            self.dropped += 1
            return
        self.runs[run_id] = trace
        self.runs.move_to_end(run_id)
        while len(self.runs) > self.keep:
            self.runs.popitem(last=False)
            self.dropped += 1

    def get(self, key: str) -> Trace | None:
        """By inner run id, or by the outer call id (the newest inner run of that call)."""
        t = self.runs.get(key)
        if t is None and isinstance(key, str) and "/" not in key:
            t = next((x for rid, x in reversed(self.runs.items())
                      if rid.rsplit("/", 1)[-1] == key), None)
        if t is not None:
            self.runs.move_to_end(t.run_id) if t.run_id in self.runs else None
        return t

    def of_run(self, run_id: str) -> "InnerRuns":
        """A copy holding only the inner runs of outer run `run_id`, under their call ids: what
        its `RunResult` keeps (a later run's calls may reuse its call ids)."""
        out = InnerRuns(self.keep)
        out.dropped = self.dropped
        prefix = run_id + "/"
        out.runs.update((k[len(prefix):], t) for k, t in self.runs.items() if k.startswith(prefix))
        return out


# ---------------------------------------------------------------- host tool context
CONTEXT_PARAM = "_context"


@attrs.frozen
class ToolContext:
    """What a host tool declaring a `_context` parameter receives; read-only, never recorded.

    `now()` reads `Effects.wall` when set (`Effects.live()`, used by `afpc run`: an aware
    `datetime`), else the run's logical clock (an int tick, as under `afpc test`); `fact(name)` is the data of a fact in the
    agent's `context` list (a map's thawed value or the text), None when there is no such fact.
    """

    run_id: str
    agent: str
    tool: str
    call_id: str
    iteration: int
    _now: Callable[[], Any] = attrs.field(repr=False)
    _facts: Mapping[str, Any] = attrs.field(repr=False, factory=dict)

    def now(self) -> Any:
        return self._now()

    def fact(self, name: str) -> Any:
        return plain(self._facts.get(name))

    def fact_names(self) -> tuple[str, ...]:
        return tuple(self._facts)


_WANTS: dict[int, tuple[Any, bool]] = {}


def wants_context(fn: Callable[..., Any]) -> bool:
    """True when `fn` declares a parameter named `_context` (cached by identity)."""
    hit = _WANTS.get(id(fn))
    if hit is None or hit[0] is not fn:
        wants = _plain_function_wants(fn)
        if wants is None:
            try:
                wants = CONTEXT_PARAM in inspect.signature(fn).parameters
            except (TypeError, ValueError):
                wants = False
        if len(_WANTS) >= 1024:
            _WANTS.clear()
        hit = _WANTS[id(fn)] = (fn, wants)
    return hit[1]


def _plain_function_wants(fn: Any) -> bool | None:
    """`wants_context` of a plain function, read from its code; None for anything else.
    Speed: hosts often bind a fresh closure per run, so the identity cache misses; for a plain
    function `inspect.signature` only reads these same names from the code (≈ 40 µs)."""
    if type(fn) is not _FUNCTION or "__wrapped__" in fn.__dict__ or "__signature__" in fn.__dict__:
        return None
    code = fn.__code__
    return CONTEXT_PARAM in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


_FUNCTION = type(lambda: None)


def tool_context(ctx: "RunCtx", tool: str, call_id: str) -> ToolContext:
    """The context of one host call: the Effects clock from the run's current logical time."""
    effects, start = ctx.session.effects, ctx.rec.time
    if effects is not None and effects.wall is not None:
        now = effects.wall
    else:
        now = (lambda: effects.clock(start).now()) if effects is not None else (lambda: start + 1)
    facts = {c.decl.name: thaw(c.decl.data.value) for c in ctx.plan.context if c.kind == "fact"}
    return ToolContext(ctx.state.run_id, ctx.plan.name, tool, call_id, ctx.state.iteration,
                       now, facts)


# ---------------------------------------------------------------- session and run context
@attrs.define
class Session:
    """Shared by a run and the inner runs of its agent-backed tools."""

    program: Any  # ir.Program
    analysis: Any  # Analysis
    provider: Any
    host: dict[str, Callable[..., Any]]
    effects: Any
    store: Any = None
    stubs: Stubs | None = None
    model: str | None = None
    plans: dict[str, Any] = attrs.field(factory=dict)
    inner: dict[str, InnerRuns] = attrs.field(factory=dict)
    llm_calls: int = 0
    policy_host: Any = None
    inner_sink: Callable[[Any], None] | None = None  # sees every inner trace, kept or dropped
    listens: bool = attrs.field(init=False)  # the provider publishes events (`subscribe`)
    _count_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, repr=False)

    def __attrs_post_init__(self) -> None:
        self.listens = callable(getattr(self.provider, "subscribe", None))

    def next_llm_call(self) -> int:
        """The number of a new LLM call of this session, taken once: an agent serving several
        runs at once (threads, asyncio tasks) numbers each call once, and each run keeps the
        number it took (the shared count may have moved on by the time it is recorded)."""
        with self._count_lock:
            self.llm_calls += 1
            return self.llm_calls

    def inner_runs(self, tool: str, keep: int) -> InnerRuns:
        runs = self.inner.get(tool)
        if runs is None:
            runs = self.inner[tool] = InnerRuns(keep)
        return runs


@attrs.define
class RunCtx:
    session: Session
    plan: Any  # Plan
    state: Any  # RunState
    rec: Recorder
    redactor: Redactor
    model_redactor: Redactor | None
    comp: Any = None  # Composition of the current iteration
    active_order: list[str] = attrs.field(factory=list)
    parent: Any = None  # outer RunCtx for inner agents
    started_message: str | None = None  # what `run.started` records of the message, if not it

    def emit(self, kind: str, payload: Any, *, source: Span | None = None,
             caused_by: tuple[str, ...] | list[str] = (), clip: bool = False) -> str:
        return self.rec.emit(kind, payload, iteration=self.state.iteration, source=source,
                             caused_by=caused_by, clip=clip)
