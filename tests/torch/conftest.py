"""What every real-PyTorch test needs: the fr-analyze binary under test."""

import os

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FR_ANALYZE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set FR_ANALYZE_CLI to the built fr-analyze (scripts/test.sh does)")
    return path
