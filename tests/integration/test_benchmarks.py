"""The benchmark scripts run end to end on tiny settings and print their tables (figures come from full runs)."""

import subprocess
import sys

from helpers import paths

ROOT = paths.REPO


def run_script(*args):
    completed = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_ranking_benchmark_writes_table_and_plot(tmp_path):
    out = run_script(
        "scripts/bench/ranking.py", "--groups", "4", "--sizes", "4,8", "--spreads", "1.0", "--sweep-sizes", "8",
        "--target-sizes", "8", "--workers", "1", "--out", str(tmp_path),
    )  # fmt: skip
    assert "SIMULATED judge" in out
    for strategy in ("round_robin", "live", "random", "info_gain", "paced"):
        assert f"| {strategy} |" in out
    targets = out.split("With a 63% first-position preference")[1]
    for judge in ("logistic", "logistic, 5% ties", "probit", "probit, 5% ties"):
        assert f"| {judge} | 1 | 8 | " in targets
    assert "| paced |" in targets and "±" in targets
    assert (tmp_path / "ranking.png").stat().st_size > 10_000
    assert (tmp_path / "ranking.md").read_text().startswith("Ranking benchmark")


def test_the_order_table_pairs_todays_order_with_the_prefix_aware_one(tmp_path):
    out = run_script("scripts/bench/ranking.py", "--order", "--groups", "4", "--spreads", "1.0", "--target-sizes", "8",
                     "--workers", "1", "--out", str(tmp_path))  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| 1 |")]
    # two biases x three strategies, each with both orders and their paired difference
    assert len(rows) == 6 and all(line.count("±") == 3 for line in rows)
    assert {line.split("|")[4].strip() for line in rows} == {"live", "paced", "info_gain"}
    assert (tmp_path / "order.md").read_text().startswith("Presentation order")


def test_the_formats_table_runs_the_peers_at_their_budget_and_at_lives(tmp_path):
    out = run_script("scripts/bench/ranking.py", "--formats", "--groups", "3", "--spreads", "1.0", "--target-sizes",
                     "8", "--workers", "1", "--out", str(tmp_path))  # fmt: skip
    assert out.startswith("Tournament formats, SIMULATED judge")
    logistic = out.split("### Judge: logistic\n")[1].split("### Judge:")[0]
    lines = [line for line in logistic.splitlines() if line.startswith("| 1 |")]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines]
    by = {(row[2], row[3]): row for row in rows}
    # swiss at its own budget (3 rounds of 4 pairs) and at live's; knockout at its own N-1, not run at live's (said so)
    assert by["3 swiss rounds = 12", "swiss"][4] == "12" and by["live's = 18", "swiss"][4] == "18"
    assert by["N-1 = 7", "knockout"][4] == "7" and "±" in by["N-1 = 7", "knockout"][6]
    assert by["live's = 18", "knockout, round_robin"][6].startswith("not run")
    assert "±" in by["live's = 18", "swiss"][9] and "±" in by["3 swiss rounds = 12", "swiss"][10]  # paired differences
    for judge in ("logistic", "logistic, 5% ties", "probit", "probit, 5% ties"):
        assert f"### Judge: {judge}\n" in out
    assert (tmp_path / "ranking_formats.md").read_text().startswith("Tournament formats, SIMULATED judge")
    assert (tmp_path / "ranking_formats.png").stat().st_size > 10_000


def test_fit_throughput_benchmark_compares_three_fits():
    out = run_script("scripts/bench/bradley_terry.py", "--groups", "16", "--sizes", "8", "--repeats", "1")
    lines = [line for line in out.splitlines() if line.startswith("| 8 |")]
    assert [line.split("|")[2].strip() for line in lines] == [
        "batched Newton (arena_verl)",
        "per-group choix.opt_pairwise",
        "per-group scipy L-BFGS-B",
    ]
    # choix fits the same objective: the answers agree.
    assert float(lines[1].split("|")[-2]) < 1e-4


def test_referee_throughput_benchmark_runs():
    out = run_script("scripts/bench/referee.py", "--prompts", "4", "--n", "4", "--shards", "1,2")
    rows = [line for line in out.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert len(rows) == 2
    assert all(line.split("|")[2].strip() == "16" and line.split("|")[3].strip() == "2" for line in rows)
