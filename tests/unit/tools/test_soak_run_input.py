"""The real-run soak's bad input (scripts/bench/soak_run.py): a missing recipe, a duration of 0 or one too short for
every fault kind, and an --out of another run or of a finished soak are one error line (exit 2) before anything
starts; the schedule holds every kind as often as asked, seeded, after the warm-up and far enough apart."""

import importlib.util
import sys

import pytest

from helpers import paths

sys.path.insert(0, str(paths.REPO / "scripts" / "bench"))  # soak_report, imported by soak_run at the end
_spec = importlib.util.spec_from_file_location("soak_run", paths.REPO / "scripts" / "bench" / "soak_run.py")
soak_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(soak_run)


def refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        soak_run.main(list(argv))
    assert exit_.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_bad_input_is_one_error_before_anything_starts(tmp_path, capsys):
    out = str(tmp_path / "soak")
    assert "no recipes/no_such.sh" in refused(capsys, "--out", out, "--recipe", "no_such")
    assert "--minutes must be > 0, got 0.0" in refused(capsys, "--out", out, "--minutes", "0")
    assert "--minutes must be > 0" in refused(capsys, "--out", out, "--minutes", "nan")
    assert "every kind 2 time(s) needs at least 23 minutes" in refused(capsys, "--out", out, "--minutes", "20")
    assert len(soak_run.schedule(23, 0, None, each=2, min_gap_s=60)) == 16  # what it says is enough is
    other = tmp_path / "other_run"
    (other / "checkpoints").mkdir(parents=True)
    assert "holds something else than a soak" in refused(capsys, "--out", str(other))
    finished = tmp_path / "finished"
    finished.mkdir()
    (finished / "samples.jsonl").write_text("")
    (finished / "soak.json").write_text("{}")
    assert "holds a finished soak" in refused(capsys, "--out", str(finished))
    assert not (tmp_path / "soak").exists()  # nothing was started or written


@pytest.mark.parametrize("seed", [0, 1])
def test_the_schedule_holds_every_kind_as_often_as_asked(seed):
    plan = soak_run.schedule(60, seed, None, each=2, min_gap_s=60)
    kinds = [kind for _, kind in plan]
    assert sorted(kinds) == sorted(soak_run.KINDS * 2)
    times = [t for t, _ in plan]
    assert times[0] == soak_run.WARMUP_S and all(b - a >= 60 for a, b in zip(times, times[1:]))
    assert times[-1] <= 60 * 60 - 180  # the last fault has time to end and recover
    assert plan == soak_run.schedule(60, seed, None, each=2, min_gap_s=60)  # seeded
    assert kinds != [kind for _, kind in soak_run.schedule(60, seed + 2, None, each=2, min_gap_s=60)]
