"""Stage 5 of the tool pipeline: running the tool, and what its run came to (`CallOutcome`).

Role:       `toolcall` hands a validated call here (split from it): a test stub, the host's
            binding, `returns(...)`, `python("module:attr")` (imported once, `resolve_python`)
            or an inner agent (`inner`); `_executed` reads the result through `envelopes`.
Emits:      AFP501 (tool-not-bound) as a fatal run error; no events (`toolcall` records them).
Invariants: whatever host code returns or raises (`sys.exit` included) becomes a result or a
            failure, never a crash; a result with no JSON form is a failure, never a repr; the
            host gets its own copy of the arguments.
"""
from __future__ import annotations

import importlib
from typing import Any

from . import ir
from .call_outcome import CallOutcome
from .envelopes import read_result
from .frozen import thaw
from .providers.base import ToolCall
from .runtime import CONTEXT_PARAM, HostCall, RunCtx, ToolExit, plain, tool_context, wants_context


def _executed(call: ToolCall, info, kind: str, value: Any) -> CallOutcome:
    """The outcome of a call that ran: its result, or a failure, or a refused oversize result."""
    if kind != "ok":
        if kind == "denied":  # an inner agent's run that its own policies refused (its answer)
            return CallOutcome("denied", value, executed=True, result=value)
        return _failure(exception_text(value))
    status, text, value, problem = read_result(value)
    if problem is not None:
        return _failure(f"`{call.name}` returned a value that cannot be read: {problem}. No data "
                        f"was returned.")
    limit = info.decl.max_result_chars
    if limit is not None and len(text) > limit:
        return CallOutcome("invalid", (
            f"Result too large: `{call.name}` returned {len(text)} characters, over its "
            f"declared {limit}-character limit. Narrow the request and call again. No data was "
            f"returned."), executed=True, result=None)
    return CallOutcome(status, text, executed=True, result=value)


def _failure(text: str) -> CallOutcome:
    return CallOutcome("failure", text, executed=True, result={"error": text})


def exception_text(exc: BaseException) -> str:
    """What the model (or an error message) says of a raised exception: its message, else its
    type's name; never raises, as host code may define a `__str__` that does."""
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # noqa: BLE001 - a `__str__` that raises
        return f"{type(exc).__name__} (its message cannot be shown)"


def _execute(ctx: RunCtx, call: ToolCall, args: dict, info):
    """Returns (kind, value): ok | raise | fatal | pause."""
    stubs = ctx.session.stubs
    stub = stubs.take(call.name) if stubs is not None else None
    if stub is not None:
        if stub.fails is not None:
            return "raise", RuntimeError(stub.fails)
        return "ok", thaw(stub.returns)
    fn = ctx.session.host.get(call.name)
    impl = info.decl.impl
    if fn is None and isinstance(impl, ir.ReturnsImpl):
        return "ok", thaw(impl.value)
    if fn is None and isinstance(impl, ir.AgentImpl):
        from .inner import run_inner
        return (yield from run_inner(ctx, call, args, info))
    if fn is None and isinstance(impl, ir.PythonImpl):
        fn, problem = resolve_python(impl.target)
        if fn is None:
            return "fatal", (f"AFP501 tool `{call.name}` is not bound: {problem}; or bind it "
                             f"with `tools={{'{call.name}': fn}}`")
    if fn is None:
        return "fatal", (f"AFP501 tool `{call.name}` is not bound: it has no `impl`; give it "
                         f"one (`impl = python(\"module:function\")` or `returns(...)`), bind it "
                         f"from Python with `tools={{'{call.name}': fn}}`, or stub it in a test "
                         f"(`tool {call.name} returns ...`, run with `--script`)")
    hargs = plain(args)  # (the arguments the `before` links handed on; a copy)
    if wants_context(fn) and isinstance(hargs, dict):  # the model cannot supply it: overwritten
        hargs[CONTEXT_PARAM] = tool_context(ctx, call.name, call.id)
    try:  # the host gets its own copy: nothing it mutates can reach the trace or history
        return "ok", (yield HostCall(fn, hargs))
    except ToolExit as exc:  # `sys.exit` in a tool body: a failure too, named after the tool
        return "raise", RuntimeError(f"`{call.name}` {exc}")
    except Exception as exc:  # a raising tool is a failure the model reads
        return "raise", exc


_PY_CACHE: dict[str, Any] = {}


def resolve_python(target: str) -> tuple[Any, str | None]:
    """Import `package.module:attribute` lazily (cached); (None, problem) when it cannot."""
    if target in _PY_CACHE:
        return _PY_CACHE[target], None
    mod_name, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(mod_name)
    except Exception as exc:
        return None, (f"`python(\"{target}\")` cannot be imported ({type(exc).__name__}: {exc}); "
                      f"make `{mod_name}` importable (install it, or add its folder to PYTHONPATH)")
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # (the module imported: the name is what is wrong)
        return None, (f"`python(\"{target}\")` cannot be imported: module `{mod_name}` has no "
                      f"`{attr}` ({type(exc).__name__}: {exc}); check the name after the `:`")
    if not callable(obj):
        return None, f"`python(\"{target}\")` is not callable; point it at a function"
    _PY_CACHE[target] = obj
    return obj, None
