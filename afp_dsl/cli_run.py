"""`afpc run` (tooling.md §2); `afpc resume` is `cli_resume`, `afpc test` is `cli_test`.

Role:       a thin click command over `runner`; the only printing in the run path (`cli_resume`
            shares its loading, provider, store and printing helpers).
Emits:      exit codes: run/resume 0 answered (or max_iterations), 1 error or denied, 3 paused,
            2 usage or internal error.
Invariants: prints only redacted text (answers and check-ins come from the redacted trace);
            no traceback for bad input (AFPC_DEBUG=1 shows it for internal errors); text options
            that are not UTF-8 are refused before anything runs or is stored.
"""
from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from .cli_io import CliError, echo, guarded, store_text, terminal_safe, utf8_text
from .trace import json_text

EXIT = {"answered": 0, "max_iterations": 0, "paused": 3, "denied": 1, "error": 1}


_Bad = CliError  # bad input: one line on stderr, exit 1 (or 2 for usage)


def _load(file: str, doing: str = "running") -> Any:
    """The checked `Program` of the spec `file`; `CliError` (its diagnostics drawn on standard
    error) when it has errors: fix them before `doing` it."""
    from .api import Program
    from .render import render
    from .loader import not_a_file
    from .cli_io import refuse_stdin
    refuse_stdin(file)
    reason = not_a_file(Path(file))
    if reason == "it is a folder":
        raise _Bad(f"cannot run `{file}`: it is a folder; pass one spec file in it "
                   f"(`{Path(file) / 'NAME.afp'}`)", 2)
    if reason is not None and reason != "no such file":  # (that one: AFP109, drawn below)
        raise _Bad(f"cannot run `{file}`: {reason}", 2)
    from .cli import analyse
    from .diagnostics import has_errors
    program, diags = analyse(file)
    if program is None or has_errors(diags):
        # the sources the loader read (a file too large or not UTF-8 was never read: its
        # diagnostic is drawn without source lines, as `afpc check` draws it)
        sources = {m.key: m.source for m in program.modules} if program is not None else {}
        click.echo(render(diags, sources, "text"), err=True)
        if file.endswith(".json"):
            raise _Bad(f"{file} is not a spec: `afpc run` takes the `.afp` file; an IR written by "
                       f"`afpc compile` is run from Python with `afp_dsl.load_ir(...)`")
        raise _Bad(f"{file} has errors; fix them before {doing}")
    return Program(program, diags)


def spec_digest(program: Any) -> str:
    """A SHA-256 of the sources of the spec and every module it imports, kept with a paused
    run's checkpoint: `afpc resume` says when the spec changed meanwhile."""
    import hashlib
    h = hashlib.sha256()
    for m in sorted(program.ir.modules, key=lambda m: m.key):
        for part in (m.key, m.source):
            h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


def _model_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--model`: UTF-8 and not blank (a blank name would reach the provider as no model)."""
    value = utf8_text(ctx, param, value)
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; pass a model name, or leave the option out to use the "
                                 "spec's `model` (else the provider's default)", ctx, param)
    return value


def _provider_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--provider`/`--fallback` NAME[:MODEL]: UTF-8, and a `:` must have a name before it and
    a model after it."""
    value = utf8_text(ctx, param, value)
    if value is not None and not value.strip():  # (most likely an unset shell variable)
        raise click.BadParameter("is empty; name a provider (mock, openai, anthropic, ollama), "
                                 "or leave the option out", ctx, param)
    if value is not None and ":" in value and not value.split(":", 1)[0].strip():
        raise click.BadParameter(f"`{value}` names no provider before the `:`; write NAME:MODEL, "
                                 "e.g. `ollama:llama3.2` (NAME: mock, openai, anthropic, ollama)",
                                 ctx, param)
    if value is not None and ":" in value and not value.split(":", 1)[1].strip():
        name = value.split(":", 1)[0]
        raise click.BadParameter(f"`{value}` names no model after the `:`; write `{name}` for "
                                 f"the default model or `{name}:MODEL`", ctx, param)
    return value


def _store(url: str | None, *, create: bool = True) -> Any:
    """The run store; `resume` (create=False) only opens one that exists: a mistyped path is
    an error naming it, never a new empty store."""
    from .store import StoreError, from_url
    try:  # the CLI, not the core, reads the wall clock: it stamps when runs start and change
        store = from_url(url, create=create,
                         stamp=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    except StoreError as exc:
        raise _Bad(str(exc)) from None
    if getattr(store, "path", None) == ":memory:":  # (`memory:`, `sqlite://`, `:memory:`)
        shown = url or f"AFP_STORE={os.environ.get('AFP_STORE')}"
        raise _Bad(f"`{shown}` is a private in-process store: the run would be gone when afpc "
                   f"exits, so it could not be resumed, explained or listed; name a file, e.g. "
                   f"--store runs.db")
    return store


def _script(program: Any, name: str | None) -> tuple[list | None, Any, str | None]:
    """The replies and stubs of the test `name`, and the agent it names (`agent = x`), if any."""
    if name is None:
        return None, None, None
    from . import ir
    from .testing import _script as script_of
    for d in program.ir.root_module.decls:
        if isinstance(d, ir.Test) and d.name == name:
            users = sum(isinstance(st, ir.UserSays) for st in d.statements)
            if users > 1:  # (its later turns' replies would go unused, silently)
                click.echo(f"afpc: note: test `{name}` has {users} `user` lines; --script runs "
                           f"one message (-m) on its model lines, in order; `afpc test` runs "
                           f"the whole conversation", err=True)
            return (*script_of(d), str(d.agent) if d.agent is not None else None)
    from .suggest import closest
    tests = [d.name for d in program.ir.root_module.decls if isinstance(d, ir.Test)]
    if not name.strip():  # (most likely an unset shell variable)
        raise _Bad(f"the test name given to --script is blank; name one of the spec's tests "
                   f"({', '.join(tests) or 'it has none'}), or leave --script out")
    close = closest(name, tests)
    raise _Bad(f"no test `{name}` in the spec; {f'did you mean `{close}`? ' if close else ''}"
               f"tests: {', '.join(tests) or 'none'}")


def _provider(name: str, model: str | None, replies: list | None, skip: int = 0, *, retries: int = 0,
              fallback: str | None = None, stream: bool = False) -> Any:
    from . import providers
    try:
        provider = providers.by_name(name, model=model, script=replies, retries=retries,
                                     fallback=fallback, stream=stream)
    except providers.ProviderError as exc:
        raise _Bad(str(exc), 2) from None
    except (TypeError, ValueError) as exc:  # an option or environment value the adapter refused
        raise _Bad(f"{name}: {exc}", 2) from None
    _skip_script(provider, skip)
    return provider


def _skip_script(provider: Any, skip: int) -> None:
    """Continue a mock script where the paused run left it, through any resilience wrappers."""
    seen = set()
    while provider is not None and id(provider) not in seen:
        seen.add(id(provider))
        if hasattr(provider, "calls"):
            provider.calls = skip
            return
        provider = getattr(provider, "inner", None) or getattr(provider, "primary", None)


def _scripted_agent(given: str | None, tested: str | None, script: str | None) -> str | None:
    """The agent to run: `--agent`, else the one the `--script` test names (its replies were
    written for it); a note when `--agent` names another."""
    if given is None:
        return tested
    if tested is not None and given != tested:
        click.echo(f"afpc: note: test `{script}` is written for agent `{tested}`; running "
                   f"`{given}` (--agent) on its replies", err=True)
    return given


def _pick_agent(program: Any, name: str | None) -> None:
    """`CliError` when `--agent` (or its absence, in a spec with several agents) picks none."""
    from .launch_checks import no_agent
    from .plan import find_agent
    if find_agent(program.analysis, name) is None:
        raise _Bad(no_agent(program.ir, name))


def _agent(program: Any, name: str | None, provider: Any, store: Any, model: str | None,
           stubs: Any, spec: str, launch: dict) -> Any:
    from .effects import Effects
    from .runner import Agent, AgentNotFound
    try:
        agent = Agent(program, name, provider=provider, store=store, model=model, stubs=stubs,
                      effects=Effects.live(), spec=spec)
    except AgentNotFound as exc:
        raise _Bad(str(exc)) from None
    agent.launch = launch
    return agent


def asked_by(checkin: Any, program: Any) -> tuple[str, str | None]:
    """Who asked for a check-in, as text (`policy `guard``, `tool `pay`'s check_in`), and where
    (`FILE:LINE` of the rule or the `check_in`, when the program holds that file)."""
    who = (f"policy `{checkin.policy}`" if checkin.policy else f"tool `{checkin.tool}`'s check_in")
    if checkin.source == "inner":  # (a pause inside an agent-backed tool's run: it asked there)
        who += " (in an agent-backed tool's inner run)"
    span = checkin.span
    module = next((m for m in program.ir.modules if span is not None and m.key == span.file),
                  None) if program is not None else None
    if module is None or not module.source:
        return who, None
    from .source import SourceFile
    return who, f"{span.file}:{SourceFile.of(span.file, module.source).line_col(span.start)[0]}"


def _report(result: Any, as_json: bool, program: Any = None) -> None:
    finished = [e for e in result.trace if e.kind == "run.finished"]
    answer = finished[-1].payload.get("answer") if finished else None
    error = finished[-1].payload.get("error") if finished else None
    out: dict[str, Any] = {"run_id": result.run_id, "outcome": result.outcome, "answer": answer}
    if error:
        out["error"] = error
    asked = None
    if result.checkin is not None:
        c = result.checkin
        who, at = asked_by(c, program)
        out["checkin"] = {"id": c.id, "tool": c.tool, "args": c.args, "question": c.question,
                          "source": c.source, "policy": c.policy, "at": at}
        asked = f"{who} at {at}" if at else who
    try:
        _print(out, result, as_json, asked)
    except OSError:  # standard output failed (`guarded` reports it): still say what was recorded
        click.echo(f"run {result.run_id}: {result.outcome} (recorded in the store)", err=True)
        raise
    if not as_json:
        click.echo(f"run {result.run_id}: {result.outcome}", err=True)
    sys.exit(EXIT.get(result.outcome, 1))


def _print(out: dict[str, Any], result: Any, as_json: bool, asked: str | None) -> None:
    if as_json:
        echo(json_text(out, sort_keys=True, ensure_ascii=False))
    elif result.outcome == "paused":
        c = out["checkin"]
        echo(f"paused: {c['question']}", human=True)
        echo(f"  tool `{c['tool']}` with {json.dumps(c['args'], ensure_ascii=False)}", human=True)
        echo(f"  asked by {asked}", human=True)
        click.echo(f"  resume with: afpc resume {result.run_id} --approve | --decline")
    elif out.get("error"):
        click.echo(terminal_safe(f"error: {out['error']}"), err=True)
        if result.checkpoint is not None:  # (a failure after a completed iteration, §10)
            click.echo(f"  the run kept its state: retry it with afpc resume {result.run_id}",
                       err=True)
    else:
        echo(out["answer"] if out["answer"] is not None else "", human=True)


def _message(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """`-m`: UTF-8 text that says something. A blank message is refused before anything runs:
    it is almost always an unset shell variable (`-m "$MSG"`), and it would still cost a model
    call (some providers refuse empty content outright)."""
    value = utf8_text(ctx, param, value)
    if isinstance(value, str) and not value.strip():
        raise click.BadParameter("is empty: pass the user's message, e.g. "
                                 "-m \"Where is my order?\"", ctx, param)
    return value


@click.command("run")
@click.argument("file")
@click.option("--agent", "agent_name", callback=utf8_text,
              help="The agent to run (default: the only one).")
@click.option("-m", "--message", required=True, callback=_message,
              help="The user's message.")
@click.option("--provider", default="mock", show_default=True, metavar="NAME[:MODEL]",
              callback=_provider_name,
              help="Model provider: mock, ollama, openai, anthropic (NAME:MODEL picks a model).")
@click.option("--model", callback=_model_name, help="Model name (default: the spec's `model`).")
@click.option("--retries", type=click.IntRange(0, 10), default=0, show_default=True,
              help="Retry rate limits, 5xx, timeouts and unreachable servers up to N more times.")
@click.option("--fallback", metavar="NAME[:MODEL]", callback=_provider_name,
              help="Provider to ask when the main one fails, e.g. ollama:llama3.2.")
@click.option("--stream", is_flag=True, help="Stream replies (chunk counts reach the trace).")
@click.option("--script", "script", metavar="TEST", callback=utf8_text,
              help="Use a test block's replies and stubs.")
@click.option("--store", "store_url", callback=store_text,
              help="Run store (default .afp/runs.db or $AFP_STORE).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@guarded
def run_(file: str, agent_name: str | None, message: str, provider: str, model: str | None,
         retries: int, fallback: str | None, stream: bool, script: str | None, store_url: str | None,
         as_json: bool) -> None:
    """Run an agent on one message; prints the answer (or the pause) and the run id."""
    program = _load(file)
    replies, stubs, tested = _script(program, script)
    agent_name = _scripted_agent(agent_name, tested, script)
    _pick_agent(program, agent_name)  # (before the store is opened: a wrong name makes none)
    launch = {"provider": provider, "model": model, "script": script, "agent": agent_name,
              "retries": retries, "fallback": fallback, "stream": stream,
              "spec_digest": spec_digest(program)}
    agent = _agent(program, agent_name, _provider(provider, model, replies, retries=retries,
                                                  fallback=fallback, stream=stream),
                   _store(store_url), model, stubs, str(Path(file).resolve()), launch)
    _report(agent.run(message), as_json, program)
