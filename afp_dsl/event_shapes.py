"""The payload of a `context.composed`, and the shapes that settle the clean checks of the loop's events.

Role:       `composition_payload(comp)` is what `interp` records of a composition;
            `composed_shape` and `replied_shape` describe a `context.composed` and an
            `llm.replied` payload as (shape, values) for `CleanCheck.is_clean_as`, and
            `TOOLS_KEY` / `LLM_CALLED_KEYS` are the keys an `llm.called` is vouched for and
            checked by. Split from `interp`: what a payload holds, apart from when it is recorded.
Invariants: a payload is a function of its shape and values (tests/test_redaction_shaped.py);
            a shape holds the program's texts and the code's, never a run's data, since the
            shapes found clean are shared by the runs of a rule set.
"""
from __future__ import annotations


def composition_payload(comp) -> dict:
    """The `context.composed` payload of a composition (`context.Composition`)."""
    pieces = [{"kind": p.kind, "name": p.name, "reason": p.reason, "chars": len(p.text),
               "source": None if p.source is None else [p.source.file, p.source.start, p.source.end],
               **({"detail": p.detail} if p.detail is not None else {}),
               **({"event": p.caused_by[0]} if p.caused_by else {})} for p in comp.pieces]
    tools = [{"name": o.spec.name, "origin": o.origin, **({"skill": o.skill} if o.skill else {})}
             for o in comp.offered]
    out = {"pieces": pieces, "tools": tools, "active": list(comp.active),
           "system_chars": len(comp.system)}
    if comp.skipped:
        out["skipped"] = list(comp.skipped)
    return out


# Speed: a `context.composed` vouches for the `tools` of its `llm.called` (their names sit in its
# payload, from the same offered tools; `model_view.sent` keeps a tool's name), so that payload's
# clean check walks only its other keys' values (`CleanCheck.is_clean_vouched_plus`).
TOOLS_KEY = ("tools",)
LLM_CALLED_KEYS = ("call", "model", "messages")


# Speed: how the clean check of an `llm.replied` payload without chunks or response keys is
# settled (`CleanCheck.is_clean_as`): its four keys and its calls' three are the code's, so the
# payload is a function of the number of calls and of the values checked at every reply (the
# text, the stop reason, the two token counts, each call's id, name and arguments).
def replied_shape(out: dict) -> tuple:
    calls, usage = out["tool_calls"], out["usage"]
    if len(calls) == 1 and len(usage) == 2:  # Speed: the usual reply, one tuple
        c = calls[0]
        return ONE_CALL, (out["text"], out["stop"], usage[0], usage[1], c["id"], c["tool"],
                           c["args"])
    values = [out["text"], out["stop"], *usage]
    for c in calls:
        values += (c["id"], c["tool"], c["args"])
    return ("llm.replied", len(calls), len(usage)), values


ONE_CALL = ("llm.replied", 1, 2)  # (the shape of a one-call reply)


# Speed: how the clean check of a `context.composed` payload is settled (`CleanCheck.is_clean_as`;
# called only when something could be scrubbed). The payload is a function of the composition's
# pieces (kind, name, reason, length, span, whether it has a cause), tools (name, origin, skill),
# active skills and system prompt length, all of the checked program (exact strs), and of the
# pieces' first causes (event ids: the values, checked every time, so that the shape holds
# nothing of the run and is shared by the rule set's runs); a piece with evidence (`detail`) or a
# skipped piece has run data: checked in full.
def composed_shape(comp) -> tuple | None:
    if comp.skipped:
        return None
    # Speed: each part flat (fixed fields per piece and per tool), built by a loop: no tuple
    # per piece or tool kept, no comprehension frame, one pass over the pieces.
    pieces: list | tuple = comp.pieces
    values: list | tuple = ()
    if pieces:
        flat: list = []
        values = []
        for p in pieces:
            if p.detail is not None:
                return None
            flat += (p.kind, p.name, p.reason, len(p.text), p.source, not p.caused_by)
            values += p.caused_by[:1]
        pieces = tuple(flat)
    tools: list = []
    for o in comp.offered:
        tools += (o.spec.name, o.origin, o.skill)
    return ("context.composed", pieces, tuple(tools), comp.active, len(comp.system)), values
