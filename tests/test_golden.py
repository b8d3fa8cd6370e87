"""Golden files: each `tests/golden/{syntax,check}/NAME.afp` next to `NAME.diagnostics.txt`, and
each `tests/golden/fmt/NAME.afp` next to `NAME.fmt.afp` (what `afpc fmt` makes of it)."""
from __future__ import annotations

from pathlib import Path

import pytest
from golden_util import HEADER, compare, diagnostics_text

from afp_dsl.fmt import format_source

ROOT = Path(__file__).parent / "golden"
CASES = sorted(p for stage in ("syntax", "check") for p in (ROOT / stage).glob("*.afp"))
FMT_CASES = sorted(p for p in (ROOT / "fmt").glob("*.afp") if not p.name.endswith(".fmt.afp"))


@pytest.mark.parametrize("spec", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_diagnostics(spec: Path, update_goldens: bool) -> None:
    text, _ = diagnostics_text(spec)
    compare(spec.with_suffix(".diagnostics.txt"), text, update_goldens)


@pytest.mark.parametrize("spec", FMT_CASES, ids=lambda p: f"fmt/{p.stem}")
def test_golden_fmt(spec: Path, update_goldens: bool) -> None:
    out = format_source(spec.read_text(encoding="utf-8"), spec.name)
    golden = spec.with_suffix(".fmt.afp")
    compare(golden, out, update_goldens)
    assert format_source(out) == out  # the golden is itself formatted
    assert golden.read_text(encoding="utf-8") == format_source(HEADER + out)
