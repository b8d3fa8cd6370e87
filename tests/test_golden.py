"""Golden diagnostics: each `tests/golden/{syntax,check}/NAME.afp` next to `NAME.diagnostics.txt`."""
from __future__ import annotations

from pathlib import Path

import pytest

from golden_util import compare, diagnostics_text

ROOT = Path(__file__).parent / "golden"
CASES = sorted(p for stage in ("syntax", "check") for p in (ROOT / stage).glob("*.afp"))


@pytest.mark.parametrize("spec", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_diagnostics(spec: Path, update_goldens: bool) -> None:
    text, _ = diagnostics_text(spec)
    compare(spec.with_suffix(".diagnostics.txt"), text, update_goldens)
