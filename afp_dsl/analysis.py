"""Derived facts over a `Program`: symbol tables and reference resolution.

Role:       the one place that turns a `Ref` written in some module into the declaration it names;
            used by checks, the interpreter and graph export.
Invariants: never mutates the IR; an unresolvable reference resolves to None (checks report it).
"""
from __future__ import annotations

from itertools import compress, repeat
from operator import itemgetter
from typing import Any, Callable, Hashable, Iterable, Iterator, NamedTuple, TypeVar

from . import ir
from .source import Span


class Resolved(NamedTuple):
    """A declaration together with the key of the module that declares it.
    Speed: a named tuple (one C call to build), made once per distinct reference."""

    module: str
    decl: ir.Decl


T = TypeVar("T")
_MISS = object()


class Analysis:
    """Symbol tables of every module of a program, built once, plus derived facts that several
    checks share (`memo`): the IR is frozen, so anything computed from it stays valid."""

    def __init__(self, program: ir.Program, misspelt: Iterable[Span] = (),
                 schema_errors: Iterable[Span] = (), attribute_errors: Iterable[Span] = ()):
        self.program = program
        self.modules: dict[str, ir.Module] = {m.key: m for m in program.modules}
        self.symbols: dict[str, dict[str, ir.Decl]] = {}
        self.aliases: dict[str, dict[str, str]] = {}
        for m in program.modules:
            table: dict[str, ir.Decl] = {}
            for d in m.decls:
                table.setdefault(d.name, d)  # first wins; duplicates are reported by checks
            self.symbols[m.key] = table
            self.aliases[m.key] = {i.alias: i.module for i in m.imports if i.module}
        self._resolved: dict[tuple, Resolved | None] = {}
        self._memo: dict[Hashable, Any] = {}
        self._by_kind: dict[type | None, list[tuple[str, ir.Decl]]] = {}
        self._misspelt = _holders(program, misspelt)
        self._attribute_errors = _holders(program, attribute_errors)
        self._schema_errors = tuple(schema_errors)

    def __getstate__(self) -> dict[str, Any]:
        # (pickled without `memo`: derived facts, recomputed on demand, some of them closures)
        return {**self.__dict__, "_memo": {}}

    def schema_reported(self, schema: ir.Schema) -> bool:
        """True when the front end reported a problem inside `schema` (AFP301: an unknown type
        or constraint, bounds that leave no value): the schema lowered without it is not the
        one meant, so judging values against it would only cascade (one root cause, one
        diagnostic)."""
        at = schema.span
        return any(s.file == at.file and at.start <= s.start < at.end for s in self._schema_errors)

    def misspelt(self, module: str, decl: ir.Decl) -> bool:
        """True when `decl` has an unknown attribute spelt like one that refers to others
        (AFP104, `tols` for `tools`; see `api._hides_references`): what it referred to is
        unknown, so rules about the declaration's references stay silent (one root cause, one
        diagnostic)."""
        return (module, decl.name) in self._misspelt

    def attribute_error(self, module: str, decl: ir.Decl) -> bool:
        """True when the front end rejected an attribute of `decl` (AFP104 unknown, or an AFP106
        error for its value: `pattern = [...]`, `keys = "password"`): the declaration lowered
        without it is not the one meant, so a rule judging it as a whole (AFP407 "does nothing")
        stays silent (one root cause, one diagnostic)."""
        return (module, decl.name) in self._attribute_errors

    def memo(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once per analysis for `key` (callers must not mutate the value)."""
        value = self._memo.get(key, _MISS)
        if value is _MISS:
            value = self._memo[key] = make()
        return value

    def resolve(self, module: str, ref: ir.Ref) -> Resolved | None:
        """The declaration `ref` names when written in `module`, or None."""
        hit = self._resolved.get((module, ref.alias, ref.name), _MISS)
        if hit is _MISS:
            hit = self._resolved[(module, ref.alias, ref.name)] = self._resolve(module, ref)
        return hit

    def _resolve(self, module: str, ref: ir.Ref) -> Resolved | None:
        target = module
        if ref.alias is not None:
            target = self.aliases.get(module, {}).get(ref.alias)
            if target is None:
                return None
        decl = self.symbols.get(target, {}).get(ref.name)
        return Resolved(target, decl) if decl is not None else None

    def lookup(self, module: str, ref: ir.Ref, kind: type) -> ir.Decl | None:
        """Like `resolve`, but only a declaration of class `kind` counts."""
        r = self.resolve(module, ref)
        return r.decl if r is not None and isinstance(r.decl, kind) else None

    def decls(self, kind: type | None = None) -> Iterator[tuple[str, ir.Decl]]:
        """(module key, declaration) for every declaration, optionally of one class.
        Speed: each class's list is built once (checks ask for the same classes again and
        again, each time scanning every declaration); the IR is frozen, so it stays valid."""
        found = self._by_kind.get(kind)
        if found is None:
            every = self._by_kind.get(None)
            if every is None:
                every = self._by_kind[None] = [(m.key, d) for m in self.program.modules
                                               for d in m.decls]
            # Speed: each further class filters that list in C (no Python step per declaration)
            found = every if kind is None else list(compress(
                every, map(isinstance, map(itemgetter(1), every), repeat(kind))))
            self._by_kind[kind] = found
        return iter(found)

    def root_decls(self, kind: type) -> list[ir.Decl]:
        return [d for d in self.program.root_module.decls if isinstance(d, kind)]


def _holders(program: ir.Program, spans: Iterable[Span]) -> frozenset[tuple[str, str]]:
    """(module key, declaration name) of the declarations holding one of `spans`."""
    found = set()
    for span in spans:
        for m in program.modules:
            if m.key != span.file:
                continue
            found.update((m.key, d.name) for d in m.decls
                         if _holds(d, span))
    return frozenset(found)


def _holds(decl: ir.Decl, span: Span) -> bool:
    whole = getattr(decl, "full_span", None) or decl.span
    return whole.start <= span.start < whole.end
