"""Layering rules of docs/architecture.md, checked on the source: who may import what."""
from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "afp_dsl"
DOC = PKG.parent / "docs" / "architecture.md"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_only_the_front_end_imports_lark() -> None:
    allowed = {"parser.py", "parse_errors.py", "parse_chars.py", "parse_mistakes.py", "lower.py", "lower_values.py", "lower_schema.py", "lower_tests.py"}
    offenders = [p.name for p in modules() if "lark" in imports_of(p) and p.name not in allowed]
    assert not offenders, f"lark imported outside the front end: {offenders}"


def test_only_cli_modules_import_click() -> None:
    offenders = [p.name for p in modules() if "click" in imports_of(p) and not p.name.startswith("cli")]
    assert not offenders, f"click imported outside the CLI: {offenders}"


def test_the_core_reads_no_wall_clock_or_randomness() -> None:
    pattern = re.compile(r"\b(time\.time|time\.monotonic|datetime\.now|datetime\.utcnow|random\.|uuid\.uuid)")
    allowed = {"effects.py"}  # the one injectable boundary
    offenders = [p.name for p in modules()
                 if p.name not in allowed and not p.name.startswith("cli") and p.parent.name != "providers"
                 and pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"wall clock or randomness outside effects: {offenders}"


def test_every_module_has_a_header() -> None:
    missing = [str(p.relative_to(PKG)) for p in modules()
               if p.stat().st_size and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert not missing, f"modules without a docstring header: {missing}"


def test_the_architecture_doc_names_only_real_modules() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`(afp_dsl/[\w/]+\.py)`", text))
    assert named, "docs/architecture.md should name the modules it describes"
    missing = sorted(n for n in named if not (PKG.parent / n).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_the_architecture_doc_names_every_module() -> None:
    """The doc matches the code both ways: a new module gets its row."""
    named = set(re.findall(r"`(afp_dsl/[\w/]+\.py)`", DOC.read_text(encoding="utf-8")))
    unnamed = sorted(str(p.relative_to(PKG.parent)) for p in modules()
                     if p.name != "__init__.py" and str(p.relative_to(PKG.parent)) not in named)
    assert not unnamed, f"modules without a row in docs/architecture.md: {unnamed}"


def test_the_architecture_doc_names_every_data_file() -> None:
    """The grammar and the shipped schemas are parts of the pipeline too: the doc named no
    data file, not even `grammar/afp.lark`, the normative grammar the parser falls back on."""
    text = DOC.read_text(encoding="utf-8")
    root = PKG.parent
    data = sorted((root / "grammar").glob("*.lark")) + sorted(PKG.rglob("*.json"))
    unnamed = [str(p.relative_to(root)) for p in data if f"`{p.relative_to(root).as_posix()}`" not in text]
    assert not unnamed, f"data files without a row in docs/architecture.md: {unnamed}"
    assert "`stdlib/*.afp`" in text
