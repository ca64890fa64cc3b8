"""The step-time model (scripts/bench/step_time.py): properties a correct model must have, on small settings."""

import dataclasses
import json
import math
import subprocess
import sys
import time

import pytest

from arena_verl.core.tournament import LiveScheduler, live_call_count, round_robin_call_count
from helpers import paths
from helpers.scripts import load_script

ROOT = paths.REPO
SCRIPT = ROOT / "scripts" / "bench" / "step_time.py"


st = load_script("bench/step_time.py", "step_time")
SCHEDULES = [st.WAIT_ROUND_ROBIN, st.LIVE, st.INFO_GAIN, st.parse_adaptive("live:0.83:1")]
ARENA = [f"arena_{s.name}" for s in SCHEDULES]

# A small cluster with the default's shape: 64 prompts on 2 rollout engines, a judge that is busy but not swamped.
SMALL = st.Params(
    prompts=64,
    group_size=8,
    rollout_engines=2,
    judge_engines=1,
    judge_tokens_per_s=3000.0,
    judge_prefill_tokens_per_s=30000.0,
    judge_concurrency=32,
    repeats=3,
)


def by_method(records):
    return {r["method"]: r for r in records}


def free_judge(params):
    return dataclasses.replace(params, judge_tokens_per_s=math.inf, judge_prefill_tokens_per_s=math.inf)


def test_live_schedule_starts_the_calls_the_live_scheduler_makes_on_each_arrival():
    for n in (2, 3, 4, 5, 8, 16):
        scheduler = LiveScheduler(n)
        per_arrival = [len(scheduler.on_arrival(i)) for i in range(n)]
        early, rounds = st.LIVE.plan(n)
        assert early == per_arrival[:-1] and rounds == [per_arrival[-1]]
        assert sum(early) + sum(rounds) == live_call_count(n)
    assert st.WAIT_ROUND_ROBIN.plan(8) == ([0] * 7, [round_robin_call_count(8)])


def test_a_schedule_is_its_three_numbers():
    early, rounds = st.Schedule("x", 20, 0.5, 2).plan(8)
    assert sum(early) == 10 and rounds == [5, 5]
    assert all(calls <= i for i, calls in enumerate(early))  # arrival i has only i opponents
    early, rounds = st.parse_adaptive("12:1:0").plan(8)
    assert sum(early) == 12 and rounds == []
    with pytest.raises(ValueError, match="0 rounds"):
        st.parse_adaptive("live:0.5:0").plan(8)
    for bad in ("live:0.5", "many:0.5:1", "live:1.5:1", "live:0.5:-1"):
        with pytest.raises(ValueError, match="--adaptive"):
            st.parse_adaptive(bad)


def test_processor_sharing_rollout_conserves_work():
    # One engine, every sequence running at once, no per-sequence cap: the step lasts exactly tokens / throughput.
    params = dataclasses.replace(
        SMALL, rollout_engines=1, rollout_max_seqs=10_000, rollout_stream_tokens_per_s=math.inf, repeats=1
    )
    stream = st.PromptStream(params, st.np.random.default_rng(3))
    rollout = st.simulate_rollout(params, stream, dapo=False)
    total_tokens = stream.lengths[: params.prompts].sum()
    assert rollout.end_s == pytest.approx(total_tokens / params.rollout_tokens_per_s, rel=1e-9)
    # With a per-sequence cap the longest response cannot finish sooner than its length at that speed.
    capped = dataclasses.replace(params, rollout_stream_tokens_per_s=50.0)
    rollout = st.simulate_rollout(capped, st.PromptStream(capped, st.np.random.default_rng(3)), dapo=False)
    assert rollout.end_s >= stream.lengths[: params.prompts].max() / 50.0 - 1e-9


def test_without_non_diverse_groups_every_method_costs_the_same_except_judge_calls():
    records = by_method(st.run_model(dataclasses.replace(SMALL, alpha=0.0), SCHEDULES))
    rlvr = records["rlvr"]
    for name, record in records.items():
        assert record["step_time_s"] == pytest.approx(rlvr["step_time_s"], rel=1e-12), name
        assert record["generations"] == rlvr["generations"] == SMALL.prompts * SMALL.group_size
        assert record["reward_tail_s"] == pytest.approx(0.0, abs=1e-9)
        assert record["judge_calls_wasted"] == record["judge_calls"]  # only speculation on groups that turn diverse
    assert records["arena_live"]["judge_calls"] > 0 and records["arena_wait_round_robin"]["judge_calls"] == 0


@pytest.mark.parametrize("alpha", [0.3, 0.6])
def test_dapo_generations_grow_like_b_n_over_one_minus_alpha(alpha):
    # With one refill per evicted group, DAPO draws prompts until B diverse ones: B / (1 - alpha) in expectation
    # (negative binomial). verl's V1 sync trainer refills two, which over-samples further.
    params = dataclasses.replace(SMALL, alpha=alpha, group_size=4, dapo_refill_factor=1, repeats=40)
    records = by_method(st.run_model(params, []))
    expected = params.prompts * params.group_size / (1 - alpha)
    assert records["rlvr_dapo"]["generations"] == pytest.approx(expected, rel=0.06)
    double = by_method(st.run_model(dataclasses.replace(params, dapo_refill_factor=2, repeats=10), []))
    assert double["rlvr_dapo"]["generations"] > 1.05 * expected
    assert double["rlvr_dapo"]["rollout_s"] < records["rlvr_dapo"]["rollout_s"]  # bought with generations


def test_dapo_stops_refilling_once_b_diverse_groups_are_done_and_trains_on_those():
    params = dataclasses.replace(SMALL, alpha=0.5)
    stream = st.PromptStream(params, st.np.random.default_rng(7))
    rollout = st.simulate_rollout(params, stream, dapo=True)
    done_s = {j: times.max() for j, times in rollout.finish.items()}
    diverse = sorted((j for j in done_s if not stream.uniform[j]), key=done_s.get)
    assert rollout.kept == diverse[: params.prompts]
    assert max(rollout.dispatched_s.values()) <= done_s[diverse[params.prompts - 1]]
    assert len(diverse) > params.prompts  # the drained surplus, generated and thrown away
    assert rollout.end_s == max(done_s.values())
    assert rollout.generations == len(rollout.finish) * params.group_size


def test_rounds_after_the_last_trace_run_one_after_another():
    # A judge with room for every call, each call stream-bound: a round lasts exactly the fastest call.
    params = dataclasses.replace(
        SMALL, alpha=0.99, judge_tokens_per_s=1e9, judge_prefill_tokens_per_s=1e9, judge_concurrency=math.inf
    )
    fastest = params.judge_call_min_s()
    for rounds in (1, 3):
        schedule = st.Schedule(f"r{rounds}", 12, 0.0, rounds)
        tail = by_method(st.run_model(params, [schedule]))[f"arena_r{rounds}"]["reward_tail_s"]
        assert tail == pytest.approx(rounds * fastest, rel=0.02)


def test_arena_with_an_infinitely_fast_judge_steps_like_rlvr():
    records = by_method(st.run_model(free_judge(SMALL), SCHEDULES))
    for name in ARENA:
        assert records[name]["step_time_s"] == pytest.approx(records["rlvr"]["step_time_s"], rel=1e-12), name
        assert records[name]["reward_tail_s"] == pytest.approx(0.0, abs=1e-9)
    # ... and with the default judge the arena pays a tail, and DAPO pays generations.
    slow = by_method(st.run_model(SMALL, SCHEDULES))
    assert all(slow[name]["reward_tail_s"] > 0 for name in ARENA)
    assert slow["rlvr_dapo"]["generations"] > 1.5 * slow["rlvr"]["generations"]


@pytest.mark.parametrize("judge_scale", [0.5, 1.0, 4.0])
def test_live_tail_is_no_longer_than_waiting_for_the_group(judge_scale):
    params = dataclasses.replace(
        SMALL,
        judge_tokens_per_s=SMALL.judge_tokens_per_s * judge_scale,
        judge_prefill_tokens_per_s=SMALL.judge_prefill_tokens_per_s * judge_scale,
    )
    records = by_method(st.run_model(params, [st.WAIT_ROUND_ROBIN, st.LIVE]))
    assert records["arena_live"]["reward_tail_s"] <= records["arena_wait_round_robin"]["reward_tail_s"]


def test_speculation_shortens_the_tail_at_the_same_calls():
    # Live against the same 3N-6 calls started only once the group is complete (the issue's `wait_live`).
    wait_live = st.Schedule("wait_live", live_call_count, 0.0, 1)
    records = by_method(st.run_model(SMALL, [st.LIVE, wait_live]))
    assert records["arena_live"]["reward_tail_s"] < 0.8 * records["arena_wait_live"]["reward_tail_s"]
    assert records["arena_wait_live"]["judge_calls_wasted"] == 0 < records["arena_live"]["judge_calls_wasted"]
    # Same prompts, same budget: the calls that produced rewards are the same in number.
    live = records["arena_live"]
    assert live["judge_calls"] - live["judge_calls_wasted"] == records["arena_wait_live"]["judge_calls"]


def test_speculative_calls_still_queued_when_a_group_turns_diverse_are_dropped():
    # Every group diverse, one call at a time, each call far longer than rollout: the first call started is still
    # running when every group has shown a disagreement, so almost nothing else may start.
    params = dataclasses.replace(
        SMALL, alpha=0.0, judge_concurrency=1, judge_tokens_per_s=0.1, judge_prefill_tokens_per_s=1.0, repeats=1
    )
    live = by_method(st.run_model(params, [st.LIVE]))["arena_live"]
    assert 1 <= live["judge_calls"] == live["judge_calls_wasted"] <= 2


def test_step_time_does_not_grow_with_judge_throughput():
    previous = None
    for scale in (0.25, 0.5, 1.0, 2.0, 8.0):
        params = dataclasses.replace(
            SMALL,
            judge_tokens_per_s=SMALL.judge_tokens_per_s * scale,
            judge_prefill_tokens_per_s=SMALL.judge_prefill_tokens_per_s * scale,
        )
        times = {r["method"]: r["step_time_s"] for r in st.run_model(params, SCHEDULES)}
        if previous is not None:
            for name in ARENA:
                assert times[name] <= previous[name] * (1 + 1e-9), (name, scale)
        previous = times
    assert previous["arena_wait_round_robin"] < 2 * previous["rlvr"]


def test_bad_parameters_name_the_option():
    for field, value, option in (("alpha", 1.0, "--alpha"), ("judge_engines", 0, "--judge-engines")):
        with pytest.raises(ValueError, match=option):
            st.run_model(dataclasses.replace(SMALL, **{field: value}), SCHEDULES)
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--adaptive", "live:2:1"], cwd=ROOT, capture_output=True, text=True
    )
    assert completed.returncode == 2 and "--adaptive" in completed.stderr


def test_cli_quick_writes_one_record_per_method(tmp_path):
    out = tmp_path / "step_time.json"
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    assert time.monotonic() - started < 30
    assert "MODEL" in completed.stdout and "NOT a measurement" in completed.stdout
    records = json.loads(out.read_text())
    assert [r["method"] for r in records] == ["rlvr", "rlvr_dapo", *ARENA]
    for record in records:
        assert tuple(record) == st.RECORD_KEYS
        assert record["step_time_s"] > record["actor_update_s"] > 0
        assert "not a measurement" in record["source"]
        assert record["parameters"]["prompts"] == st.Params().prompts // 8
    claims = by_method(records)
    assert claims["arena_live"]["paper_step_time_vs_dapo"] == list(st.PAPER_STEP_TIME_VS_DAPO)
    assert claims["rlvr"]["paper_step_time_vs_dapo"] is None
    assert claims["rlvr_dapo"]["step_time_vs_dapo"] == 0.0
    for name in ("rlvr", *ARENA):
        assert f"| {name} |" in completed.stdout
