"""``demo``'s bounds (arena_verl.tools.demo): sizes the machine cannot run are refused with the flag and its bound,
exit 2, before anything is built or Ray starts."""

import pytest

from arena_verl.tools import demo


@pytest.fixture
def nothing_starts(monkeypatch):
    def fail(*_, **__):
        raise AssertionError("the demo started building")

    monkeypatch.setattr(demo, "reward_step", fail)
    monkeypatch.setattr(demo, "synthetic_rollouts", fail)
    monkeypatch.setattr(demo, "sample_rollouts", fail)
    monkeypatch.setattr(demo, "usable_cpus", lambda: 2)


@pytest.mark.parametrize(
    "argv, flag, bound",
    [
        (["--workers", "1000000000"], "--workers", "between 1 and 8"),
        (["--workers", "9"], "--workers", "between 1 and 8"),
        (["--workers", "0"], "--workers", "between 1 and 8"),
        (["--prompts", "1000000000"], "--prompts", f"between 1 and {demo.MAX_PROMPTS}"),
        (["--prompts", "-1"], "--prompts", f"between 1 and {demo.MAX_PROMPTS}"),
        (["--n", "1000000000"], "--n", f"between 2 and {demo.MAX_N}"),
        (["--n", "1"], "--n", f"between 2 and {demo.MAX_N}"),
        (["--prompts", "8000", "--n", "64"], "--prompts 8000 x --n 64", f"at most {demo.MAX_SAMPLES}"),
    ],
)
def test_sizes_beyond_the_machine_are_refused_before_anything_starts(nothing_starts, capsys, argv, flag, bound):
    assert demo.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: demo {flag}") and bound in err and err.count("\n") == 1


def test_the_bounds_hold_at_their_edge(monkeypatch):
    monkeypatch.setattr(demo, "usable_cpus", lambda: 2)
    for argv in (["--workers", "8"], ["--prompts", str(demo.MAX_SAMPLES // 64), "--n", "64"], []):
        demo.check_sizes(_parse(argv))  # no error


def test_a_bad_seed_or_judge_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(demo, "reward_step", lambda *_: pytest.fail("the demo started"))
    assert demo.main(["--seed", "-1", "--prompts", "2", "--n", "2"]) == 2
    assert capsys.readouterr().err.startswith("error: demo: ")
    assert demo.main(["--judge", "nonsense:x", "--prompts", "2", "--n", "2"]) == 2
    assert capsys.readouterr().err.startswith("error: demo: ")


def _parse(argv):
    import argparse

    parser = argparse.ArgumentParser()
    demo.configure_parser(parser)
    return parser.parse_args(argv)
