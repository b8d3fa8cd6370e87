"""Shared test options: `--update-goldens` (or AFP_UPDATE=1) rewrites golden files for review."""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite golden files from the current output (then review the diff)")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens") or os.environ.get("AFP_UPDATE"))
