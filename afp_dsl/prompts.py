"""The user messages the interpreter itself writes into a run: the wrap-up and the steps nudge.

Role:       one place for their texts, so that the loop writes them and a reader (the mock
            provider's demo mode) can tell them from what a person wrote (`is_prompt`).
Invariants: pure; the texts are part of the documented behaviour (docs/semantics.md §5, §6).
"""
from __future__ import annotations

import re

WRAP_UP = ("Your action budget for this run is spent. Do not request tools. Give your best final "
           "answer from what you have: what you completed, what remains undone, and anything the "
           "person should know.")


def nudge_text(skill: str, k: int, note: str, tool: str) -> str:
    """The nudge after an answer that left step `k` (0-based) of procedure `skill` unrun."""
    about = f" — {note}" if note and note.strip() else ""  # (a step's note is optional)
    return (f"Step {k + 1} of '{skill}' has not run{about} (tool: `{tool}`). "
            f"Finish the remaining steps, or say why you are stopping.")


_NUDGE = re.compile(r"Step \d+ of '.*' has not run(?: — .*)? \(tool: `[^`]*`\)\. Finish the remaining "
                    r"steps, or say why you are stopping\.", re.S)


def is_prompt(text: object) -> bool:
    """True for a text the interpreter wrote as a user message (the wrap-up, a nudge)."""
    return isinstance(text, str) and (text == WRAP_UP or _NUDGE.fullmatch(text) is not None)
