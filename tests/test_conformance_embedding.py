"""The embedding API as a host program sees it (tooling.md §6: "Public names are few, typed,
documented, and stable"): a type checker reads the real types of the public names, not `Any`.
Each test here failed before the fix it pins (the embedding-API audit).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import afp_dsl as afp

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "support" / "support.afp"


# ---------------------------------------------------------------- typing (tooling.md §6)
def _type_checked_names() -> set[str]:
    """The names `afp_dsl/__init__.py` imports under `if TYPE_CHECKING:`."""
    tree = ast.parse((ROOT / "afp_dsl" / "__init__.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in ast.walk(node):
                if isinstance(imp, ast.ImportFrom):
                    names.update(a.asname or a.name for a in imp.names)
    return names


def test_every_lazily_imported_public_name_is_visible_to_type_checkers():
    """The package imports its names on first use (a module `__getattr__` typed `-> Any`); a
    type checker sees only what is imported under `TYPE_CHECKING`, so every public name is."""
    lazy = set(afp.__dict__["_LAZY"])
    assert lazy - _type_checked_names() == set()
    assert lazy | {"Span", "__version__"} == set(afp.__all__)


def _mypy(source: str, tmp_path: Path) -> str:
    pytest.importorskip("mypy")
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "cache"), "--no-error-summary",
                           str(script)], capture_output=True, text=True, cwd=tmp_path, env=env)
    return done.stdout


def test_a_host_script_is_type_checked_against_the_real_signatures(tmp_path):
    """Before: every public name read as `Any` (no error for `agent.run(5)`, no types on
    results), and `Diagnostic(...)`/`Label(...)` took no arguments for a type checker."""
    out = _mypy(f"""
        import afp_dsl as afp
        program = afp.load({str(SPEC)!r})
        reveal_type(program)
        agent = program.agent("support", provider=afp.providers.mock(["hi"]),
                              store=afp.stores.sqlite("runs.db"))
        result = agent.run("hello")
        reveal_type(result)
        reveal_type(result.answer)
        reveal_type(result.why())
        label = afp.Label(afp.Span("f.afp", 0, 1), "here", True)
        d = afp.Diagnostic("AFP101", afp.Severity.ERROR, "unknown", (label,), ("n",), "help")
        d2 = afp.Diagnostic(code="AFP101", severity=afp.Severity.ERROR, message="m")
        reveal_type(d.labels[0].span.start)
        agent.run(5)
        """, tmp_path)
    lines = out.splitlines()
    assert any('Revealed type is "afp_dsl.api.Program"' in x for x in lines), out
    assert any('Revealed type is "afp_dsl.results.RunResult"' in x for x in lines), out
    assert any('Revealed type is "str | None"' in x for x in lines), out
    assert any('Revealed type is "int"' in x for x in lines), out
    errors = [x for x in lines if ": error:" in x]
    assert len(errors) == 1 and '"run" of "Agent" has incompatible type "int"' in errors[0], out
