"""The flags analyze, score and evaluate share have one help text and one default (the settings' where one exists);
bad input to each command is one ``error:`` line and exit status 2."""

from __future__ import annotations

import argparse

import pytest

from arena_verl.evaluation.scoring import ScoringOptions
from arena_verl.settings import ArenaSettings
from arena_verl.tools import evaluate
from arena_verl.tools.analyze import command as analyze
from arena_verl.tools.score import cli as score

SHARED = ("--answer-extraction", "--sandbox-url", "--workers", "--data")


def actions(module) -> dict[str, argparse.Action]:
    parser = argparse.ArgumentParser()
    module.configure_parser(parser)
    return {option: action for action in parser._actions for option in action.option_strings}


def test_shared_flags_have_the_same_help_and_default_everywhere():
    found = [actions(module) for module in (analyze, score, evaluate)]
    for flag in SHARED:
        described = {(a[flag].help.split(";")[0], repr(a[flag].default), a[flag].metavar) for a in found}
        assert len(described) == 1, (flag, described)
    assert found[0]["--answer-extraction"].default == ArenaSettings().answer_extraction
    assert found[0]["--workers"].default == ScoringOptions().workers


@pytest.mark.parametrize(
    "main, argv",
    [
        (analyze.main, ["DUMP", "--workers", "0"]),
        (score.main, ["DUMP", "--judge", "simulated", "--out", "OUT", "--workers", "0"]),
        (evaluate.main, ["--dumps", "DUMP", "--workers", "0"]),
        (evaluate.main, ["--dumps", "DUMP", "--k", "0"]),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(main, argv, tmp_path, capsys):
    argv = [str(tmp_path / arg) if arg in ("DUMP", "OUT") else arg for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --") and err.count("\n") == 1


BAD_SANDBOX_URLS = ["sandbox:8080/run_code", "ftp://sandbox/run_code", "http:///run_code", "http://", "localhost",
                    "http://sandbox:99999/run_code", "http://sand box/run_code", ""]  # fmt: skip


@pytest.mark.parametrize("url", BAD_SANDBOX_URLS)
@pytest.mark.parametrize("tool", ["analyze", "score", "evaluate", "audit-judge"])
def test_a_sandbox_url_that_is_no_http_url_is_refused_before_any_output(tmp_path, capsys, tool, url):
    from arena_verl.tools.audit import command as audit

    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"data_source": "a", "index": 0, "response": "x", "ground_truth": "1"}\n')
    out = tmp_path / "out"
    main, argv = {
        "analyze": (analyze.main, [str(dump), "--out", str(out)]),
        "score": (score.main, [str(dump), "--judge", "simulated", "--out", str(out)]),
        "evaluate": (evaluate.main, ["--dumps", str(dump), "--json", str(out)]),
        "audit-judge": (audit.main, [str(dump), "--judge", "simulated", "--out", str(out)]),
    }[tool]
    assert main([*argv, "--sandbox-url", url]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --sandbox-url {url!r}: not an http(s) URL with a host, e.g. http://sandbox:8080/run_code\n"
    assert not out.exists()


@pytest.mark.parametrize("url", ["http://sandbox:8080/run_code", "https://10.0.0.2/run_code", "http://[::1]:80/x"])
def test_a_sandbox_url_with_a_scheme_and_a_host_is_taken(url):
    from arena_verl.tools.common.options import check_sandbox_url

    check_sandbox_url(argparse.Namespace(sandbox_url=url))
