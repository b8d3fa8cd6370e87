"""Resuming a run: the checkpoint to resume from, the decision it takes, and the claim on it.

Role:       `ResumePrep`, the half of `runner.Agent` that prepares a resume: picks the store's
            current checkpoint (or a given one the store never saw), checks the decision against
            the check-in the run waits on and decides it once in the store, and claims an `error`
            run's checkpoint so that two processes never both resume it. Split from `runner`.
Emits:      nothing; raises `ResumeDecisionError` for any resume that is not exactly one decision
            for the call shown, or whose run another process resumed meanwhile.
Invariants: nothing runs before every check has passed; a check-in is decided once
            (`decide_checkin`, compare-and-set) and an `error` run resumed once
            (`delete_checkpoint` answers True to one caller).
Contract:   the class using it provides `store`, `plan`, `session`, `_redactor()` and `_ctx()`.
"""
from __future__ import annotations

import weakref
from typing import Any

from .frozen import thaw
from .known_secrets import relearn
from .redaction import Redactor
from .results import Checkpoint, Decision, ResumeDecisionError, run_of
from .resume_count import calls_made, inner_events
from .runtime import RunCtx
from .state import RunState, check_checkpoint
from .store import Store, encode
from .toolcall import call_fingerprint
from .trace import Trace


# The `Checkpoint` handles a resume has used, in this process. A store refuses a stale handle
# of a run it holds (`_current_checkpoint`); this also covers a handle taken to an agent with
# another store (a fresh memory store per request, say), which has never heard of the run
# (semantics §10: a decision applies once). By identity (two handles of one run compare
# equal), and weak: a handle dropped by the host is forgotten.
_SPENT: dict[int, weakref.ref] = {}


def _spend(handle: Checkpoint) -> None:
    key = id(handle)
    _SPENT[key] = weakref.ref(handle, lambda _, key=key: _SPENT.pop(key, None))


def _spent(handle: Checkpoint) -> bool:
    ref = _SPENT.get(id(handle))
    return ref is not None and ref() is handle


def _unspent(run_id: str, given: dict, handle: Any) -> dict:
    if isinstance(handle, Checkpoint) and _spent(handle):
        raise ResumeDecisionError(
            f"this checkpoint of run `{run_id}` was resumed already (a decision applies once, "
            f"whichever agent or store it is taken to); resume the run by its id in the store "
            f"that holds it now")
    return given


def _seq_of(data: Any) -> Any:
    """Where a checkpoint was taken: the number of events its run had recorded."""
    state = data.get("state") if isinstance(data, dict) else None
    return state.get("seq") if isinstance(state, dict) else None


NOT_A_CALL = object()


def _pending_of(data: Any) -> Any:
    """The calls a checkpoint waits on and its check-in (the arguments a resume goes on with,
    the link it continues after), as the store writes them (`store.encode`): what a resume
    runs. (As text: a NaN a policy's ask paused on is equal to itself there.)"""
    state = data.get("state") if isinstance(data, dict) else None
    pending = state.get("pending") if isinstance(state, dict) else None
    if pending is not None and not isinstance(pending, dict):
        return NOT_A_CALL  # (restoring the state names the damage, as a damaged checkpoint)
    try:
        return encode(pending)
    except (TypeError, ValueError, RecursionError):  # (damaged: never equal to the store's)
        return object()


def _why_no_checkpoint(store: Store, run_id: str) -> str:
    """What the store says about a run that cannot be resumed."""
    try:
        row = store.run(run_id)
    except Exception:  # noqa: BLE001 - only the wording depends on it (e.g. an evicted run)
        row = None
    status = row.get("status") if isinstance(row, dict) else None
    outer = (row.get("meta") or {}).get("outer") if isinstance(row, dict) \
        and isinstance(row.get("meta"), dict) else None
    if isinstance(outer, str) and outer:
        return (f"it is an inner run (an agent-backed tool's) of run `{outer}`, which holds its "
                f"state: resume `{outer}`")
    if status == "running":
        return ("it is still running (or its process ended without finishing it); only a paused "
                "run, or one ended by a provider or host failure, can be resumed")
    if status is None:
        return "this store holds no such run"
    if status == "interrupted":
        why = (row.get("meta") or {}).get("error") or "the run was interrupted"
        return f"{why}, and an interrupted run keeps no state to go on from: run the message again"
    if row.get("outcome") == "error":  # (a failure before any iteration completed keeps none)
        return ("it ended with an error before any iteration completed, so there is no state to "
                "go back to (or another process has just resumed it): run the message again")
    return "it finished, or it was already resumed"


class ResumePrep:
    """Preparing a resume (see the module docstring)."""

    def _current_checkpoint(self, run_id: str, given: dict | None, handle: Any = None) -> dict | None:
        """The checkpoint to resume from: the store's, or `given` (a `Checkpoint`'s data) when it
        is the store's latest. A checkpoint object kept from before the run went on (it finished,
        or was resumed and paused or failed again) is refused: resuming it would run its
        iterations twice under the same event ids. One the store has never heard of (carried to
        another store) is taken as it is, once: a handle resumed already is refused."""
        stored = self.store.checkpoint(run_id)
        if given is None:
            return stored
        check_checkpoint(run_id, given)  # (a damaged one is named as such, not as out of date)
        if stored is None:
            if self.store.run(run_id) is None:
                return _unspent(run_id, given, handle)
            raise ResumeDecisionError(f"run `{run_id}` has no checkpoint to resume: "
                                      f"{_why_no_checkpoint(self.store, run_id)}")
        now, then = _seq_of(stored), _seq_of(given)
        if type(now) is int and type(then) is int and now != then:  # (else: damaged, see below)
            raise ResumeDecisionError(
                f"this checkpoint of run `{run_id}` is out of date: the run went on after it was "
                f"taken; resume with the run id (`resume(\"{run_id}\")`) to continue from where "
                f"it is now")
        mine = _pending_of(given)
        if mine is not NOT_A_CALL and mine != _pending_of(stored):  # (§10: exactly the call shown)
            raise ResumeDecisionError(
                f"the checkpoint's call changed since it was taken: the call run `{run_id}` "
                f"waits on (its arguments, or what its check-in goes on with) is not the one "
                f"its store holds; nothing was run")
        return _unspent(run_id, given, handle)  # (resumed meanwhile through another store?)

    def _prepare_resume(self, checkpoint: Any,
                        decision: Any) -> tuple[RunCtx, dict, dict | None, int]:
        run_id, data = run_of(checkpoint)
        data = self._current_checkpoint(run_id, data, checkpoint)
        if data is None:
            raise ResumeDecisionError(f"run `{run_id}` has no checkpoint to resume: "
                                      f"{_why_no_checkpoint(self.store, run_id)}")
        check_checkpoint(run_id, data)
        if data.get("agent") != self.plan.name:
            raise ResumeDecisionError(f"run `{run_id}` belongs to agent `{data.get('agent')}`, "
                                      f"not `{self.plan.name}`")
        state = RunState.from_checkpoint(data["state"])
        red = self._redactor()
        relearn(red, state.history)
        red.restore_memory(data.get("remembered"))  # (inner runs' secrets are not in the history)
        pending = state.pending
        if pending is not None and pending.checkin is not None:
            resume = self._check_decision(run_id, pending, decision, red)
        elif decision is not None:
            raise ResumeDecisionError(f"run `{run_id}` is not waiting on a check-in; resume it "
                                      f"without a decision")
        else:
            resume = {"decision": None}
        held = self.store.events(run_id)
        events = held or (checkpoint.events if isinstance(checkpoint, Checkpoint) else ())
        trace = Trace(run_id, events)  # (the handle's events: a store that never saw the run)
        # a resumed run's model calls are numbered after the ones it (and its inner runs)
        # already made, whichever agent made them: a mock's tool-call ids are built from that
        # number, and must stay unique within the run
        made = calls_made(list(trace) + inner_events(pending.checkin if pending else None))
        self.session.llm_calls = max(self.session.llm_calls, made)
        ctx = self._ctx(state, trace, red)
        claimed = self._claim(run_id, data) if resume["decision"] is None else None
        if isinstance(checkpoint, Checkpoint):
            _spend(checkpoint)  # (decided or claimed: this handle has been used)
        return ctx, resume, claimed, len(held)

    def _claim(self, run_id: str, data: dict) -> dict:
        """An `error` run is resumed once: the process that deletes its checkpoint goes on (a
        decision is claimed by `decide_checkin`); the checkpoint it claimed (`data`) is put back
        if the run is interrupted. A store whose `delete_checkpoint` answers nothing (an older
        host store) is taken at its word, and so is a checkpoint of a run this store never saw."""
        if self.store.delete_checkpoint(run_id) is False and self.store.run(run_id) is not None:
            raise ResumeDecisionError(f"run `{run_id}` was resumed by another process meanwhile; "
                                      f"a run is resumed once (see `afpc trace show {run_id}`)")
        return data

    def _check_decision(self, run_id: str, pending, decision: Any, red: Redactor) -> dict:
        checkin = pending.checkin
        if not isinstance(decision, Decision):
            raise ResumeDecisionError(
                f"resume needs a decision, `approve(checkin)` or `decline(checkin)`, for check-in "
                f"`{checkin['id']}`; got {type(decision).__name__}")
        malformed = _malformed(decision)
        if malformed is not None:  # (`Decision(id, "no")` must not read as an approval)
            raise ResumeDecisionError(f"the decision for check-in `{checkin['id']}` is not one "
                                      f"`approve`/`decline` makes: {malformed}; nothing was run")
        if decision.checkin != checkin["id"]:
            raise ResumeDecisionError(
                f"the decision answers check-in `{decision.checkin}`, but run `{run_id}` waits on "
                f"`{checkin['id']}`")
        call = pending.calls[pending.index]
        fp = call_fingerprint(call.name, call.id, thaw(call.arguments))
        row = self.store.checkin(checkin["id"])
        if row is None and self.store.run(run_id) is None:
            # a checkpoint carried to a store that never saw its run is taken as it is (§10):
            # its check-in is opened here, then decided once like any other
            self.store.open_checkin(checkin["id"], run_id, checkin["fp"])
            row = self.store.checkin(checkin["id"])
        if row is None:
            raise ResumeDecisionError(f"check-in `{checkin['id']}` is not known to this store")
        if row["state"] != "pending":
            raise ResumeDecisionError(f"check-in `{checkin['id']}` was already decided; a "
                                      f"decision applies once")
        if fp != checkin["fp"] or fp != row["fp"]:
            raise ResumeDecisionError(f"the checkpoint's call changed since check-in "
                                      f"`{checkin['id']}` was asked; nothing was run")
        record = red.scrub({"approved": decision.approved, "by": decision.by,
                            "note": decision.note}, at="checkin.decided")  # (the store's row)
        if not self.store.decide_checkin(checkin["id"], fp, record):
            raise ResumeDecisionError(f"check-in `{checkin['id']}` was already decided; a "
                                      f"decision applies once")
        return {"decision": "approve" if decision.approved else "decline", "by": decision.by,
                "note": decision.note}


def _malformed(decision: Decision) -> str | None:
    """What is wrong with a `Decision` built by hand (its `checkin` must be the id, `approved` a
    bool, `by` and `note` text or None), or None."""
    if not isinstance(decision.checkin, str):
        return (f"`checkin` is {type(decision.checkin).__name__}, not the check-in's id (make "
                f"the decision with `approve(checkin)` or `decline(checkin)`)")
    if type(decision.approved) is not bool:
        return f"`approved` is {type(decision.approved).__name__}, not True or False"
    for key in ("by", "note"):
        value = getattr(decision, key)
        if value is not None and not isinstance(value, str):
            return f"`{key}` is {type(value).__name__}, not text or None"
    return None
