"""`python -m afp_dsl ...`: the `afpc` command line, for an environment whose scripts folder is
not on PATH (`afpc` is the same `cli.main`).

Role:       runs `cli.main` with the program name `afpc` in usage and error lines.
Invariants: nothing but the command line's own behaviour (arguments, output, exit codes).
"""
from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main(prog_name="afpc")
