"""examples/README.md's gallery: the commands of each row's `try` column run as the page says.

Each row's commands run in order, in a copy of the repository's examples, with the installed
`afpc`: exit 0, except an `afpc run` that the row follows with "then `afpc resume RUN ...`" (the
run pauses: exit 3), whose RUN is then the id that run printed. tests/test_docs_commands.py runs
the page's ```sh block; this covers the table, which has no code block.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from test_docs_commands import ROOT, _afpc_installed, _env, _workspace

PAGE = ROOT / "examples" / "README.md"
COMMAND = re.compile(r"`(afpc [^`]+)`")
RUN_ID = re.compile(r"\brun (run-[0-9a-f]+): ")


def rows() -> list[tuple[str, list[str]]]:
    """(example, its `try` commands) for each row of the gallery table."""
    out = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"^\| \[(\w+)\]\(", line)
        if found:
            out.append((found.group(1), COMMAND.findall(line.rstrip().rstrip("|").rsplit("|", 1)[1])))
    return out


def expected_exit(commands: list[str], i: int) -> int:
    paused = commands[i].startswith("afpc run ") and i + 1 < len(commands) and \
        commands[i + 1].startswith("afpc resume RUN ")
    return 3 if paused else 0


def test_the_gallery_is_read():
    found = dict(rows())
    assert len(found) >= 10 and all(found.values()), found
    assert expected_exit(found["incident_triage"], 1) == 3
    assert expected_exit(found["support"], 1) == 0


@pytest.mark.skipif(not _afpc_installed(), reason="the `afpc` command is not installed")
@pytest.mark.parametrize("example,commands", rows(), ids=[name for name, _ in rows()])
def test_try_commands_run(example: str, commands: list[str], tmp_path: Path):
    cwd, env = _workspace(tmp_path), _env()
    run_id = None
    for i, command in enumerate(commands):
        if "RUN" in command.split():
            assert run_id, f"{example}: `{command}` follows no run that printed its id"
            command = command.replace(" RUN ", f" {run_id} ")
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True, timeout=180,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        expect = expected_exit(commands, i)
        assert proc.returncode == expect, \
            f"{example}: `{command}` exited {proc.returncode}, not {expect}\n{proc.stdout[-3000:]}"
        found = RUN_ID.search(proc.stdout)
        run_id = found.group(1) if found else run_id
