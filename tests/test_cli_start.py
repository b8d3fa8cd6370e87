"""A cold `afpc check` of a clean spec file imports only what checking it needs.

Each module listed here was once on that path (or could creep back with one eager import) and
costs start-up time (bench/cli_start.py) for nothing: the interpreter and the store, the other
output formats, the fallback parser, JSON Schema, `pathlib` (with `urllib.parse` and
`ipaddress`), the package-metadata and resource machinery.
"""
from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli_start import SPEC

ROOT = Path(__file__).resolve().parent.parent

NEVER = ["lark", "jsonschema", "pathlib", "urllib.parse", "ipaddress", "tempfile", "zipfile",
         "importlib.resources", "importlib.metadata", "difflib", "afp_dsl.render_text",
         "afp_dsl.render_machine", "afp_dsl.serde", "afp_dsl.interp", "afp_dsl.runner",
         "afp_dsl.store", "afp_dsl.graph_export", "afp_dsl.cli_run", "afp_dsl.cli_resume", "afp_dsl.cli_test", "afp_dsl.cli_trace"]

# The interpreter starts without `site` (`-S`): a start-up hook of its site folders may import
# `pathlib` itself. The project and the site folders are on the path as plain folders, as in
# bench/cli_start.py's hook-free interpreter; what counts is what `afpc check` adds.
SCRIPT = """
import json, sys
before = set(sys.modules)
from afp_dsl.cli import main
sys.argv = ["afpc", "check"] + sys.argv[1:]
try:
    main()
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "added": sorted(set(sys.modules) - before)}))
"""


def check_imports(*args: str) -> tuple[int, set[str]]:
    folders = [str(ROOT)] + site.getsitepackages()
    folders += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(folders)}
    proc = subprocess.run([sys.executable, "-S", "-c", SCRIPT, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["code"], set(out["added"])


@pytest.mark.parametrize("fmt", ["text", "short"])
def test_a_clean_check_imports_nothing_it_does_not_use(tmp_path, fmt) -> None:
    spec = tmp_path / "support.afp"
    spec.write_text(SPEC, encoding="utf-8")
    code, added = check_imports(str(spec), "--format", fmt)
    assert code == 0
    assert "afp_dsl.checks" in added  # (the check did run)
    assert not added & set(NEVER), sorted(added & set(NEVER))


def test_a_check_with_findings_still_draws_them(tmp_path) -> None:
    spec = tmp_path / "bad.afp"
    spec.write_text("agent a { graph = nowhere }\n", encoding="utf-8")
    code, added = check_imports(str(spec))
    assert code == 1 and "afp_dsl.render_text" in added
    assert not added & {"lark", "pathlib", "jsonschema"}
