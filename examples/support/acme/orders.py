"""In-memory order book for the refund-desk example (`python("acme.orders:lookup")`).

Tools are called with their arguments as keywords.
"""
from __future__ import annotations

ORDERS = {"AB-12": 20.0, "CD-7": 240.0, "EF-9": 900.0}
_REFUNDS: list[tuple[str, float]] = []


def lookup(order_id: str) -> dict:
    amount = ORDERS.get(order_id)
    return {"status": "missing"} if amount is None else {"status": "found", "amount": amount}


def refund(order_id: str, amount: float) -> str:
    _REFUNDS.append((order_id, amount))
    return f"refund R-{len(_REFUNDS)} issued for {amount:.2f} on {order_id}"
