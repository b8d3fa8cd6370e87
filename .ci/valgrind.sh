#!/usr/bin/env bash
# Installs Debian's `valgrind` (instruction counts: tests/test_bench_instructions.py) when missing.
# Called by .ci/run; safe to run again (does nothing when valgrind is already there).
set -euo pipefail
if command -v valgrind >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends valgrind >/dev/null
command -v valgrind >/dev/null
