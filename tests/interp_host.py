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


# ---------------------------------------------------------------- rewrites (semantics §8)
def scrub_ssn(ctx: dict):
    """Rewrites the message (`input`) and the answer (`output`): SSNs become `[ssn]`."""
    import re
    import afp_dsl
    key = {"input": "message", "output": "text"}.get(ctx["moment"])
    if key is None or not re.search(r"\d{3}-\d{2}-\d{4}", ctx[key]):
        return None
    return afp_dsl.rewrite(re.sub(r"\d{3}-\d{2}-\d{4}", "[ssn]", ctx[key]), "SSNs stay out")


def cap_amount(ctx: dict):
    """Rewrites the arguments at `before` (as a triple): an amount over 100 becomes 100."""
    if ctx["moment"] == "before" and ctx["args"].get("amount", 0) > 100:
        return ("allow", "capped at 100", {**ctx["args"], "amount": 100})
    return None


def see(ctx: dict):
    """Records what it was given, and allows."""
    SEEN.append({k: ctx.get(k) for k in ("moment", "message", "args", "result", "text")})
    return "allow"


SEEN: list = []


def mask_result(ctx: dict):
    """Rewrites the result the model reads at `after`."""
    if ctx["moment"] == "after":
        return ("allow", "masked", {"masked": True})
    return None


def bad_rewrite(ctx: dict):
    """Rewrites with what no moment takes: a number for the message, a list for the arguments."""
    import afp_dsl
    return afp_dsl.rewrite(42 if ctx["moment"] in ("input", "output") else [1, 2], "why not")


def no_reason(ctx: dict):
    return ("allow", "  ", {"amount": 1}) if ctx["moment"] == "before" else None


def not_json(ctx: dict):
    return ("allow", "a set", {"amount": {1, 2}}) if ctx["moment"] == "before" else None


def pay(amount: float = 0) -> str:
    CALLS.append(amount)
    return f"paid {amount}"


def pick_b(ctx: dict):
    """Rewrites a `read_skill` pick at `before`: whatever the model picked, `b` is read."""
    import afp_dsl
    if ctx["moment"] == "before" and ctx["tool"] == "read_skill":
        return afp_dsl.rewrite({"id": "b"}, "b instead")
    return None
