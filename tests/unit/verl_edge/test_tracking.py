"""The tracker reader: per-step deltas summed over shards, a restarted referee, an unreachable one."""

import ray

from arena_verl.settings import arena_settings
from arena_verl.verl_edge import tracking


class _Method:
    def __init__(self, values):
        self.values = values

    def remote(self):
        return self.values.pop(0)


class FakeActor:
    def __init__(self, values, clocks=None):
        self.metrics = _Method(values)
        self.clock = _Method(clocks or [{"last_arrival": 0.0, "last_routed_answer": 0.0}] * len(values))


def fake_get(value, timeout=None):
    return list(value) if isinstance(value, list) else value


def test_step_metrics_are_deltas_over_shards_and_survive_a_restart(monkeypatch):
    routed = {"arena/groups_routed": 2.0}
    shard0 = FakeActor([{"arena/groups": 4.0, **routed}, {"arena/groups": 10.0, **routed}, {"arena/groups": 1.0}])
    shard1 = FakeActor([{"arena/groups": 1.0}, {"arena/groups": 2.0}, {"arena/groups": 4.0}])
    actors = {"arena_referee_0": shard0, "arena_referee_1": shard1}
    monkeypatch.setattr(ray, "get_actor", lambda name: actors[name])
    monkeypatch.setattr(ray, "get", fake_get)
    reader = tracking.ArenaMetricsReader(arena_settings(group_size=8, num_referees=2))
    first, second, third = (reader.step_metrics() for _ in range(3))
    assert first["arena/groups"] == 5 and first["arena/alpha_routed"] == 0.4
    assert second["arena/groups"] == 7  # (10 + 2) - (4 + 1)
    assert third["arena/groups"] == 3  # shard 0 restarted (its counters began again: 1), shard 1 moved on by 2


def test_a_signed_counter_going_down_is_not_a_restart(monkeypatch):
    # A judge that favours the trace shown second fits a negative order effect: the running sum goes down.
    def counts(groups, order_effect_sum):
        return {
            "arena/groups": groups,
            "arena/judge_calls": 10.0 * groups,
            "arena/order_effect_sum": order_effect_sum,
            "arena/order_effect_fits": groups,
        }

    shard = FakeActor([counts(100.0, 5.0), counts(110.0, 4.0)])
    monkeypatch.setattr(ray, "get_actor", lambda name: shard)
    monkeypatch.setattr(ray, "get", fake_get)
    reader = tracking.ArenaMetricsReader(arena_settings(group_size=8))
    reader.step_metrics()
    second = reader.step_metrics()
    assert second["arena/groups"] == 10 and second["arena/judge_calls"] == 100  # the step's, not the run's
    assert second["arena/order_effect"] == -0.1


def test_an_unreachable_referee_gives_zero_metrics_not_an_error(monkeypatch):
    def missing(name):
        raise ValueError(f"no actor {name}")

    monkeypatch.setattr(ray, "get_actor", missing)
    metrics = tracking.ArenaMetricsReader(arena_settings(group_size=8)).step_metrics()
    assert metrics["arena/groups"] == 0 and metrics["arena/alpha_routed"] == 0


def test_reader_only_for_the_arena_manager_with_metrics_on():
    base = {"actor_rollout_ref": {"rollout": {"n": 8}}}
    assert tracking.reader_from_config({**base, "reward": {"reward_manager": {"name": "naive"}}}) is None
    arena = {**base, "reward": {"reward_manager": {"name": "arena"}, "arena": {}}}
    assert isinstance(tracking.reader_from_config(arena), tracking.ArenaMetricsReader)
    off = {**base, "reward": {"reward_manager": {"name": "arena"}, "arena": {"log_metrics": False}}}
    assert tracking.reader_from_config(off) is None


def test_tail_is_last_routed_answer_after_the_last_arrival_over_all_shards(monkeypatch):
    def state(samples, routed, arrival, answer):
        return {"arena/samples": samples, "arena/groups_routed": routed}, {
            "last_arrival": arrival,
            "last_routed_answer": answer,
        }

    # Step 1: shard 0's last sample at t=100, shard 1's at t=104; shard 0 answers its last routed group at t=107.
    # Step 2: samples arrive, nothing is routed. Step 3: a routed answer before the last arrival.
    steps0 = [state(8, 1, 100.0, 107.0), state(16, 1, 110.0, 107.0), state(24, 2, 120.0, 118.0)]
    steps1 = [state(8, 0, 104.0, 0.0), state(16, 0, 111.0, 0.0), state(24, 0, 121.0, 0.0)]
    actors = {
        "arena_referee_0": FakeActor([m for m, _ in steps0], [c for _, c in steps0]),
        "arena_referee_1": FakeActor([m for m, _ in steps1], [c for _, c in steps1]),
    }
    monkeypatch.setattr(ray, "get_actor", lambda name: actors[name])
    monkeypatch.setattr(ray, "get", fake_get)
    reader = tracking.ArenaMetricsReader(arena_settings(group_size=8, num_referees=2))
    tails = [reader.step_metrics()["arena/tail_after_last_sample_s"] for _ in range(3)]
    assert tails == [3.0, 0.0, 0.0]  # 107 - max(100, 104); nothing routed; answered 3 s before the last arrival


def test_generations_are_the_batch_plus_the_groups_the_replay_buffer_discarded():
    # verl counts discarded prompt groups (uids) under "..._samples": each is rollout.n rollouts.
    data = {"training/filter_groups/evicted_samples": 3, "training/off_policy/evicted_samples": 1, "x": 1}
    assert tracking.generation_metrics(data, 8, 8) == {"arena/generations": 96.0, "arena/generations_discarded": 32.0}
    assert tracking.generation_metrics({}, 8, 8)["arena/generations"] == 64.0


def test_verls_tracker_logs_generations_per_training_step(tmp_path, monkeypatch):
    """Through verl's own Tracking class and file logger, as the trainer calls it (config as a plain dict)."""
    import json

    from verl.utils.tracking import Tracking

    tracking.install_tracking_hook()
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "metrics.jsonl"))
    config = {
        "data": {"train_batch_size": 16},
        "actor_rollout_ref": {"rollout": {"n": 8}},
        "reward": {"reward_manager": {"name": "arena"}, "arena": {"mode": "rlvr", "log_metrics": False}},
    }
    logger = Tracking(project_name="p", experiment_name="e", default_backend=["file"], config=config)
    logger.log({"training/global_step": 1, "training/filter_groups/evicted_samples": 5}, step=1)  # 5 groups
    logger.log({"val-core/aime/acc/mean@16": 0.5}, step=1)  # validation only: no generation count
    records = [json.loads(line)["data"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["arena/generations"] == 16 * 8 + 5 * 8 and records[0]["arena/generations_discarded"] == 40
    assert "arena/generations" not in records[1]


def test_a_restarted_referee_is_known_by_its_start_time_even_when_its_counters_already_exceed_the_old_ones(
    monkeypatch,
):
    """A referee killed after the read at 10 samples and restarted: by the next read its new life counted 12 (the
    resubmitted samples of its groups in flight and later ones). A drop-based rule would report 2; the step has 12."""
    clocks = [
        {"last_arrival": 0.0, "last_routed_answer": 0.0, "started_at": 100.0},
        {"last_arrival": 0.0, "last_routed_answer": 0.0, "started_at": 100.0},
        {"last_arrival": 0.0, "last_routed_answer": 0.0, "started_at": 250.0},
    ]
    shard = FakeActor([{"arena/samples": 4.0}, {"arena/samples": 10.0}, {"arena/samples": 12.0}], clocks)
    monkeypatch.setattr(ray, "get_actor", lambda name: shard)
    monkeypatch.setattr(ray, "get", fake_get)
    reader = tracking.ArenaMetricsReader(arena_settings(group_size=8))
    first, second, third = (reader.step_metrics() for _ in range(3))
    assert [m["arena/samples"] for m in (first, second, third)] == [4, 6, 12]
    assert [m["arena/referee_restarts"] for m in (first, second, third)] == [0, 0, 1]


def test_a_healthy_step_has_no_warning():
    assert tracking.degraded_step_warning(3, {"arena/samples": 8.0, "arena/judge_calls": 12.0}) is None


def test_a_degraded_step_says_what_fell_back_and_its_share():
    metrics = {
        "arena/samples": 8.0,
        "arena/fallback_judge_error": 4.0,
        "arena/fallback_deadline": 2.0,
        "arena/judge_calls": 12.0,
        "arena/judge_failures": 7.0,
        "arena/referee_restarts": 1.0,
    }
    line = tracking.degraded_step_warning(5, metrics)
    assert line.startswith("arena step 5: 6 of 8 samples (75%) fell back to their verifier reward")
    assert "deadline 2" in line and "judge_error 4" in line and "referee_lost" not in line
    assert "7 of 12 judge calls gave no verdict" in line and "1 referee restart" in line


def test_the_tracker_hook_warns_once_per_degraded_step(monkeypatch, caplog):
    from verl.utils.tracking import Tracking

    tracking.install_tracking_hook()
    monkeypatch.setattr(Tracking, "__init__", lambda self, *a, **k: None)
    tracker = Tracking()
    tracker._arena_batch_shape = (0, 0)
    steps = iter([{"arena/samples": 8.0, "arena/fallback_judge_error": 8.0}, {"arena/samples": 8.0}])

    class Reader:
        def step_metrics(self):
            return next(steps)

    tracker._arena_metrics = Reader()
    tracker.logger = {}  # verl's log writes to each backend in self.logger: none here
    with caplog.at_level("WARNING", logger=tracking.logger.name):
        for step in (1, 2):
            Tracking.log(tracker, {"training/global_step": step}, step)
    warnings = [r.getMessage() for r in caplog.records if r.name == tracking.logger.name]
    assert len(warnings) == 1 and warnings[0].startswith("arena step 1: 8 of 8 samples (100%) fell back")


def test_a_restarting_referee_is_waited_for_so_its_counters_are_in_this_steps_log(monkeypatch):
    shard = FakeActor([{"arena/samples": 8.0}] * 3)  # each try is a new call
    unavailable = [ray.exceptions.ActorUnavailableError("restarting", b"0" * 16)] * 2

    def get(value, timeout=None):
        if unavailable:
            raise unavailable.pop()
        return fake_get(value)

    monkeypatch.setattr(ray, "get_actor", lambda name: shard)
    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(tracking.time, "sleep", lambda s: None)
    assert tracking.ArenaMetricsReader(arena_settings(group_size=8)).step_metrics()["arena/samples"] == 8
    assert not unavailable
