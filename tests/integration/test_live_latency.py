"""The SIMULATED judge's log-normal call latency (judge.sim_latency_sigma) and the live-latency benchmark
(scripts/bench/live_latency.py): its step plans follow the protocol, and a tiny run through real Ray referee actors
writes the documented records and leaves no Ray process behind."""

import asyncio
import json
import math
import time

import numpy as np
import psutil
import pytest
from omegaconf import OmegaConf

from arena_verl.judge import Trace, make_judge
from arena_verl.judge.simulated.trace_judge import SimulatedTraceJudge
from arena_verl.settings import judge_settings, settings_from_config
from helpers.scripts import load_script


def test_lognormal_latency_has_the_configured_mean_and_sigma():
    judge = SimulatedTraceJudge(latency_s=0.5, latency_sigma=0.3, seed=7)
    draws = np.array([judge.draw_latency() for _ in range(40_000)])
    assert draws.mean() == pytest.approx(0.5, rel=0.01)  # the mean is the unit, not the median
    assert np.log(draws).std() == pytest.approx(0.3, rel=0.02)
    assert np.median(draws) == pytest.approx(0.5 * math.exp(-(0.3**2) / 2), rel=0.01)


def test_sigma_zero_keeps_the_exponential_latency():
    judge = SimulatedTraceJudge(latency_s=0.5, seed=7)
    draws = np.array([judge.draw_latency() for _ in range(40_000)])
    assert draws.mean() == pytest.approx(0.5, rel=0.02)
    assert draws.std() / draws.mean() == pytest.approx(1.0, abs=0.03)  # exponential: sd = mean
    assert SimulatedTraceJudge(latency_s=0.0, latency_sigma=0.3).draw_latency() == 0.0


def test_a_call_waits_the_drawn_latency(monkeypatch):
    slept = []

    async def fake_sleep(delay):
        slept.append(delay)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    judge = SimulatedTraceJudge(latency_s=2.0, latency_sigma=0.3, seed=1)
    expected = SimulatedTraceJudge(latency_s=2.0, latency_sigma=0.3, seed=1)
    expected.rng.random(3)  # compare() draws its verdict's numbers first
    outcome = asyncio.run(judge.compare("p", Trace("a", quality_hint=1.0), Trace("b", quality_hint=0.0)))
    assert outcome in (0.0, 1.0) and slept == [pytest.approx(expected.draw_latency())]


def test_make_judge_passes_the_latency_sigma():
    judge = make_judge(judge_settings(sim_latency_s=0.1, sim_latency_sigma=0.3))
    assert (judge.latency_s, judge.latency_sigma) == (0.1, 0.3)


@pytest.mark.parametrize(
    "sigma, message",
    [
        (-0.1, r"reward\.arena\.judge\.sim_latency_sigma must be in \[0, 3\]"),
        (3.5, r"reward\.arena\.judge\.sim_latency_sigma must be in \[0, 3\]"),
        (float("nan"), r"reward\.arena\.judge\.sim_latency_sigma must be a finite number"),
        ("wide", r"reward\.arena\.judge\.sim_latency_sigma must be of type float"),
    ],
)
def test_latency_sigma_is_validated(sigma, message):
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"n": 8}}, "reward": {"arena": {"judge": {}}}})
    config.reward.arena.judge.sim_latency_sigma = sigma
    with pytest.raises(ValueError, match=message):
        settings_from_config(config)


def test_latency_sigma_is_read():
    config = {"actor_rollout_ref": {"rollout": {"n": 8}}, "reward": {"arena": {"judge": {"sim_latency_sigma": 0.3}}}}
    assert settings_from_config(OmegaConf.create(config)).judge.options.sim_latency_sigma == 0.3
    with pytest.raises(ValueError, match="latency_sigma"):
        SimulatedTraceJudge(latency_s=1.0, latency_sigma=-1.0)


def test_step_plans_follow_the_protocol():
    bench = load_script("bench/live_latency.py", "live_latency_bench")
    plans = bench.plan_step(seed=0, n=8, groups=64, step=3)
    assert plans == bench.plan_step(seed=0, n=8, groups=64, step=3)  # every strategy sees the same step
    assert plans != bench.plan_step(seed=0, n=8, groups=64, step=4)
    uniform = [p for p in plans if len(set(p.rewards)) == 1]
    assert len(uniform) == 32 and sorted(p.rewards[0] for p in uniform) == [0.0] * 16 + [1.0] * 16
    assert all(set(p.rewards) == {0.0, 1.0} for p in plans if p not in uniform)
    arrivals = np.log([t for p in plans for t in p.arrival_units])
    assert math.exp(np.median(arrivals)) == pytest.approx(20.0, rel=0.15)
    assert arrivals.std() == pytest.approx(0.6, rel=0.15)
    quality = np.array([q for p in plans for q in p.quality])
    assert quality.std() == pytest.approx(1.6, rel=0.15)


def test_a_tiny_run_writes_the_records_and_stops_ray(tmp_path):
    import ray

    bench = load_script("bench/live_latency.py", "live_latency_bench")
    out = tmp_path / "live_latency.json"
    labels = ["wait_round_robin", "live", "info_gain"]
    argv = ["--steps", "2", "--control-steps", "1", "--shapes", "4x4", "--unit", "0.01"]
    bench.main([*argv, "--strategies", ",".join(labels), "--json", str(out)])

    records = json.loads(out.read_text())
    assert [r["strategy"] for r in records] == labels and all(r["n"] == 4 and r["steps"] == 2 for r in records)
    for r in records:
        assert set(bench.RECORD_KEYS) <= set(r)
        assert 0 <= r["tail_p50"] <= r["tail_p95"] <= r["tail_max"]
        assert 0 <= r["wasted_share"] <= 1 and -1 <= r["kendall_tau"] <= 1
        assert r["calls_per_routed_group"] == 6  # at N=4 live's 3N-6 = the round robin's N(N-1)/2 = 6
    # Waiting strategies never judge before a group is complete: nothing to waste.
    assert records[0]["wasted_share"] == 0

    assert not ray.is_initialized()
    deadline = time.monotonic() + 15
    while (left := psutil.Process().children(recursive=True)) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not left, f"processes left after the benchmark: {[' '.join(p.cmdline())[:80] for p in left]}"
