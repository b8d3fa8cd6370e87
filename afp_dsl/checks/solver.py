"""Guard logic: per-key satisfiability of the cases `atoms` builds, with witnesses and reasons.

Role:       the reasoning behind AFP208 (guards), AFP205/AFP210 (graph), AFP305/AFP306 (exprs)
            and AFP401 (policies). `solve(exprs, facts)` answers "sat" (with a witness),
            "unsat" (with the conflicting conditions) or "unknown" (with notes); `refute` gives
            only the "unsat" verdicts (no witness is built).
Invariants: "unsat" is claimed only from conditions on one key (a path or a call), never across
            keys; "sat" only with a witness that `evaluate` accepts; everything else is "unknown"
            with a note naming what was not analysed; the DNF is capped at `MAX_CASES`, and the
            value tests of one guard at `MAX_WORK` (past it: "unknown", never a claim); a pattern
            `regex_risk` will not run on a value leaves its key "unknown".
"""
from __future__ import annotations

from typing import Any, Iterable

from ..evaluate import Env, _compare_values, evaluate, json_equal
from ..record import Record, record
from .atoms import MAX_CASES, TYPES, Atom, Facts, Key, compare_atom, key_of, key_text, no_facts, shape
from .normal_form import complementary, dnf
from .candidates import (bounds as _bounds, empty as _empty, number_candidates as _number_candidates,
                         string_candidates as _string_candidates, type_of)
from .witness import Builder, read_key, text_unrun, unrun_in, witness_env

__all__ = ["Atom", "Facts", "Key", "Verdict", "accepts", "compare_atom", "dnf", "key_of",
           "key_text", "no_facts", "read_key", "refute", "solve", "solve_key"]
# The value tests one guard may spend: a test costs 1, a regex or `mentions` test `_TEXT_COST`
# (it runs `evaluate`), an `eq`/`ne` test 1 more per value listed. Past it: "unknown".
MAX_WORK = 50_000
_TEXT_COST = 10


@record
class Verdict(Record):
    status: str  # "sat" | "unsat" | "unknown"
    witness: Env | None = None
    reasons: tuple[tuple[Atom, ...], ...] = ()  # unsat: the conflicting atoms of each case
    notes: tuple[str, ...] = ()
    cases: tuple[tuple[Atom, ...], ...] = ()


class _OutOfWork(Exception):
    pass


class _Unrun(Exception):  # a pattern `regex_risk` will not run on the value (args: why)
    pass


class Work:
    """The value tests one guard may still spend: solving stops, undecided, once they run out."""

    def __init__(self, left: int = MAX_WORK):
        self.left = left

    def holds(self, atoms: Iterable[Atom], v: Any) -> bool:
        """Whether `v` satisfies every atom (stops at the first that fails)."""
        for a in atoms:
            self.left -= (_TEXT_COST if a.kind == "text" else 1) + len(a.values)
            if self.left < 0:
                raise _OutOfWork
            if a.kind == "text" and (why := text_unrun(a.expr, v)) is not None:
                raise _Unrun(why)
            if not accepts(a, v):
                return False
        return True

    def first(self, cands: Iterable[Any], atoms: tuple[Atom, ...]) -> list:
        """The first candidate satisfying every atom, as a list of at most one value."""
        return next(([v] for v in cands if self.holds(atoms, v)), [])


# ---------------------------------------------------------------- one value against atoms
def accepts(atom: Atom, v: Any) -> bool | None:
    """Whether value `v` of the atom's key satisfies it (None: not decidable here)."""
    k = atom.kind
    if k == "eq":
        return any(json_equal(v, x) for x in atom.values)
    if k == "ne":
        return not any(json_equal(v, x) for x in atom.values)
    if k == "ord":
        return _compare_values(atom.op, v, atom.bound)[0] != atom.neg
    if k == "type":
        t = type_of(v)
        if t not in atom.types:
            return False
        return not (atom.integer and t == "number" and not float(v).is_integer())
    if k == "text":
        if text_unrun(atom.expr, v) is not None:
            return None
        return evaluate(atom.expr, _env_for(atom.key, v)).holds != atom.neg
    if k == "const":
        return atom.truth
    return None


def _env_for(key: Key, v: Any) -> Env:
    env = Builder()
    env.put(key, v)
    return env.env()


# ---------------------------------------------------------------- one key
@record
class _KeyResult(Record):
    status: str  # sat | unsat | unknown
    witnesses: tuple = ()
    out_of_work: bool = False  # unknown because the guard spent `MAX_WORK`
    note: str = ""  # unknown because a pattern was not run (why)


_SOLVED: dict[tuple, tuple[tuple[Atom, ...], _KeyResult]] = {}


def clear_cache() -> None:
    _SOLVED.clear()
    _SHAPED.clear()


def solve_key(atoms: tuple[Atom, ...], key: Key = (), work: Work | None = None) -> _KeyResult:
    """Satisfiability of the atoms of one key; exact except for strings under regex conditions,
    and "unknown" once `work` (a fresh `MAX_WORK` by default) runs out.
    Speed: cached per (key, atom ids), as the expression and guard checks solve the same atoms;
    the entry keeps the (frozen) atoms alive, so their ids are not reused while cached. A result
    cut short by the budget is not cached (a guard with work left may still decide it)."""
    ids = (key, tuple(map(id, atoms)))
    hit = _SOLVED.get(ids)
    if hit is None:
        try:
            result = _solve_fresh(atoms, key) if work is None else _solve_key(atoms, key, work)
        except _OutOfWork:
            return _KeyResult("unknown", out_of_work=True)
        except _Unrun as e:
            result = _KeyResult("unknown", note=str(e.args[0]))
        if len(_SOLVED) > 100_000:
            _SOLVED.clear()
        hit = _SOLVED[ids] = (atoms, result)
    return hit[1]


_SHAPED: dict[tuple, tuple[tuple[Atom, ...], _KeyResult]] = {}


def _solve_fresh(atoms: tuple[Atom, ...], key: Key) -> _KeyResult:
    """`_solve_key` with a fresh budget. Speed: its verdict then depends only on the atoms'
    shapes, so it is kept per shape (the same comparison against the same schema, tool after
    tool); the entry keeps the atoms alive, as a shape may hold an id."""
    shaped = (key, tuple(map(shape, atoms)))
    hit = _SHAPED.get(shaped)
    if hit is None:
        if len(_SHAPED) > 100_000:
            _SHAPED.clear()
        hit = _SHAPED[shaped] = (atoms, _solve_key(atoms, key, Work()))
    return hit[1]


def _unique(atoms: tuple[Atom, ...]) -> tuple[Atom, ...]:
    """The atoms without repeats, first occurrences kept in order. Atoms are equal when their
    fields are, with values told apart by type (`true` is not `1`) and text conditions by their
    whole comparison (`Atom` equality leaves the expression out)."""
    if len(atoms) < 2 or _all_differ(atoms):
        return atoms
    seen: set = set()
    out = []
    for a in atoms:
        ident = (a, repr(a.values), repr(a.bound), repr(a.expr) if a.kind == "text" else None)
        if ident not in seen:
            seen.add(ident)
            out.append(a)
    return tuple(out) if len(out) < len(atoms) else atoms


def _all_differ(atoms: tuple[Atom, ...]) -> bool:
    """True when no two atoms can be equal: they differ in a field equality compares.
    Speed: read without their texts, which are rendered only when a diagnostic needs them."""
    try:
        return len({(a.kind, a.level, a.op, a.values, a.bound) for a in atoms}) == len(atoms)
    except TypeError:  # an unhashable value: then by their texts (atoms that all read
        return len({a.text for a in atoms}) == len(atoms)  # differently repeat nothing)


def _solve_key(atoms: tuple[Atom, ...], key: Key, work: Work) -> _KeyResult:
    if key and key[0] == "call":
        atoms = atoms + (Atom("type", key, types=frozenset({"boolean"}), level="schema"),)
    if any(a.kind == "const" and not a.truth for a in atoms) or complementary(atoms):
        return _KeyResult("unsat")
    finite = None
    for a in atoms:
        if a.kind == "eq":  # (a filtered list stays deduplicated)
            finite = _dedupe(list(a.values)) if finite is None else [
                v for v in finite if work.holds((a,), v)]
    if finite is not None:
        good = [v for v in finite if work.holds(atoms, v)]
        return _KeyResult("sat", tuple(good)) if good else _KeyResult("unsat")
    types = _types(atoms)
    witnesses, unknown = [], False
    for t in ("compound", "number", "string", "boolean", "null"):
        if t not in types:
            continue
        status, found = _solve_type(t, atoms, work)
        witnesses += found
        unknown |= status == "unknown"
    if witnesses:
        return _KeyResult("sat", tuple(witnesses))
    return _KeyResult("unknown" if unknown else "unsat")


def _dedupe(vals: list) -> list:
    """`vals` without JSON-equal repeats of one type. Speed: scalars are compared by hash (a
    long `in` list), compound values one by one."""
    out: list = []
    seen: set = set()
    for v in vals:
        t = type_of(v)
        if t != "compound":
            if (t, v) not in seen:
                seen.add((t, v))
                out.append(v)
        elif not any(json_equal(v, o) and type_of(o) == t for o in out):
            out.append(v)
    return out


def _types(atoms: tuple[Atom, ...]) -> frozenset:
    types = TYPES
    for a in atoms:
        if a.kind == "type":
            types &= a.types
        elif a.kind == "ord" and not a.neg:
            types &= {"number" if type_of(a.bound) == "number" else "string"}
        elif a.kind == "text" and not a.neg:
            types &= {"string"}
    return types


def _solve_type(t: str, atoms: tuple[Atom, ...], work: Work) -> tuple[str, list]:
    if t in ("null", "boolean", "compound"):
        cands = {"null": [None], "boolean": [True, False], "compound": [{}]}[t]
        return "exact", [v for v in cands if work.holds(atoms, v)]
    lo, hi = _bounds(t, atoms)
    if _empty(lo, hi):
        return "exact", []
    excluded = [v for a in atoms if a.kind == "ne" for v in a.values if type_of(v) == t]
    integer = t == "number" and any(a.kind == "type" and a.integer for a in atoms)
    if lo is not None and hi is not None and lo[0] == hi[0]:  # a single point
        v = lo[0]
        return "exact", [v] if work.holds(atoms, v) else []
    cands = _number_candidates(lo, hi, excluded, integer) if t == "number" else \
        _string_candidates(lo, hi, atoms)
    found = work.first(cands, atoms)
    if found:
        return "exact", found
    if integer and lo is not None and hi is not None:
        return "exact", []  # every integer of the bounded range was tried
    return "unknown", []


# ---------------------------------------------------------------- one case, many cases
def solve(exprs: Iterable[Any], facts: Facts = no_facts, extra: Iterable[Atom] = (),
          reasons: bool = True) -> Verdict:
    """Satisfiability of the conjunction of `exprs` (None entries skipped) under `facts`.
    `reasons=False`: an "unsat" or "unknown" verdict carries no reasons (the same status, notes
    and witness). Speed: a caller that reads no reasons is spared minimising each conflict."""
    cases = dnf(exprs)
    if cases is None:
        return Verdict("unknown", notes=(f"the condition has more than {MAX_CASES} cases in "
                                         "disjunctive form and was not analysed",))
    extra, work = tuple(extra), Work()
    found, notes, witness = [], [], None
    for case in cases:
        status, detail = solve_case(case + extra, facts, work, reasons)
        if status == "sat":
            return Verdict("sat", witness=detail, cases=tuple(cases))
        if status == "unsat":
            if reasons:
                found.append(detail)
        else:
            notes += [n for n in detail if n not in notes]
    if notes:
        return Verdict("unknown", reasons=tuple(found), notes=tuple(notes), cases=tuple(cases))
    return Verdict("unsat", witness=witness, reasons=tuple(found), cases=tuple(cases))


def refute(exprs: Iterable[Any], facts: Facts = no_facts, reasons: bool = True) -> Verdict | None:
    """`solve`'s verdict when it is "unsat", else None (`reasons=False`: with no reasons, as for
    `solve`). Speed: builds no witness, since a check that reports only conditions that can never
    hold needs none (most conditions can hold)."""
    cases = dnf(exprs)
    if cases is None:
        return None
    found, work = [], Work()
    for case in cases:
        conflict = _conflict(case, facts, work, reasons)[0]
        if conflict is None:
            return None
        found.append(conflict)
    return Verdict("unsat", reasons=tuple(found) if reasons else (), cases=tuple(cases))


def solve_case(case: tuple[Atom, ...], facts: Facts, work: Work | None = None,
               minimal: bool = True) -> tuple[str, Any]:
    """("sat", Env) | ("unsat", conflicting atoms) | ("unknown", notes). `minimal=False`: the
    conflicting atoms are all those of the key, not minimised."""
    conflict, results = _conflict(case, facts, work or Work(), minimal)
    if conflict is not None:
        return "unsat", conflict
    big = [key_text(k) for k, r in results.items() if r.out_of_work]
    if big:
        return "unknown", [f"conditions on `{big[0]}` too many to decide (more than {MAX_WORK} "
                           "value tests)"]
    notes = [r.note or "regular expressions and `mentions` (conditions on "
             f"`{key_text(key)}`)" for key, r in results.items() if r.status == "unknown"]
    if notes:
        return "unknown", notes
    env = witness_env({k: r.witnesses for k, r in results.items()})
    if env is not None and all(_holds_in(a, env) for a in case):
        return "sat", env
    notes = [f"{a.note} (`{a.text}`)" for a in case if a.kind == "opaque"]
    return "unknown", notes or ["paths that read into one another (such as `result` and `result.x`)"]


def _conflict(case: tuple[Atom, ...], facts: Facts, work: Work,
              minimal: bool = True) -> tuple[tuple[Atom, ...] | None, dict]:
    """The conflicting atoms of the first key whose conditions contradict (None if none does;
    minimised unless `minimal` is false), and the `_KeyResult` of each key solved. Repeated
    atoms are solved once (`_unique`)."""
    for a in case:
        if a.kind == "const" and not a.truth:
            return (a,), {}
    by_key: dict[Key, list[Atom]] = {}
    for a in case:
        if a.kind == "opaque":
            for k in a.keys:
                by_key.setdefault(k, [])
        elif a.kind != "const":
            by_key.setdefault(a.key, []).append(a)
    results: dict[Key, _KeyResult] = {}
    for key, atoms in by_key.items():
        full = _unique(tuple(atoms) + tuple(facts(key)))
        r = solve_key(full, key, work)
        if r.status == "unsat":
            return (minimize(full, key) if minimal else full), results
        results[key] = r
    return None, results


def minimize(atoms: tuple[Atom, ...], key: Key) -> tuple[Atom, ...]:
    """A small subset of `atoms` that is still unsatisfiable (deletion-minimal when short)."""
    if len(atoms) > 16:
        return atoms
    kept = list(atoms)
    for a in list(atoms):
        trial = tuple(x for x in kept if x is not a)
        if trial and solve_key(trial, key).status == "unsat":
            kept = list(trial)
    return tuple(kept)


def _holds_in(atom: Atom, env: Env) -> bool:
    if atom.kind == "const":
        return atom.truth
    if atom.kind == "opaque":
        return unrun_in(atom.expr, env) is None and evaluate(atom.expr, env).holds != atom.neg
    return bool(accepts(atom, read_key(env, atom.key)))
