"""The public run API: `Agent(...).run(message)`, `arun`, `resume`, conversations.

Role:       builds the plan, effects, redactor and store for a run, drives the interpreter core
            synchronously or asynchronously, saves trace and checkpoints, applies decisions.
Emits:      nothing itself; raises `ResumeDecisionError` for any resume that is not exactly one
            decision for the call shown, and the store's `StoreError` for a new run whose id the
            store already holds (before anything runs, and again at its first save).
Invariants: the store gets only redacted events; a store that outlives the process gets them
            as the run goes too (status `running`, before each model call); raw checkpoints are
            stored apart and deleted when the run ends; a check-in is decided once
            (compare-and-set in the store); a new run never writes into another run's id; a
            `Checkpoint` object resumes its run only while it is the store's latest.
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import attrs

from . import ir
from .analysis import Analysis
from .effects import Effects
from .interp import CoreResult, run_core
from .known_secrets import prime_redactor, relearn
from .launch_checks import (check_agent_args, check_conversation, check_message, check_model,
                            check_run_id, no_agent)
from .plan import Plan, find_agent, plan_of, record_names
from .providers.mock import mock
from .redaction import Redactor
from .results import (AgentNotFound, CheckIn, Checkpoint, Conversation, Decision,  # noqa: F401
                      ResumeDecisionError, RunResult, approve, decline)
from .recorder import Recorder, run_clock
from .runner_resume import ResumePrep
from .runtime import RunCtx, Session, Stubs, drive_async, drive_sync
from .source import Span
from .state import RunState
from .store import Store, check_new_run, memory, save
from .toolcall_execute import resolve_python
from .trace import Trace

if TYPE_CHECKING:
    from .api import Program
    from .providers.base import Provider, SupportsComplete


@attrs.define
class _Saves:
    """How much of one run segment the store holds: `n` events; `new` until the first save of
    a fresh run (never for a resume), which must not land on an id the store already holds."""

    new: bool
    n: int = 0


def _unwrap(program: Any) -> tuple[ir.Program, Analysis]:
    if isinstance(program, ir.Program):
        return program, Analysis(program)
    return program.ir, program.analysis


def _span(value: Any) -> Span | None:
    """A check-in's `[file, start, end]` as a `Span` (None when it has none)."""
    return Span(*value) if isinstance(value, (list, tuple)) and len(value) == 3 else None


def _policy_host(impl: ir.PythonImpl) -> Callable[[dict], Any]:
    fn, problem = resolve_python(impl.target)
    if fn is None:
        raise RuntimeError(problem)
    return fn


class Agent(ResumePrep):
    """One agent of a loaded program, ready to run (tooling.md §6)."""

    def __init__(self, program: Program | ir.Program, name: str | None = None, *,
                 provider: Provider | SupportsComplete | None = None,
                 tools: Mapping[str, Callable[..., Any]] | None = None,
                 store: Store | None = None,
                 effects: Effects | None = None,
                 model: str | None = None, stubs: Stubs | None = None,
                 spec: str | None = None):
        prog, analysis = _unwrap(program)
        self._program = program  # what a result names as the program that ran (`afp.Program`)
        check_model(model)
        if isinstance(provider, str):  # a name, as `--provider NAME[:MODEL]` gives one
            from .providers.registry import make_provider
            provider = make_provider(provider, model=model)
        check_agent_args(prog, provider, tools, store, effects, stubs, spec)
        found = find_agent(analysis, name)
        if found is None:
            raise AgentNotFound(no_agent(prog, name))
        self.effects = effects or Effects.live()
        self.plan: Plan = plan_of(analysis, *found)
        self.store = store if store is not None else memory()
        self.spec = spec
        self.launch: dict | None = None  # how the CLI built this agent, so `afpc resume` can too
        self.session = Session(prog, analysis, provider or self.effects.provider or mock(),
                               {**self.effects.tools, **dict(tools or {})}, self.effects,
                               self.store, stubs, model, policy_host=_policy_host)
        self.session.plans[self.plan.name] = self.plan
        self._conversations = 0
        self._paused: dict[str, Conversation] = {}  # run id -> conversation of a paused run
        self._retryable: dict[str, Conversation] = {}  # ... of an `error` run with a checkpoint

    @property
    def name(self) -> str:
        """The agent's name in the spec."""
        return self.plan.name

    def __repr__(self) -> str:
        return f"<afp Agent {self.plan.name} of {self.session.program.root}>"

    # ------------------------------------------------------------ runs
    def conversation(self) -> Conversation:
        """A new conversation: runs (`.run`, `.arun`) that share history, and with `continuity =
        "conversation"` the skill cursor."""
        self._conversations += 1
        make = getattr(self.effects, "new_conversation_id", None)  # (effects shaped like one)
        cid = make() if callable(make) else f"conv-{self._conversations}"
        if type(cid) is not str or not cid:
            raise TypeError(f"`Effects(conversation_ids=...)` must make non-empty text ids, e.g. "
                            f"`counter_ids(\"conv\")`, not {type(cid).__name__}")
        return Conversation(self, cid)

    def run(self, message: str, *, conversation: Conversation | None = None) -> RunResult:
        """Answer one user message (`TypeError` for a message that is not a `str`); the result's
        `outcome` is `answered`, `paused`, `max_iterations`, `denied` or `error`."""
        ctx, saves = self._start(message, conversation), _Saves(new=True)
        with _holding(conversation), self._kept_if_interrupted(ctx, saves):
            core = drive_sync(run_core(ctx), self._progress(ctx, saves))
            return self._complete(ctx, core, conversation, saves)

    async def arun(self, message: str, *, conversation: Conversation | None = None) -> RunResult:
        """`run`, awaiting async host tools and providers."""
        ctx, saves = self._start(message, conversation), _Saves(new=True)
        with _holding(conversation), self._kept_if_interrupted(ctx, saves):
            core = await drive_async(run_core(ctx), self._progress(ctx, saves))
            return self._complete(ctx, core, conversation, saves)

    def resume(self, checkpoint: Checkpoint | str | Mapping[str, Any] | None,
               decision: Decision | None = None) -> RunResult:
        """Continue a paused run (`checkpoint`: its `Checkpoint`, run id, or its `data` kept as
        JSON) with `decision` (`approve(checkin)` or `decline(checkin)`), or an `error` run with
        no decision. Anything but one decision for the check-in the run waits on raises
        `ResumeDecisionError`, and the tool does not run. (`checkpoint` None, what
        `result.checkpoint` is when the run cannot be resumed, is typed so that
        `agent.resume(result.checkpoint, ...)` type-checks under `if result.paused:`; at run
        time it is a `TypeError`.)"""
        ctx, resume, claimed, held = self._prepare_resume(checkpoint, decision)
        conv = self._conversation_of(ctx.state.run_id)
        saves = _Saves(new=False, n=held)  # the earlier events the store holds already
        with _holding(conv), self._kept_if_interrupted(ctx, saves, claimed, spent=claimed is None):
            core = drive_sync(run_core(ctx, resume), self._progress(ctx, saves))
            return self._complete(ctx, core, conv, saves)

    async def aresume(self, checkpoint: Checkpoint | str | Mapping[str, Any] | None,
                      decision: Decision | None = None) -> RunResult:
        """`resume`, awaiting async host tools and providers."""
        ctx, resume, claimed, held = self._prepare_resume(checkpoint, decision)
        conv = self._conversation_of(ctx.state.run_id)
        saves = _Saves(new=False, n=held)
        with _holding(conv), self._kept_if_interrupted(ctx, saves, claimed, spent=claimed is None):
            core = await drive_async(run_core(ctx, resume), self._progress(ctx, saves))
            return self._complete(ctx, core, conv, saves)

    def _save(self, ctx: RunCtx, saves: _Saves, status: str, outcome: str | None,
              answer: str | None, error: str | None, events: Any) -> None:
        """Save the run segment; a fresh run's first save claims its id (`StoreError` when the
        store already holds it, and nothing is written)."""
        st = ctx.state
        meta = {"conversation": st.conversation, "error": error}
        digest = (self.launch or {}).get("spec_digest")
        if digest:  # (`afpc why` and `trace show` then say when the spec changed since)
            meta["spec_digest"] = digest
        save(self.store, saves.new, st.run_id, self.plan.name, self.spec, status, outcome, answer,
             meta, events)
        saves.new = False

    @contextlib.contextmanager
    def _kept_if_interrupted(self, ctx: RunCtx, saves: _Saves, claimed: dict | None = None,
                             *, spent: bool = False) -> Iterator[None]:
        """A run cut short by what the core does not handle (Ctrl-C, a cancelled task, a bug)
        still leaves its evidence: the redacted events so far are saved with status
        `interrupted` and outcome `error`, then the exception goes on. A resumed `error` run
        whose checkpoint this process claimed (`_claim`) gets it back: it can be resumed again.
        A run resumed with a decision (`spent`: its check-in is decided) cannot: its raw
        checkpoint is deleted, as when a run ends (semantics §9)."""
        try:
            yield
        except BaseException as exc:
            error = (f"the run was interrupted ({type(exc).__name__}) during iteration "
                     f"{ctx.state.iteration}")
            try:  # (a fresh run not saved yet still claims its id: another run's is not touched)
                self._save(ctx, saves, "interrupted", "error", None, error, ctx.rec.trace.events)
                if claimed is not None:
                    self.store.put_checkpoint(ctx.state.run_id, claimed)
                elif spent:
                    self.store.delete_checkpoint(ctx.state.run_id)
            except Exception:  # noqa: BLE001 - the interruption is what the caller must see
                pass
            raise

    def _progress(self, ctx: RunCtx, saves: _Saves) -> Callable[[], None] | None:
        """For a store that outlives the process (`durable`): a function saving the events
        recorded since its last call, status `running`, which the driver calls before each model
        call (the long wait of an iteration). A process that dies mid-run (killed, out of
        memory) so leaves its trace up to its last model call. None for an in-process store."""
        if not getattr(self.store, "durable", False):
            return None
        trace = ctx.rec.trace

        def progress() -> None:
            n = len(trace)
            if n > saves.n:
                self._save(ctx, saves, "running", None, None, None, trace.tail(n - saves.n))
                saves.n = n
        return progress

    # ------------------------------------------------------------ internals
    def _redactor(self) -> Redactor:
        red = Redactor(self.plan.redact)
        prime_redactor(red, self.plan)
        return red

    def _ctx(self, state: RunState, trace: Trace, red: Redactor) -> RunCtx:
        rec = Recorder(trace, red, state.seq, state.time, run_clock(self.effects, state.time),
                       record_names(self.plan))
        return RunCtx(self.session, self.plan, state, rec, red, red.for_model())

    def _conversation_of(self, run_id: str) -> Conversation | None:
        """The conversation a resumed run belongs to (None: none, or it has moved on), held
        (`busy`) from now on: no message of it starts until the resumed run returns."""
        with _CONVERSATIONS:
            conv = self._paused.pop(run_id, None) or self._retryable.pop(run_id, None)
            if conv is not None:
                conv.busy = True
            return conv

    def _same_agent(self, conv: Conversation) -> None:
        """A conversation goes on with an agent of the declaration it began with (another
        `Agent` of it is fine: a host may build one per request); another agent's history and
        cursor would be read as this one's."""
        other = getattr(getattr(conv.agent, "plan", None), "name", None)
        if other != self.plan.name:
            raise ValueError(f"conversation `{conv.id}` belongs to agent `{other}`, not "
                             f"`{self.plan.name}`: go on with `conversation.run(message)`, or start "
                             f"one for `{self.plan.name}` with `agent.conversation()`")

    def _open_conversation(self, conv: Conversation) -> None:
        """A conversation takes its next message only when no run of it waits on a check-in (the
        decision would be lost, and the run's history with it) and none is going (each run
        starts from the history the one before left: two at once would lose a turn); an `error`
        run it moves on from is no longer its to update when resumed. Marks it `busy`."""
        with _CONVERSATIONS:
            if conv.busy:
                raise ValueError(f"conversation `{conv.id}` is still answering its last message; "
                                 f"send the next one when that run returns (one at a time: each "
                                 f"run reads the history the one before left)")
            waiting = next((r for r, c in self._paused.items() if c is conv), None)
            if waiting is not None:
                raise ValueError(self._held(conv, waiting))
            for run_id in [r for r, c in self._retryable.items() if c is conv]:
                del self._retryable[run_id]
            conv.busy = True

    def _held(self, conv: Conversation, run_id: str) -> str:
        """Why `conv` takes no message while its run `run_id` paused: the check-in is open, or the
        run was resumed through another agent (or process) sharing the store, whose messages and
        answer this conversation never saw."""
        try:
            open_ = self.store.checkpoint(run_id) is not None
        except Exception:  # noqa: BLE001 - only the wording depends on it (e.g. an evicted run)
            open_ = True
        if open_:
            return (f"conversation `{conv.id}` has run `{run_id}` waiting on a check-in; answer it "
                    f"first with `agent.resume(result.checkpoint, approve(result.checkin))` (or "
                    f"`decline`), then send the next message")
        return (f"conversation `{conv.id}` cannot go on: its run `{run_id}` was resumed through "
                f"another agent or process sharing the store, so that run's messages and answer "
                f"are not in this conversation's history; start a new one with "
                f"`agent.conversation()`, and resume a conversation's runs with the agent that "
                f"runs it")

    def _start(self, message: str, conv: Conversation | None) -> RunCtx:
        check_message(message)
        if conv is not None:
            check_conversation(conv)
            self._same_agent(conv)
            self._open_conversation(conv)
        with _released_on_error(conv):
            return self._new_ctx(message, conv)

    def _new_ctx(self, message: str, conv: Conversation | None) -> RunCtx:
        run_id = self.effects.new_run_id()
        check_run_id(run_id)
        check_new_run(self.store, run_id)  # before anything runs (the first save checks again)
        state = RunState(run_id, self.plan.name, str(message),
                         conversation=conv.id if conv else None)
        if conv is not None:
            state.history = list(conv.history)
            if self.plan.agent.continuity == "conversation" and conv.cursor is not None:
                state.cursor, state.cursor_cause = conv.cursor, "continuity"
        red = self._redactor()
        if conv is not None:
            relearn(red, state.history)
        return self._ctx(state, Trace(run_id), red)

    def _complete(self, ctx: RunCtx, core: CoreResult, conv: Conversation | None,
                  saves: _Saves) -> RunResult:
        st, store = ctx.state, self.store
        answer = ctx.redactor.scrub_text(core.answer) if core.answer is not None else None
        status = "paused" if core.outcome == "paused" else "finished"
        self._save(ctx, saves, status, core.outcome, answer, core.error, ctx.rec.trace.events)
        checkin = checkpoint = None
        if core.checkpoint is not None:
            data = {**core.checkpoint, "spec": self.spec, "launch": self.launch}
            store.put_checkpoint(st.run_id, data)
            ci = core.checkin
            if ci is not None:
                store.open_checkin(ci["id"], st.run_id, ci["fp"])
                checkin = CheckIn(ci["id"], st.run_id, ci["tool"], ci["call_id"], ci["args"],
                                  ci["question"], ci["source"], ci.get("policy"),
                                  _span(ci.get("span")))
            checkpoint = Checkpoint(st.run_id, ci["id"] if ci else None, data,
                                    tuple(ctx.rec.trace.events))
        else:
            store.delete_checkpoint(st.run_id)
        if conv is not None and core.outcome == "paused":
            self._paused[st.run_id] = conv
        elif conv is not None:
            conv.history = st.history
            conv.cursor = st.cursor
            if st.run_id not in conv.runs:  # (a resumed `error` run is in it already)
                conv.runs.append(st.run_id)
            if core.checkpoint is not None:  # an `error` run: its resume updates the conversation
                self._retryable[st.run_id] = conv
        self._save_inner(st.run_id)
        inner = {k: v.of_run(st.run_id) for k, v in self.session.inner.items()}
        return RunResult(core.outcome, core.answer, st.run_id, ctx.rec.trace, checkin, checkpoint,
                         core.error, inner, self._program)

    def _save_inner(self, run_id: str) -> None:
        """Inner runs of agent-backed tools go to the store too, under `<run>/<call id>`."""
        prefix = run_id + "/"
        for runs in self.session.inner.values():
            for trace in runs.runs.values():
                if trace.run_id.startswith(prefix):
                    last = trace.tail(1)
                    fin = [e for e in last if e.kind == "run.finished"]
                    paused = any(e.kind == "run.paused" for e in last)  # (its outer run waits)
                    status = "paused" if paused else "finished"
                    outcome = "paused" if paused else fin[0].payload.get("outcome") if fin else None
                    agent = (trace[0].payload or {}).get("agent", "inner") if len(trace) else "inner"
                    self.store.save_run(trace.run_id, agent, self.spec, status, outcome,
                                        fin[0].payload.get("answer") if fin else None,
                                        {"outer": run_id}, trace.events)


# Conversations taken and given back by any agent (a host may build an agent per request, all
# sharing one conversation object): the check-and-mark of `busy` is one step.
_CONVERSATIONS = threading.Lock()


@contextlib.contextmanager
def _holding(conv: Conversation | None) -> Iterator[None]:
    """Give `conv` back (`busy` cleared) when the run that took it returns, or raises."""
    try:
        yield
    finally:
        if conv is not None:
            conv.busy = False


@contextlib.contextmanager
def _released_on_error(conv: Conversation | None) -> Iterator[None]:
    """Give `conv` back when the run cannot even start (a bad run id, a taken one)."""
    try:
        yield
    except BaseException:
        if conv is not None:
            conv.busy = False
        raise

