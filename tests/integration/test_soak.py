"""The referee soak (scripts/bench/soak.py): a smoke run through real referee Ray actors with injected judge
failures, and the checks that turn memory and descriptor figures into findings."""

import contextlib
import dataclasses
import json
import threading
import time

import psutil
import pytest

from helpers import paths
from helpers.scripts import load_script

ROOT = paths.REPO
REPORT_KEYS = {
    "settings", "cpus", "elapsed_s", "steps", "samples", "samples_per_s", "all_rewarded", "caps", "start", "end",
    "growth", "fallbacks", "groups", "groups_routed", "judge", "findings", "ok", "snapshots",
}  # fmt: skip


soak = load_script("bench/soak.py", "soak")


class _DescendantWatcher(threading.Thread):
    """Records every process below this one while the run goes (Ray's workers outlive their raylet as orphans, so
    the tree after the run would not show them)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: dict[int, str] = {}
        self.stop = threading.Event()

    def run(self):
        me = psutil.Process()
        while not self.stop.is_set():
            for proc in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.seen.setdefault(proc.pid, proc.name())
            time.sleep(0.2)


def _alive(pids, wait_s: float) -> list[int]:
    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def test_smoke_run_rewards_every_sample_counts_injected_failures_and_leaves_no_ray_process(tmp_path):
    out = tmp_path / "soak.json"
    watcher = _DescendantWatcher()
    watcher.start()
    try:
        rc = soak.main(
            ["--minutes", "0.2", "--groups", "16", "--sample-every-s", "3", "--malformed-rate", "0.05",
             "--json", str(out)]
        )  # fmt: skip
    finally:
        watcher.stop.set()
        watcher.join()
    report = json.loads(out.read_text())
    assert rc == 0, report["findings"]
    assert set(report) >= REPORT_KEYS, REPORT_KEYS - set(report)
    assert {f.name for f in dataclasses.fields(soak.Snapshot)} == set(report["start"]) == set(report["end"])

    # Every sample got a finite reward, and the referee counted each step's samples under its step.
    assert report["all_rewarded"] and report["ok"]
    assert report["steps"] >= 2 and report["samples"] == report["steps"] * 16 * 8
    assert report["end"]["samples"] == report["samples"] and len(report["snapshots"]) >= 3
    assert report["groups"] == (report["steps"] + 1) * 16  # the warm-up step's groups too

    # Injected failures reached the referee: parse failures, and timeouts and raises on top of them (the referee's
    # count of failed calls in answered tournaments exceeds the judge's own parse failures).
    judge = report["judge"]
    assert judge["failures"] > 0 and judge["sim_parse_failures"] > 0
    assert judge["failures"] > judge["sim_parse_failures"]
    assert judge["failure_share_of_routed_calls"] > report["settings"]["parse_failure_rate"]
    fallbacks = {"deadline", "judge_error", "referee_lost", "overflow", "late", "thin", "judge_down"}
    assert set(report["fallbacks"]) == fallbacks

    # Memory and descriptors were read from the referee's own process, and the run was too short for the caps.
    assert report["start"]["referee_rss_mb"] > 0 and report["start"]["referee_fds"] > 0
    assert report["end"]["referee_pids"] == report["start"]["referee_pids"]
    assert report["end"]["remembered_groups"] == report["groups"]
    assert report["growth"]["after_caps"]["checked"] is False

    # Nothing of Ray outlives the run.
    import ray

    assert not ray.is_initialized()
    ray_procs = {pid: name for pid, name in watcher.seen.items() if "ray" in name or "gcs" in name}
    assert ray_procs, "the watcher saw no Ray process: the check below would prove nothing"
    assert set(report["end"]["referee_pids"]) <= set(ray_procs)
    left = _alive(list(ray_procs), 15)
    assert not left, {pid: ray_procs[pid] for pid in left}


def _snap(t_min: float, referee_rss: float, *, remembered: int, kept: int, fds: int = 40, pid: int = 7):
    return soak.Snapshot(
        t_s=t_min * 60, steps=kept, samples=kept * 512, groups_answered=remembered, referee_rss_mb=referee_rss,
        referee_fds=fds, driver_rss_mb=200.0, driver_fds=30, remembered_groups=remembered, step_counters_kept=kept,
        open_groups=0, referee_pids=[pid],
    )  # fmt: skip


CAPS = soak.Caps(recent_groups=1000, steps_kept=10)


def _check(snapshots, **limits):
    grown = soak.growth(snapshots, CAPS, shards=1, min_window_s=limits.pop("min_window_s", 300))
    return grown, soak.findings(snapshots, grown, limits.get("max_growth_mb", 200), limits.get("max_fd_growth", 20))


def test_memory_growth_while_the_caps_fill_is_not_flagged_but_growth_after_them_is():
    filling = [_snap(m, 100 + 50 * m, remembered=min(1000, 200 * m), kept=min(10, 2 * m)) for m in range(6)]
    flat = [_snap(m, 350 + (m % 2), remembered=1000, kept=10) for m in range(6, 20)]
    grown, flagged = _check(filling + flat)
    assert grown["after_caps"]["caps_full_at_s"] == 5 * 60 and grown["after_caps"]["checked"]
    assert abs(grown["after_caps"]["referee_rss_mb_per_hour"]) < 10
    assert grown["run"]["referee_rss_mb"]["per_hour"] > 200  # the fill alone would have been flagged
    assert flagged == []

    leaking = [_snap(m, 350 + 5 * (m - 5), remembered=1000, kept=10) for m in range(6, 20)]  # 300 MB/h
    grown, flagged = _check(filling + leaking)
    assert grown["after_caps"]["referee_rss_mb_per_hour"] == pytest.approx(300, rel=0.01)
    assert len(flagged) == 1 and "referee RSS grows 300 MB/h" in flagged[0]


def test_a_short_after_caps_window_is_not_checked():
    snaps = [_snap(m, 100 + 100 * m, remembered=1000, kept=10) for m in range(3)]
    grown, flagged = _check(snaps, min_window_s=300)
    assert grown["after_caps"]["checked"] is False and grown["after_caps"]["referee_rss_mb_per_hour"] is None
    assert flagged == []


def test_descriptor_growth_and_a_restarted_referee_are_flagged():
    snaps = [_snap(0, 100, remembered=10, kept=1), _snap(1, 100, remembered=20, kept=2, fds=61)]
    _, flagged = _check(snaps, max_fd_growth=20)
    assert len(flagged) == 1 and "referee open file descriptors grew by 21" in flagged[0]
    _, flagged = _check(snaps, max_fd_growth=21)
    assert flagged == []

    restarted = [_snap(0, 100, remembered=10, kept=1), _snap(1, 60, remembered=0, kept=0, pid=8)]
    _, flagged = _check(restarted)
    assert flagged and "restarted" in flagged[0]


@pytest.mark.parametrize("bad", [["--minutes", "-1"], ["--groups", "0"], ["--parse-failure-rate", "1.5"]])
def test_bad_arguments_are_refused(bad, capsys):
    with pytest.raises(SystemExit):
        soak.parse_args(bad)
    assert bad[0] in capsys.readouterr().err
