"""The recipes' early check of a replica list (recipes/lib/experiment.sh ``_check_urls``, before the judge is waited
for) refuses exactly the lists the judge's settings refuse as naming one replica twice (core/urls.py)."""

import subprocess

import pytest

from arena_verl.core.urls import repeated_servers
from helpers import paths

LISTS = [
    "http://a:8000/v1,http://b:8000/v1",
    "http://a:8000/v1,http://a:8000/v1",
    "http://a:8000,http://a:8000/v1",
    "http://a:8000/v1/,http://a:8000",
    "http://a:8000//,http://a:8000/v1",
    "http://a:8000/v1,http://a:8000/v2",
    "http://a:8000/v1,http://a:8001/v1,http://a:8000/",
    "http://a:8000/v1/v1,http://a:8000/v1",
]


@pytest.mark.parametrize("urls", LISTS)
def test_the_shell_check_and_the_settings_rule_agree(urls):
    body = paths.REPO / "recipes" / "lib" / "experiment.sh"
    result = subprocess.run(["bash", "-c", f"source {body}; _check_urls JUDGE_URL '{urls}'"], capture_output=True,
                            text=True, timeout=30)  # fmt: skip
    repeated = repeated_servers(urls.split(","))
    assert (result.returncode == 2) == bool(repeated), result.stderr
    if repeated:
        assert f"names the replica {repeated[0]} twice" in result.stderr
