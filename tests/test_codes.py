"""The code registry and the golden corpus stay in step."""
from __future__ import annotations

import re
from pathlib import Path

from afp_dsl.codes import REGISTRY

ROOT = Path(__file__).parent / "golden"
RUNTIME_ONLY = {"AFP501", "AFP502"}  # raised while running, covered by the interpreter's tests


def golden_codes() -> set[str]:
    codes: set[str] = set()
    for f in ROOT.rglob("*.diagnostics.txt"):
        codes |= set(re.findall(r"(?:error|warning|note)\[(AFP\d{3})\]", f.read_text(encoding="utf-8")))
    return codes


def test_every_registered_code_has_a_golden() -> None:
    missing = sorted(set(REGISTRY) - golden_codes() - RUNTIME_ONLY)
    assert not missing, f"codes without a golden test: {missing}"


def test_every_emitted_code_is_registered() -> None:
    unknown = sorted(golden_codes() - set(REGISTRY))
    assert not unknown, f"goldens show unregistered codes: {unknown}"


def test_code_ids_and_names_are_well_formed() -> None:
    names = set()
    for code in REGISTRY.values():
        assert re.fullmatch(r"AFP\d{3}", code.id)
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", code.name)
        assert code.name not in names
        names.add(code.name)
        assert code.explanation and code.summary


def test_registry_is_in_code_order() -> None:
    """`afpc explain`'s table in docs/diagnostics.md follows the registry: keep it sorted by code
    (AFP307 once sat before AFP306)."""
    assert list(REGISTRY) == sorted(REGISTRY)


def test_unreachable_summary_says_over_any_route() -> None:
    """AFP202 is reported only when no route at all, bare ones included, reaches the skill (a skill
    reached through a bare route is AFP203); its summary once said "no deterministic path"."""
    assert "deterministic" not in REGISTRY["AFP202"].summary
    assert "any route" in REGISTRY["AFP202"].explanation
