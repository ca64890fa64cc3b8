"""Where things are, for tests in any tier folder."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
CONFIGS = REPO / "configs"
SCRIPTS = REPO / "scripts"
TEST_DATA = TESTS / "data"
