"""Host code the interpreter tests bind through `python("interp_host:...")`."""
from __future__ import annotations

CALLS: list = []


def echo(text: str = "") -> str:
    CALLS.append(text)
    return f"echo:{text}"


def audit(ctx: dict):
    raise RuntimeError("audit service down")


def asker(ctx: dict):
    return ("ask", "a person should look")


def allow_all(ctx: dict):
    return "allow"


not_callable = 42


def ask_after(ctx: dict):
    """Asks only at `after`, where no pause can carry the ask."""
    if ctx.get("moment") == "after":
        return ("ask", "check the result?")
    return None
