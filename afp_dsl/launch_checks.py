"""The arguments of `program.agent(...)` and `agent.run(...)`, checked before anything runs.

Role:       `Agent` calls `check_agent_args`, `check_model`, `check_message`,
            `check_conversation`, `check_run_id` and `no_agent` (`Program.agent` calls
            `check_model` too); a wrong argument is a `TypeError` (or `ValueError` for a tool
            name the program does not declare) whose message names what was given and what to
            pass instead, not a failure deep inside a run.
Invariants: pure (no I/O); accepts anything the documented API accepts, duck-typed: a provider
            is anything with `complete`, a store anything with the `Store` Protocol's methods
            a run calls (`_STORE_METHODS`); `stubs` only the interpreter's own `Stubs`.
"""
from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from . import ir
from .suggest import closest


def check_agent_args(program: ir.Program, provider: Any, tools: Any, store: Any,
                     effects: Any = None, stubs: Any = None, spec: Any = None) -> None:
    _check_provider(provider, "`provider`")
    if store is not None:
        _check_store(store)
    if tools is not None:
        _check_tools(program, tools, "`tools`")
    if effects is not None:
        _check_effects(program, effects)
    if stubs is not None:
        _check_stubs(stubs)
    if spec is not None and not isinstance(spec, str):
        hint = " (a path? pass `str(path)`)" if isinstance(spec, PathLike) else ""
        raise TypeError(f"`spec=` must be the path of the spec file the program was loaded from "
                        f"(a `str`, kept with the runs so that `afpc resume` can load it again) "
                        f"or None, not {_a(spec)}{hint}")


def _check_stubs(stubs: Any) -> None:
    from .runtime import Stubs  # (the interpreter's: not loaded for `afpc check`)
    if not isinstance(stubs, Stubs):
        raise TypeError(f"`stubs=` must be an `afp_dsl.runtime.Stubs` (tool results scripted with "
                        f"`stubs.add(\"tool\", Stub(returns=...))`) or None, not {_a(stubs)}")


# What a run asks of its store (the `Store` Protocol, docs/stores.md "The interface").
_STORE_METHODS = ("save_run", "run", "events", "checkpoint", "put_checkpoint", "delete_checkpoint",
                  "open_checkin", "checkin", "decide_checkin")


def _check_store(store: Any) -> None:
    if isinstance(store, type):  # (its methods are there, unbound: a run would fail on the first)
        raise TypeError(f"`store` is the class `{store.__name__}`, not a store: pass one, e.g. "
                        f"`afp.stores.sqlite(\"runs.db\")` or `afp.stores.memory()`")
    missing = [m for m in _STORE_METHODS if not callable(getattr(store, m, None))]
    if not missing:
        return
    if len(missing) < len(_STORE_METHODS) and not isinstance(store, str):  # a store of its own
        raise TypeError(f"`store` ({_a(store)}) lacks the run store method(s) "
                        f"{', '.join(f'`{m}`' for m in missing)} that a run calls; implement the "
                        f"whole `afp.stores.Store` Protocol (docs/stores.md), or wrap "
                        f"`afp.stores.memory()`")
    hint = (" (a path? pass `afp.stores.sqlite(path)` or `afp.stores.from_url(url)`)"
            if isinstance(store, str) else "")
    raise TypeError(f"`store` must be a run store such as `afp.stores.sqlite(\"runs.db\")` or "
                    f"`afp.stores.memory()`, not {_a(store)}{hint}")


def _check_provider(provider: Any, label: str) -> None:
    if isinstance(provider, type):
        raise TypeError(f"{label} is the class `{provider.__name__}`, not a provider: pass one, "
                        f"e.g. `afp.providers.mock()` or `afp.providers.openai(model=...)`")
    if provider is not None and not callable(getattr(provider, "complete", None)):
        raise TypeError(f"{label} must be a model provider such as `afp.providers.mock()` or "
                        f"`afp.providers.openai(model=...)` (an object with a "
                        f"`complete(request)` method), not {_a(provider)}")


def _check_effects(program: ir.Program, effects: Any) -> None:
    """An `Effects` (or anything shaped like one) whose provider and tool bindings pass the same
    checks as the `provider` and `tools` arguments."""
    if not all(hasattr(effects, a) for a in ("provider", "tools", "new_run_id")):
        raise TypeError(f"`effects` must be an `afp_dsl.effects.Effects`, e.g. "
                        f"`Effects(run_ids=counter_ids(\"run\"))`, not {_a(effects)}")
    _check_provider(effects.provider, "`Effects(provider=...)`")
    _check_tools(program, effects.tools, "`Effects(tools=...)`")
    factory = getattr(effects, "clock_factory", None)
    if factory is not None and not callable(factory):
        raise TypeError(f"`Effects(clock_factory=...)` must make a clock from a start time, e.g. "
                        f"`clock_factory=LogicalClock`, not {_a(factory)}")
    for field, example in (("run_ids", "run"), ("conversation_ids", "conv")):
        ids = getattr(effects, field, None)
        if ids is not None and not callable(ids):
            raise TypeError(f"`Effects({field}=...)` must be a function making ids, e.g. "
                            f"`{field}=counter_ids(\"{example}\")`, not {_a(ids)}")


def check_model(model: Any) -> None:
    """`model=` is a model name for the provider, or None for the provider's default."""
    if model is not None and not isinstance(model, str):
        raise TypeError(f"`model=` must be a model name (a `str`, e.g. `model=\"gpt-4o-mini\"`) "
                        f"or None for the provider's default, not {_a(model)}")
    if model is not None and not model.strip():
        raise ValueError("`model=` is empty; pass a model name (e.g. `model=\"gpt-4o-mini\"`) "
                         "or leave it out for the provider's default")


def check_message(message: Any) -> None:
    if not isinstance(message, str):
        raise TypeError(f"the message must be text (a `str`), not {_a(message)}")
    try:
        message.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: no model, store or export can take it
        raise ValueError(f"the message is not valid text: a lone surrogate at position "
                         f"{exc.start} (bytes decoded with `errors=\"surrogateescape\"`?); "
                         f"decode the input with its real encoding") from None


def check_conversation(conversation: Any) -> None:
    """`run(..., conversation=...)`: what `agent.conversation()` returns, or None."""
    from .results import Conversation
    if conversation is not None and not isinstance(conversation, Conversation):
        raise TypeError(f"`conversation=` must be a `Conversation`, as `agent.conversation()` "
                        f"returns, or None for a run of its own, not {_a(conversation)}")


def check_run_id(run_id: Any) -> None:
    """A new run's id, from `Effects(run_ids=...)`: non-empty text every store keeps (no NUL, no
    lone surrogate) and no `/` (inner runs' ids); checked before anything runs or is saved."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise TypeError(f"`Effects(run_ids=...)` must make non-empty text ids, e.g. "
                        f"`counter_ids(\"run\")`, not "
                        f"{'blank text' if isinstance(run_id, str) else _a(run_id)}")
    if "\x00" in run_id or not run_id.isascii() and _surrogate(run_id):
        raise ValueError("`Effects(run_ids=...)` made an id holding a NUL or a lone surrogate, "
                         "which no run store keeps; make ids of plain text, e.g. "
                         "`counter_ids(\"run\")`")
    if "/" in run_id:  # an inner run is stored as `<run>/<call id>`: `a/b` could be one of `a`'s
        raise ValueError(f"`Effects(run_ids=...)` made the id `{run_id[:60]}`, holding `/`, which "
                         f"names the inner runs of agent tools (`<run>/<call id>`); make ids "
                         f"without `/`, e.g. `tenant-123` or `counter_ids(\"run\")`")


def _surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_tools(program: ir.Program, tools: Any, label: str) -> None:
    if not isinstance(tools, Mapping):
        raise TypeError(f"{label} must map tool names to functions, e.g. "
                        f"`tools={{\"lookup\": lookup}}`, not {_a(tools)}")
    declared = sorted({d.name for m in program.modules for d in m.decls if isinstance(d, ir.Tool)})
    for name, fn in tools.items():
        if name not in declared:
            close = closest(str(name), declared)
            hint = f"; did you mean `{close}`?" if close else ""
            raise ValueError(f"{label} binds `{name}`, but the spec declares no tool of that name "
                             f"(tools: {', '.join(f'`{t}`' for t in declared) or 'none'}){hint}")
        if not callable(fn):
            raise TypeError(f"the binding of tool `{name}` must be a function (or any callable), "
                            f"not {_a(fn)}")


def _a(value: Any) -> str:
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} `{kind}`"


def check_agent_name(name: Any) -> None:
    """`program.agent(name)`: an agent's name, or None for the spec's only agent."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"the agent must be named by a `str` (e.g. `program.agent(\"support\")`), "
                        f"or left out for the spec's only agent, not {_a(name)}")


def no_agent(prog: ir.Program, name: str | None) -> str:
    """Why `name` (or no name) picks no agent of `prog`, and what to pass instead."""
    names = [d.name for d in prog.root_module.decls if isinstance(d, ir.Agent)]
    if not names:
        return "the spec declares no agent: add an `agent NAME { ... }` declaration to run it"
    listed = ", ".join(f"`{n}`" for n in names)
    if name is not None and not name.strip():
        return f"the agent name is blank; name one of the agents: {listed}"
    if name:
        close = closest(name, names)
        return f"no agent `{name}`; {f'did you mean `{close}`? ' if close else ''}agents: {listed}"
    return (f"the spec has several agents; name one (`--agent NAME` with afpc, "
            f"`program.agent(\"NAME\")` in Python); agents: {listed}")
