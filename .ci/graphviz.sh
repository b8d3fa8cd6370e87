#!/usr/bin/env bash
# Installs Debian's `graphviz` (DOT export read by Graphviz: tests/test_graph_audit_export.py) when missing.
# Called by .ci/run; safe to run again (does nothing when graphviz is already there).
set -euo pipefail
if command -v dot >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends graphviz >/dev/null
command -v dot >/dev/null
