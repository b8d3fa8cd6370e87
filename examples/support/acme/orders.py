"""Host code for the refund-desk example: `impl = python("acme.orders:refund")`.

Tools are called with their arguments as keywords; a raised exception becomes a `failure`
result the model reads.
"""
from __future__ import annotations

_REFUNDS: list[tuple[str, float]] = []


def refund(order_id: str, amount: float) -> str:
    if amount <= 0:
        raise ValueError("refund amount must be positive")
    _REFUNDS.append((order_id, amount))
    return f"refund R-{len(_REFUNDS)} issued for {amount:.2f} on {order_id}"
