"""A judge backend and a strategy in a separate installed package (tests/fixtures/arena_plugin_fixture, installed into
a temporary folder) are found through their ``arena_verl.plugins`` entry points: the settings read the backend's own
key, and a routed group is judged inside a real Ray ``RefereeActor`` (another process) by that backend, scheduled by
that strategy (whose module only the entry points name), with no import of either and no ``reward.arena.plugins``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import paths
from helpers.ray_local import RAY_ENV

FIXTURE = paths.REPO / "tests" / "fixtures" / "arena_plugin_fixture"

RUN = r"""
import asyncio, json, os, sys
import ray
from arena_verl.actors.referee_actor import referee_handle
from arena_verl.core.judge_protocol import Trace
from arena_verl.core.referee import Submission
from arena_verl.settings import settings_from_config

assert not any(name.startswith("arena_plugin_fixture") for name in sys.modules)
config = {"reward": {"arena": {"mode": "arena", "group_size": 5, "referee_name": "plugin_referee",
                               "strategy": "fixture_round_robin", "group_deadline_s": 60.0,
                               "judge": {"backend": "fixture_length", "prefer": "shorter"}}}}
settings = settings_from_config(config)
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
try:
    actor = referee_handle(settings, "g")
    subs = [Submission(uid="g", sample_key=str(i), problem="p", trace=Trace("a" * n), verifier_reward=0.0)
            for i, n in enumerate((30, 10, 20, 40, 50))]
    verdicts = ray.get([actor.submit.remote(s) for s in subs], timeout=120)
    pid = ray.get(actor.__ray_call__.remote(lambda self: self.referee.judge.pid), timeout=60)
    print(json.dumps({"rewards": [v.reward for v in verdicts], "routes": [v.route for v in verdicts],
                      "calls": [v.judge_calls for v in verdicts],
                      "backend": ray.get(actor.judge_backend.remote()), "judge_pid": pid, "driver_pid": os.getpid(),
                      "options": repr(settings.judge.options)}))
finally:
    ray.shutdown()
"""


def test_an_installed_plugin_backend_judges_inside_a_ray_referee_actor(tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(FIXTURE)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["options"] == "FixtureOptions(prefer='shorter')"  # its own key, read by the settings
    assert out["backend"] == "fixture_length" and out["judge_pid"] != out["driver_pid"]  # built in the actor
    assert out["routes"] == [1] * 5  # the non-diverse group went to the tournament
    assert out["calls"] == [10] * 5  # the plugin's round robin: every pair of 5 (live would make 9)
    rewards = out["rewards"]
    assert (
        rewards[1] > rewards[2] > rewards[0] > rewards[3] > rewards[4]
    )  # the shortest wins: the key reached the judge
