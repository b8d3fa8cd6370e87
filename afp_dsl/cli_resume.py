"""`afpc resume` (tooling.md §2): answer a paused run's check-in and continue it.

Role:       a thin click command over `runner.Agent.resume`, rebuilding the agent the way the
            `afpc run` that paused it did (spec, provider, model, script, kept with the
            checkpoint); split from `cli_run`, whose loading, provider and printing it shares.
Emits:      exit codes as `run`: 0 answered, 1 error or denied (and a run that cannot be
            resumed, with the reason), 3 paused again, 2 usage or internal error; a note on
            standard error when the spec changed since the run paused.
Invariants: nothing is decided or run before every check has passed (the run, its checkpoint,
            the spec at its recorded path, the decision flags): a refused resume leaves the run
            paused; prints only redacted text.
"""
from __future__ import annotations

from typing import Any

import click

from .cli_io import guarded, run_id_text, store_text, utf8_text
from .cli_run import (_Bad, _agent, _load, _provider, _report, _script, _store, CliError,
                      spec_digest)
from .resume_count import calls_made, executions, inner_events


@click.command("resume")
@click.argument("run_id", callback=run_id_text)
@click.option("--approve", "approve_flag", is_flag=True, help="Approve the pending check-in.")
@click.option("--decline", "decline_flag", is_flag=True, help="Decline it.")
@click.option("--by", callback=utf8_text, help="Who decides.")
@click.option("--note", callback=utf8_text,
              help="A note kept with the decision; with --decline the model reads it too.")
@click.option("--store", "store_url", callback=store_text,
              help="Run store (default .afp/runs.db or $AFP_STORE).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@guarded
def resume_(run_id: str, approve_flag: bool, decline_flag: bool, by: str | None, note: str | None,
            store_url: str | None, as_json: bool) -> None:
    """Answer a paused run's check-in and continue it."""
    from .runner import ResumeDecisionError, approve, decline
    from .state import CheckpointError
    if approve_flag and decline_flag:
        raise click.UsageError("--approve and --decline are mutually exclusive; pass exactly one")
    decision = "approve" if approve_flag else "decline" if decline_flag else None
    store = _store(store_url, create=False)
    data = store.checkpoint(run_id)
    if data is None:
        raise _nothing_to_resume(store, run_id)
    _check_launch(store, run_id, data)
    launch = data.get("launch") or {}
    if not data.get("spec"):
        raise _Bad(f"run `{run_id}` was started from the Python API; resume it there with "
                   f"`agent.resume(checkpoint, approve(checkin))`")
    program = _spec_program(run_id, data["spec"], launch.get("spec_digest"))
    launch = {**launch, "spec_digest": spec_digest(program)}  # (a later pause compares to this)
    try:
        replies, stubs, _ = _script(program, launch.get("script"))
    except CliError as exc:  # (the test block the run replays is gone from the spec)
        raise _Bad(f"run `{run_id}` replays the script of test `{launch.get('script')}`, which "
                   f"the spec `{data['spec']}` no longer has ({exc}); put it back to resume the "
                   f"run (it is still paused, nothing was decided)") from None
    done = _events_so_far(store, run_id, data)  # (the run's and its inner runs')
    used = max(data["state"].get("llm_calls", 0), calls_made(done))
    if stubs is not None:
        for tool, n in executions(done).items():
            for _ in range(n):
                stubs.take(tool)
    provider = _provider(launch.get("provider", "mock"), launch.get("model"), replies, used,
                         retries=launch.get("retries") or 0, fallback=launch.get("fallback"),
                         stream=bool(launch.get("stream")))
    try:
        agent = _agent(program, data.get("agent"), provider, store, launch.get("model"), stubs,
                       data.get("spec"), launch)
    except CliError as exc:  # (the spec no longer declares the run's agent)
        raise _Bad(f"run `{run_id}` was started with agent `{data.get('agent')}`, which the spec "
                   f"`{data['spec']}` no longer declares ({exc}); put it back to resume the run "
                   f"(it is still paused, nothing was decided)") from None
    agent.session.llm_calls = used
    pending = (data["state"].get("pending") or {}).get("checkin")
    if pending is None:
        if decision is not None or by is not None or note is not None:
            given = "/".join(f for f, v in (("--approve", approve_flag), ("--decline",
                                                                          decline_flag),
                                             ("--by", by is not None), ("--note", note is not None))
                             if v)
            raise _Bad(f"run `{run_id}` is not waiting on a check-in (it ended with an error and "
                       f"is retried from its checkpoint); resume it without {given}: they "
                       f"go with a decision only")
        made = None
    else:
        if decision is None:
            raise _Bad(f"run `{run_id}` waits on check-in `{pending['id']}`: pass --approve or "
                       f"--decline", 2)
        make = approve if decision == "approve" else decline
        made = make(pending["id"], by=by, note=note)
    try:
        result = agent.resume(run_id, made)
    except (ResumeDecisionError, CheckpointError) as exc:
        raise _Bad(str(exc)) from None
    _report(result, as_json, program)


_LAUNCH = {"provider": str, "model": str, "script": str, "agent": str, "fallback": str,
           "retries": int, "stream": bool,
           "spec_digest": str}  # (None is fine for each: the default)


def _spec_program(run_id: str, spec: str, digest: str | None) -> Any:
    """The spec the run was started from, loaded from its recorded path: a spec that is not
    there any more is named as such (the run stays paused), and one that changed since the
    run paused is resumed as it is now, with a note."""
    from .loader import not_a_file
    if not_a_file(spec) == "no such file":
        raise _Bad(f"run `{run_id}` was started from the spec `{spec}`, which is not there any "
                   f"more (moved or deleted, or the run was started on another machine sharing "
                   f"the store); put it back at that path and resume again: the run is still "
                   f"paused, nothing was decided")
    program = _load(spec, doing=f"resuming run `{run_id}` (it is still paused, nothing was "
                                f"decided)")
    if digest is not None and digest != spec_digest(program):
        click.echo(f"afpc: note: the spec `{spec}` (or a module it imports) changed since run "
                   f"`{run_id}` started; it resumes with the spec as it is now (the call waiting "
                   f"on the decision is still the one shown)", err=True)
    return program


def _check_launch(store: Any, run_id: str, data: dict) -> None:
    """The checkpoint `resume` reads has the shapes `afpc run` writes; a damaged one (an edited
    or corrupted row) is named as such, exit 1, never an internal error."""
    from .store import damaged
    from .state import CheckpointError, RunState, check_checkpoint
    try:
        check_checkpoint(run_id, data)
        pending = RunState.from_checkpoint(data["state"]).pending
    except CheckpointError as exc:
        raise _Bad(str(exc)) from None
    launch = data.get("launch")
    checkin = pending.checkin if pending is not None else None
    bad = ("`state.pending.checkin`" if checkin is not None
           and not (isinstance(checkin, dict) and isinstance(checkin.get("id"), str))
           else "`launch`" if launch is not None and not isinstance(launch, dict)
           else next((f"`{k}`" for k in ("spec", "agent")
                      if not isinstance(data.get(k), (str, type(None)))), None)
           or next((f"`launch.{k}`" for k, kind in _LAUNCH.items()
                    if (launch or {}).get(k) is not None and (type(launch[k]) is not kind or (
                        kind is str and not launch[k].strip()))), None))
    if bad:
        raise damaged(getattr(store, "path", "?"), f"the checkpoint of run `{run_id}` has a "
                                                   f"malformed {bad}")


def _events_so_far(store: Any, run_id: str, data: dict) -> list:
    """The run's stored events, those of its stored inner runs, and those of the inner runs its
    pending check-in carries (an inner agent's pause)."""
    events = list(store.events(run_id))
    for row in store.runs():
        if row is not None and (row.get("meta") or {}).get("outer") == run_id:
            events += list(store.events(row["run_id"]))
    pending = (data["state"].get("pending") or {}).get("checkin")
    return events + inner_events(pending)


def _why_no_checkpoint(row: dict | None, run_id: str, ids: list[str] = (),
                       where: str = "?") -> str:
    """Why the stored run `run_id` (its summary `row`; `ids`: the runs of the store at
    `where`) cannot be resumed."""
    if row is None:
        from .suggest import closest
        close = closest(run_id, ids)
        hint = (f"did you mean `{close}`? " if close else "is it in another store? --store, else "
                "AFP_STORE, else .afp/runs.db names the store; ")
        return (f"run `{run_id}` has nothing to resume: the store `{where}` holds no such run "
                f"({hint}`afpc trace list` shows the runs it holds)")
    outer = (row.get("meta") or {}).get("outer") if isinstance(row.get("meta"), dict) else None
    if isinstance(outer, str) and outer:
        return (f"run `{run_id}` is an inner run (an agent-backed tool's) of run `{outer}`, which "
                f"holds its state: resume that one, `afpc resume {outer} --approve` (or "
                f"--decline); a check-in inside the inner run is answered there")
    if row.get("status") == "running":
        return (f"run `{run_id}` has nothing to resume: it is still `running`, so either its "
                f"process is still going or it died (killed, out of memory) before it could "
                f"pause or finish; such a run cannot be resumed: `afpc trace show {run_id}` shows "
                f"it up to its last model call, and `afpc run` starts it again")
    if row.get("outcome") == "error":  # (a failure before any iteration completed keeps none)
        meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
        error = meta.get("error") if isinstance(meta.get("error"), str) else None
        said = f"; its error was: {error.rstrip('.')}" if error else ""
        return (f"run `{run_id}` has nothing to resume: it ended with an error before any "
                f"iteration completed, so there is no state to go back to (or another process "
                f"has just resumed it){said}; fix the cause, then `afpc run` the message again")
    return (f"run `{run_id}` has nothing to resume: it ended (outcome "
            f"`{row.get('outcome')}`), or it was already resumed")


def _nothing_to_resume(store: Any, run_id: str) -> CliError:
    """The error for a run id with no checkpoint; `last` gets its own: a decision names its run."""
    if run_id != "last":
        row = store.run(run_id)
        ids = [r["run_id"] for r in store.runs() if r] if row is None else []
        return _Bad(_why_no_checkpoint(row, run_id, ids, getattr(store, "path", "?")))
    paused = [r["run_id"] for r in store.runs() if r and r.get("outcome") == "paused"]
    shown = f"; paused runs: {', '.join(paused[-5:])}" if paused else "; no run is paused"
    return _Bad("`resume` does not accept `last`: a decision must name the run it answers; pass "
                f"the run id that `afpc run` printed{shown}", 2)
