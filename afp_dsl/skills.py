"""`read_skill` (menu, gate, teaching sentences) and step procedures (semantics §3, §5).

Role:       pure helpers the context composer and the tool pipeline call; no recording here;
            also the sentence for a call to a tool that was not offered.
Invariants: the `read_skill` enum always lists every skill; a refusal moves nothing; only a
            successful result of the current step's tool (or `skip_step` with `advance`)
            advances a procedure; every active skill with steps left runs its own procedure.
"""
from __future__ import annotations

import attrs

from . import prompts
from .cursor import reachable
from .plan import Plan, SkillInfo
from .providers.base import ToolSpec

READ_SKILL = "read_skill"
SKIP_STEP = "skip_step"
BUILTINS = (READ_SKILL, SKIP_STEP)
_TAIL = ("Pass the skill's id. The skill's body becomes part of the system prompt and its "
         "tools become available on the next call.")
SKIP_SCHEMA = {"type": "object", "properties": {"reason": {
    "type": "string", "minLength": 1, "description": "Why the current step cannot or need not run."}},
    "required": ["reason"]}  # (no `additionalProperties`: an extra field, e.g. a note, is
# tolerated, as by the original framework, which enforces it only when a schema says so)


# ---------------------------------------------------------------- read_skill
def allowed(plan: Plan, cursor: str | None) -> tuple[str, ...]:
    """Skills a pick is accepted for: the graph skills reachable from the cursor in the order
    `cursor.reachable` gives (successors in the order of the routes, then the entries, as the
    original's `reachableSkills`), then the open skills in declaration order (semantics §4: the
    menu, `skill.rejected` and the refusal list them so)."""
    hops = reachable(plan.graph, cursor) if plan.graph is not None else ()
    opened = plan.open_skills
    return tuple(dict.fromkeys((*hops, *(n for n in plan.skill_order if n in opened))))


def read_skill_spec(plan: Plan, cursor: str | None) -> ToolSpec:
    names = list(plan.skill_order)
    schema = {"type": "object", "properties": {"id": {
        "type": "string", "enum": names, "description": "The skill id to activate."}},
        "required": ["id"]}  # (an extra field is tolerated: see SKIP_SCHEMA)
    return ToolSpec(READ_SKILL, read_skill_description(plan, cursor), schema)


def _line(plan: Plan, name: str) -> str:
    """`  - name: description`; `  - name` when it has none; later lines of a description
    indented under the item, so that none of them reads as a part of the menu."""
    text = (plan.skills[name].decl.description or "").strip()
    if not text:
        return f"  - {name}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]  # (a blank line
    # would read as the end of the menu's part)
    return f"  - {name}: " + "\n    ".join(lines)


def read_skill_description(plan: Plan, cursor: str | None) -> str:
    head = "Activate a skill for the next iteration."
    if plan.graph is None:
        menu = "\n".join(_line(plan, n) for n in plan.skill_order)
        return f"{head} Available skills:\n{menu}\n\n{_TAIL}"
    ok = allowed(plan, cursor)
    refused = [n for n in plan.skill_order if n not in ok]  # (the cursor too: never reachable)
    parts = [head]
    if ok:
        parts.append("Reachable from here:\n" + "\n".join(_line(plan, n) for n in ok))
    else:
        parts.append("Nothing is reachable from here — answer with the skill you are in, or finish.")
    if refused:
        parts.append("Not reachable from here (read_skill for these will be refused):\n"
                     + "\n".join(_line(plan, n) for n in refused))
    parts.append(_TAIL)
    return "\n\n".join(parts)


@attrs.frozen
class Gate:
    accepted: bool
    kind: str  # hop | open | refused
    text: str
    allowed: tuple[str, ...]


def gate(plan: Plan, cursor: str | None, requested: str, pointer: int = 0) -> Gate:
    ok = allowed(plan, cursor)
    if requested in ok:
        kind = "open" if requested in plan.open_skills else "hop"
        text = f"Skill '{requested}' activated for the next iteration."
        skill = plan.skills[requested]
        if skill.steps:
            step = skill.steps[0]
            text += (f" You are on step 1 of {len(skill.steps)}{about(step.note, ': ')}. "
                     f"Its tool: `{step.tool}`.")
        return Gate(True, kind, text, ok)
    return Gate(False, "refused", refusal(requested, cursor, ok), ok)


def refusal(requested: str, cursor: str | None, ok: tuple[str, ...]) -> str:
    where = f"the current skill `{cursor}`" if cursor else "here (no skill is current yet)"
    head = f'read_skill("{requested}") is not reachable from {where}.'
    if requested == cursor:  # (the cursor is never reachable from itself: say why, too)
        head = (f'read_skill("{requested}") is not reachable from {where}: `{requested}` is the '
                f'current skill already, and its body is in the system prompt.')
    if ok:
        return f"{head} Reachable skills: {', '.join(ok)}. Pick one of these, or finish."
    return f"{head} No skills are reachable from here — answer with what you have, or finish."


# ---------------------------------------------------------------- steps
def procedures(plan: Plan, active: list[str],
               steps: dict[str, int]) -> tuple[tuple[SkillInfo, int], ...]:
    """The running procedures: each active skill with steps left and its pointer, in `active`
    order (the cursor first)."""
    out = []
    for name in active:
        skill = plan.skills.get(name)
        if skill is not None and skill.steps and steps.get(name, 0) < len(skill.steps):
            out.append((skill, steps.get(name, 0)))
    return tuple(out)


def procedure(plan: Plan, active: list[str], steps: dict[str, int]) -> tuple[SkillInfo, int] | None:
    """The first running procedure (the cursor's, if it runs one), and its pointer."""
    running = procedures(plan, active, steps)
    return running[0] if running else None


def about(note: str, sep: str) -> str:
    """A step's note after `sep` (`: note`, ` — note`), or nothing for a step without one (the
    note is optional: `steps { lookup }`), so no sentence reads `step 1 of 2: .`."""
    return f"{sep}{note}" if note and note.strip() else ""


def banner(skill: SkillInfo, k: int) -> str:
    return f"[Step {k + 1} of {len(skill.steps)}{about(skill.steps[k].note, ' — ')}]"


def step_tool_spec(plan: Plan, skill: SkillInfo, k: int) -> ToolSpec:
    tool = plan.tools[skill.steps[k].tool]
    description = tool.decl.description or ""
    return tool.spec(f"{banner(skill, k)} {description}" if description else banner(skill, k))


def skip_step_spec(running: tuple = ()) -> ToolSpec:
    """`skip_step { reason }`; with several procedures running, also an optional `skill`. Its
    description names the step it would skip, the steps left and the declared `on_skip`, as
    the original framework's (`skipStepDescription`)."""
    if len(running) < 2:
        text = _skip_line(*running[0]) if running else _SKIP_PLAIN
        return ToolSpec(SKIP_STEP, text, SKIP_SCHEMA)
    text = " ".join(_skip_line(skill, k) for skill, k in running)
    names = [skill.name for skill, _ in running]
    skill = {"type": "string", "enum": names,
             "description": f"Whose step to skip (default: `{names[0]}`)."}
    schema = {**SKIP_SCHEMA, "properties": {**SKIP_SCHEMA["properties"], "skill": skill}}
    return ToolSpec(SKIP_STEP, f"{text} Several procedures are running: name the skill whose "
                               f"step to skip (default: `{names[0]}`).", schema)


_SKIP_PLAIN = "Skip the current step of the running procedure; give the reason."


def _skip_line(skill: SkillInfo, k: int) -> str:
    step, n = skill.steps[k], len(skill.steps)
    policy = skill.decl.on_skip
    then = ("the step stays current until it runs or the run ends" if policy == "hold"
            else "the procedure moves to the next step")
    return (f"Skip step {k + 1} of {n} ('{step.tool}'{about(step.note, ' — ')}) with a recorded "
            f"reason. {n - k} step(s) remain in the '{skill.name}' procedure. On skip, {then} "
            f"(declared policy: '{policy}').")


def skip_target(running: tuple, wanted) -> tuple[SkillInfo, int] | str:
    """The procedure `skip_step` skips: the one named by `skill`, else the first; or a refusal."""
    if wanted is None:
        return running[0]
    for skill, k in running:
        if skill.name == wanted:
            return skill, k
    names = ", ".join(skill.name for skill, _ in running)  # (the argument is not echoed)
    return (f"skip_step's `skill` must name a running procedure: {names}. Nothing was skipped; "
            f"call it again with one of these, or without `skill` for the first.")


def _next(skill: SkillInfo, k: int) -> str:
    n = len(skill.steps)
    if k + 1 >= n:
        return f"All {n} steps complete." if n > 1 else "The procedure is complete."
    nxt = skill.steps[k + 1]
    return f"Now on step {k + 2} of {n}{about(nxt.note, ': ')} (tool: `{nxt.tool}`)."


def advance_suffix(skill: SkillInfo, k: int) -> str:
    return f" Step {k + 1} of {len(skill.steps)} done. {_next(skill, k)}"


def skip_text(skill: SkillInfo, k: int, reason: str, skipped: int = 1) -> str:
    """What `skip_step` returns; `skipped`: how many steps of this procedure were skipped,
    this one included (named when the last step is skipped)."""
    if skill.decl.on_skip == "hold":
        return (f"Skip of step {k + 1} recorded: {reason}. Step {k + 1} of {len(skill.steps)} "
                f"stays current (declared policy 'hold') — run `{skill.steps[k].tool}`, or "
                f"finish and say why.")
    if k + 1 >= len(skill.steps):
        return (f"Step {k + 1} skipped: {reason}. That was the last step — the '{skill.name}' "
                f"procedure is complete ({skipped} step(s) skipped).")
    return f"Step {k + 1} skipped: {reason}. {_next(skill, k)}"


def unfinished(skill: SkillInfo, k: int) -> dict:
    """A `steps.unfinished` payload but its action: the first step not run (`step`, `tool`),
    the procedure's length (`of`) and every step not run (`remaining`, as the original's
    `remaining` list)."""
    rest = [{"step": i + 1, "tool": st.tool, "note": st.note or ""}
            for i, st in enumerate(skill.steps) if i >= k]
    return {"skill": skill.name, "step": k + 1, "tool": skill.steps[k].tool,
            "of": len(skill.steps), "remaining": rest}


def needs_reason(k: int) -> str:
    return ("skip_step was not applied: `reason` is required and must be non-empty — it goes on "
            f"the record. Say why step {k + 1} cannot or should not run, then call skip_step "
            "again.")


NO_PROCEDURE = ("skip_step has nothing to skip: no step procedure is active (or the active one "
                "is already complete). Continue with your other tools, or finish.")


def not_offered(plan: Plan, tool: str, active: tuple[str, ...], running: tuple,
                offered: list[str]) -> str:
    """What the model reads for a call to a tool of the agent that was not offered to it."""
    why = _step_reason(tool, running) or _inactive_reason(plan, tool, active)
    return (f"Tool `{tool}` is not available now: {why}. "
            f"Your tools now are: {', '.join(offered) or 'none'}.")


def moved_to(tool: str, running: tuple, steps: dict[str, int]) -> bool:
    """Has an earlier call of the same reply moved a procedure on to a step whose tool is
    `tool` (`running`: the procedures as the reply saw them; `steps`: the pointers now)? Such a
    call runs as that step's, as in the original framework, whose batch `[charge, export]`
    advances a procedure twice (its `skill-steps` test): the step is current when it runs."""
    for skill, k in running:
        now = steps.get(skill.name, 0)
        if now != k and now < len(skill.steps) and skill.steps[now].tool == tool:
            return True
    return False


def moved_on(tool: str, running: tuple, steps: dict[str, int]) -> str | None:
    """What the model reads for a call to a step's tool that was not offered to its reply
    because an earlier call of the same reply moved the procedure on to that step (`running`:
    the procedures as the reply saw them; `steps`: the pointers now); None otherwise. Saying
    "is on step 1" there would be out of date, and send the model back to the finished step."""
    for skill, k in running:
        if tool in skill.tools and skill.steps[k].tool != tool:
            now, n = steps.get(skill.name, 0), len(skill.steps)
            if now == k:
                return None
            if now < n and skill.steps[now].tool != tool:  # (moved on, but not to this tool)
                return (f"Tool `{tool}` is not available now: an earlier call of this reply "
                        f"moved skill `{skill.name}` on to step {now + 1} of {n}, whose tool is "
                        f"`{skill.steps[now].tool}`.")
            if now < n:  # (moved on to this tool's step: the call runs, see `moved_to`)
                return None
            return (f"Tool `{tool}` was not offered to this reply: skill `{skill.name}` was on "
                    f"step {k + 1} of {n} when you sent it, and an earlier call of this reply "
                    f"moved it on past its last step. Call `{tool}` again.")
    return None


def loaded_meanwhile(plan: Plan, tool: str, active: tuple[str, ...], loaded: list[str]) -> str | None:
    """What the model reads for a call to a tool of a skill that an earlier `read_skill` of the
    same reply loaded (`loaded`: the skills opened or picked so far): the skill is active from
    the next call, as that pick's confirmation said; None when no such skill has the tool."""
    hit = next((n for n in plan.skill_order if tool in plan.skills[n].tools
                and n not in active and n in loaded), None)
    if hit is None:
        return None
    return (f"Tool `{tool}` was not offered to this reply: skill `{hit}`, which an earlier "
            f"call of this reply loaded, is active from your next call. Call `{tool}` again.")


def _step_reason(tool: str, running: tuple) -> str | None:
    for skill, k in running:
        if tool in skill.tools and skill.steps[k].tool != tool:
            return (f"skill `{skill.name}` is on step {k + 1} of {len(skill.steps)}, whose tool "
                    f"is `{skill.steps[k].tool}`")
    return None


def _inactive_reason(plan: Plan, tool: str, active: tuple[str, ...]) -> str:
    owners = [n for n in plan.skill_order if tool in plan.skills[n].tools and n not in active]
    if not owners:
        return "it is not offered in this iteration"
    listed = ", ".join(f"`{n}`" for n in owners)
    if len(owners) == 1:
        return f"skill {listed} is not active"
    return f"skills {listed} are not active"


def nudge_text(skill: SkillInfo, k: int) -> str:
    step = skill.steps[k]
    return prompts.nudge_text(skill.name, k, step.note, step.tool)
