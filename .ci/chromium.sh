#!/usr/bin/env bash
# Installs Debian's `chromium` (headless browser for tests/test_report_html.py) when it is missing.
# Called by .ci/run; safe to run again (does nothing when chromium is already there).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium >/dev/null
