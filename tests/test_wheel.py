"""The built wheel carries the grammar and the standard library: install it into a fresh virtual
environment and check a spec that imports `std/...` from outside the source tree."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SPEC = '''import "std/redact" as std_redact

agent support {
  system = "You help."
  redact = [std_redact.secrets]
}
'''

BROKEN = '''import "std/redact" as std_redact

agent support { redact = [std_redact.secretz] }
'''


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(900)
def test_wheel_installs_and_checks_a_stdlib_import(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                 cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(dist.glob("afp_dsl-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # a clean environment: the wheel and its declared dependencies only (from the package index)
    installed = _run([str(py), "-m", "pip", "install", "--quiet", str(wheel)], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "spec.afp").write_text(SPEC)
    (work / "broken.afp").write_text(BROKEN)
    afpc = env_dir / "bin" / "afpc"
    where = _run([str(py), "-c", "import afp_dsl, afp_dsl.resources as r; print(afp_dsl.__file__); "
                  "print(r.data_dir('stdlib'))"], cwd=work)
    assert str(ROOT) not in where.stdout, "the installed package must not read the source tree"
    ok = _run([str(afpc), "check", "spec.afp"], cwd=work)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _run([str(afpc), "check", "--format", "short", "broken.afp"], cwd=work)
    assert bad.returncode == 1 and "AFP101" in bad.stdout, bad.stdout + bad.stderr
