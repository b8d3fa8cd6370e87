"""Conditions that can never hold on their own: one comparison under its key's schema facts,
or a comparison between two paths whose declared types never meet.

Role:       checks layer; `self_impossible` is asked by exprs (AFP305) and guards (AFP208) for
            each comparison; it solves with `solver` (split from it), never the other way.
Invariants: "never holds" only from one key's schema-level facts (`solver.solve_key`), or from
            the two keys' types alone: values are never compared across keys.
"""
from __future__ import annotations

from .atoms import TYPES, Atom, Facts, Key, key_of, key_text
from .solver import minimize, solve_key


def self_impossible(atom: Atom, facts: Facts) -> tuple[Atom, ...] | None:
    """The conflict when `atom` alone can never hold under the schema-level facts of its key
    (of its two keys, for a comparison between two paths: `_keys_never_meet`)."""
    if atom.kind == "const":
        return (atom,) if not atom.truth else None
    if atom.kind == "opaque":
        return _keys_never_meet(atom, facts)
    if atom.kind not in ("eq", "ord", "text"):
        return None
    full = (atom,) + tuple(f for f in facts(atom.key) if f.level == "schema")
    if solve_key(full, atom.key).status == "unsat":
        return minimize(full, atom.key)
    return None


# ---------------------------------------------------------------- two keys, by type only
_PAIR_OPS = frozenset({"==", "<", "<=", ">", ">="})
_ORDERED_TYPES = frozenset({"number", "string"})
_TYPE_ONLY = {t: Atom("type", types=frozenset({t}), level="schema") for t in TYPES}
_TYPE_WORDS = {"null": "null", "boolean": "a boolean", "number": "a number", "string": "a string",
               "compound": "a list or an object"}


def key_types(key: Key, facts: Facts) -> frozenset[str]:
    """The types the value of `key` can have under its schema-level facts (all when unknown)."""
    known = tuple(f for f in facts(key) if f.level == "schema")
    if not known and key[0] != "call":
        return TYPES
    return frozenset(t for t in TYPES if solve_key(known + (_TYPE_ONLY[t],), key).status != "unsat")


def _keys_never_meet(atom: Atom, facts: Facts) -> tuple[Atom, ...] | None:
    """`a == b` or `a < b` between two paths whose declared types rule it out (`message <
    iteration`: no string is a number; an ordered comparison needs two numbers or two strings):
    the atom and a type fact for each side. Types only: values are never compared across keys."""
    c = atom.expr
    if atom.neg or getattr(c, "op", None) not in _PAIR_OPS:
        return None
    left, right = key_of(c.left), key_of(c.right)
    if left is None or right is None:
        return None
    lt, rt = key_types(left, facts), key_types(right, facts)
    common = lt & rt if c.op == "==" else lt & rt & _ORDERED_TYPES
    if common:
        return None
    return (atom, _type_fact(left, lt), _type_fact(right, rt))


def _type_fact(key: Key, types: frozenset[str]) -> Atom:
    words = " or ".join(_TYPE_WORDS[t] for t in sorted(types)) or "never set"
    return Atom("type", key, types=types, level="schema", text=f"`{key_text(key)}` is {words}")
