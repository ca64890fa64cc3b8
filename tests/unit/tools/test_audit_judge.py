"""``arena-verl audit-judge`` on a hand-made V1 dump with scripted judges: which pairs it judges, each figure of
summary.json checked exactly (an always-first judge, an oracle, a soft judge, a cyclic judge, a judge that fails
some calls), per-call costs credited to their own call under concurrency (each call's record, never the judge's
shared counters), and the report's files."""

from __future__ import annotations

import asyncio
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from arena_verl.core.judge_protocol import JudgeStats, Reply, report_cost
from arena_verl.evaluation.audit import FIGURE_KEYS, LABELLED, SAME_OUTCOME
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.settings import judge_settings
from arena_verl.tools.audit import command, judging
from helpers.score_dumps import write_dump

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# step -> per prompt, the correctness of each sample (the sample's position in its group is its session).
PATTERNS = {
    1: [[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0, 1], [1, 1]],
    2: [[0, 0, 0, 0, 0, 0], [1, 0], [1, 1, 1]],
}
LABELLED_PAIRS = sum(
    sum(c) * (len(c) - sum(c)) for prompts in PATTERNS.values() for c in prompts if 0 < sum(c) < len(c)
)
TRIPLES = sum(len(c) // 3 for prompts in PATTERNS.values() for c in prompts if len(set(c)) == 1)
LONE_PAIRS = sum(len(c) == 2 for prompts in PATTERNS.values() for c in prompts if len(set(c)) == 1)
SAME_PAIRS = 3 * TRIPLES + LONE_PAIRS
_QUESTION = re.compile(r"What is (-?\d+) \+ 2\?")
_ANSWER = re.compile(r"\\boxed\{(-?\d+)\}")
_SESSION = re.compile(r"Attempt (\d+):")


def is_correct(problem: str, text: str) -> bool:
    return int(_ANSWER.search(text)[1]) == int(_QUESTION.search(problem)[1]) + 2


def session(text: str) -> int:
    return int(_SESSION.search(text)[1])


class Script:
    """A scripted judge: ``rule(problem, first_text, second_text)`` is the outcome (or raises)."""

    name = "script"

    def __init__(self, rule, stats: JudgeStats | None = None):
        self.rule = rule
        self.stats = stats or JudgeStats()
        self.calls: list[tuple[int, int]] = []
        self.closed = False

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.calls.append((session(first.text), session(second.text)))
        await asyncio.sleep(0)  # let the other calls in flight run in between
        return self.rule(problem, first.text, second.text)

    async def close(self):
        self.closed = True


def always_first(problem, first, second):
    return 1.0


def oracle(problem, first, second):
    return (1.0 + is_correct(problem, first) - is_correct(problem, second)) / 2


def soft(problem, first, second):
    """0.75 to a correct trace over an incorrect one, whichever is shown first; 0.625 to the first of a same pair."""
    a, b = is_correct(problem, first), is_correct(problem, second)
    return 0.625 if a == b else 0.75 if a else 0.25


def cyclic(problem, first, second):
    """Rock-paper-scissors by session modulo 3 (consistent in both orders): a beats b when (a - b) % 3 == 1."""
    step = (session(first) - session(second)) % 3
    return {0: 0.5, 1: 1.0, 2: 0.0}[step]


def failing(problem, first, second):
    """An oracle that fails one call in three, each way a judge can fail."""
    kind = (session(first) + 2 * session(second)) % 9
    if kind == 0:
        return None
    if kind == 1:
        raise RuntimeError("the judge fell over")
    if kind == 2:
        return float("nan")
    return oracle(problem, first, second)


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("audit") / "rollout", PATTERNS)


def audit(dump: Path, out: Path, monkeypatch, judge, *extra: str) -> int:
    """``arena-verl audit-judge`` in this process, the judge built by the command replaced by ``judge``."""
    monkeypatch.setattr(judging, "make_judge", lambda settings: judge)
    return command.main([str(dump), "--judge", "simulated", "--out", str(out), "--workers", "1", *extra])


def run_audit(dump, tmp_path, monkeypatch, judge, *extra) -> tuple[dict, list[dict]]:
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch, judge, *extra) == 0
    lines = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    return json.loads((out / "summary.json").read_text()), lines


def test_every_labelled_pair_and_every_triple_is_judged_once_in_both_orders(dump, tmp_path, monkeypatch):
    judge = Script(oracle)
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge, "--concurrency", "1")
    assert (summary["pairs_labelled"], summary["pairs_same_outcome"]) == (LABELLED_PAIRS, SAME_PAIRS) == (10, 16)
    assert summary["calls"] == len(judge.calls) == 2 * (LABELLED_PAIRS + SAME_PAIRS)
    assert len({line["pair"] for line in lines}) == len(lines)
    for line in lines:
        correct = PATTERNS[line["step"]][int(line["group"][-12:])]
        if line["kind"] == LABELLED:  # the correct trace is `first`, shown first in the first order
            assert (correct[line["first"]], correct[line["second"]]) == (1, 0)
        else:
            assert len(set(correct)) == 1 and line["first"] < line["second"]
    triples = {}
    for line in lines:
        if line["triple"] is not None:
            triples.setdefault((line["step"], line["group"], line["triple"]), set()).add(
                (line["first"], line["second"])
            )
    assert len(triples) == TRIPLES
    for (_, _, triple), pairs in triples.items():
        x, y, z = map(int, triple.rsplit(" | ", 1)[1].split(","))
        assert pairs == {(x, y), (x, z), (y, z)}
    for k, line in enumerate(lines):  # one call at a time: each pair's first order, then its second
        assert judge.calls[2 * k : 2 * k + 2] == [(line["first"], line["second"]), (line["second"], line["first"])]
    assert judge.closed


def test_an_always_first_judge(dump, tmp_path, monkeypatch):
    summary, _ = run_audit(dump, tmp_path, monkeypatch, Script(always_first))
    assert summary["first_position_preference"] == 1.0
    assert (summary["accuracy_first_order"], summary["accuracy_second_order"], summary["accuracy"]) == (1.0, 0.0, 0.5)
    assert summary["order_flip_rate"] == 1.0
    assert summary["tie_rate"] == 0.0
    assert summary["transitivity_violations"] == 0.0
    assert summary["calls_without_verdict"] == 0 and summary["calls_low_mass"] == 0


def test_an_oracle(dump, tmp_path, monkeypatch):
    summary, _ = run_audit(dump, tmp_path, monkeypatch, Script(oracle))
    calls = 2 * (LABELLED_PAIRS + SAME_PAIRS)
    assert (summary["accuracy"], summary["accuracy_first_order"], summary["accuracy_second_order"]) == (1.0, 1.0, 1.0)
    assert summary["first_position_preference"] == 0.5  # labelled: 1 then 0; same-outcome: 0.5 twice
    assert summary["tie_rate"] == float(Fraction(2 * SAME_PAIRS, calls))
    assert summary["order_flip_rate"] == 0.0
    assert summary["transitivity_violations"] == 0.0


def test_a_soft_judge(dump, tmp_path, monkeypatch):
    summary, _ = run_audit(dump, tmp_path, monkeypatch, Script(soft))
    labelled, same = LABELLED_PAIRS, SAME_PAIRS
    assert (summary["accuracy_first_order"], summary["accuracy_second_order"]) == (0.75, 0.75)
    assert summary["accuracy"] == 0.75
    expected = (Fraction(3, 4) * labelled + Fraction(1, 4) * labelled + Fraction(5, 8) * 2 * same) / (
        2 * labelled + 2 * same
    )
    assert summary["first_position_preference"] == float(expected)
    assert summary["order_flip_rate"] == float(Fraction(same, labelled + same))  # 0.625 both ways: a flip
    assert summary["tie_rate"] == 0.0
    assert summary["transitivity_violations"] == 0.0  # o_first == o_second on every same pair: ties


def test_a_cyclic_judge_breaks_transitivity(dump, tmp_path, monkeypatch):
    summary, lines = run_audit(dump, tmp_path, monkeypatch, Script(cyclic))
    triples = {(line["step"], line["group"], line["triple"]) for line in lines if line["triple"]}
    cycles = sum(len({int(t) % 3 for t in triple.rsplit(" | ", 1)[1].split(",")}) == 3 for _, _, triple in triples)
    assert 0 < cycles < len(triples) == TRIPLES  # the dump's triples hold both cases
    assert summary["transitivity_violations"] == float(Fraction(cycles, len(triples)))
    assert summary["order_flip_rate"] == 0.0


def test_calls_without_a_verdict_are_counted_and_left_out_of_the_figures(dump, tmp_path, monkeypatch):
    judge = Script(failing)
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge)
    kinds = [(session_first + 2 * session_second) % 9 for session_first, session_second in judge.calls]
    failed = sum(kind in (0, 1, 2) for kind in kinds)
    assert 0 < failed < len(kinds)
    assert summary["calls_without_verdict"] == failed
    assert sum(o is None for line in lines for o in line["outcomes"]) == failed
    verdicts = [(line["kind"], order, o) for line in lines for order, o in enumerate(line["outcomes"]) if o is not None]
    assert summary["accuracy"] == 1.0
    same = sum(kind == SAME_OUTCOME for kind, _, _ in verdicts)
    first_correct = sum(kind == LABELLED and order == 0 for kind, order, _ in verdicts)
    assert summary["first_position_preference"] == float((first_correct + Fraction(same, 2)) / len(verdicts))
    assert summary["tie_rate"] == float(Fraction(same, len(verdicts)))


@pytest.mark.parametrize("bad", [True, 1.5, -0.25, float("inf"), "1", [1.0]])
def test_an_outcome_that_is_no_probability_is_a_call_without_a_verdict(dump, tmp_path, monkeypatch, bad):
    summary, lines = run_audit(dump, tmp_path, monkeypatch, Script(lambda *_: bad), "--max-pairs", "2")
    assert summary["calls_without_verdict"] == summary["calls"] == 8
    for key in FIGURE_KEYS:
        if key not in ("pairs_labelled", "pairs_same_outcome", "calls", "calls_without_verdict", "calls_low_mass"):
            assert summary[key] is None or key == "seconds_per_call", key
    assert all(line["outcomes"] == [None, None] for line in lines)
    assert "no call gave a verdict" in " ".join(summary["run"]["notes"])


def test_max_pairs_caps_each_kind_spreads_over_groups_and_grows_a_superset(dump, tmp_path, monkeypatch):
    small, small_lines = run_audit(dump, tmp_path / "a", monkeypatch, Script(oracle), "--max-pairs", "4")
    assert (small["pairs_labelled"], small["pairs_same_outcome"]) == (4, 4)
    assert len({line["group"] for line in small_lines if line["kind"] == LABELLED}) == 3  # every diverse group
    _, all_lines = run_audit(dump, tmp_path / "b", monkeypatch, Script(oracle))
    assert {line["pair"] for line in small_lines} <= {line["pair"] for line in all_lines}
    _, other_seed = run_audit(dump, tmp_path / "c", monkeypatch, Script(oracle), "--max-pairs", "4", "--seed", "1")
    assert {line["pair"] for line in other_seed} != {line["pair"] for line in small_lines}
    _, same_seed = run_audit(dump, tmp_path / "d", monkeypatch, Script(oracle), "--max-pairs", "4")
    assert [line["pair"] for line in same_seed] == [line["pair"] for line in small_lines]


def test_low_mass_calls_are_credited_to_their_own_call_under_concurrency(dump, tmp_path, monkeypatch):
    class LowMass(Script):
        async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
            await asyncio.sleep(0)
            if session(first.text) % 2 == 0:
                self.stats.low_mass += 1
                report_cost(low_mass=1)  # into this call's record
            await asyncio.sleep(0)  # the other calls' increments land while this one is in flight
            return 0.5

    judge = LowMass(None)
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge, "--concurrency", "8")
    for line in lines:
        shown_first = (line["first"], line["second"])
        assert line["low_mass"] == [int(position % 2 == 0) for position in shown_first], line["pair"]
    assert summary["calls_low_mass"] == judge.stats.low_mass == sum(sum(line["low_mass"]) for line in lines) > 0
    assert type(judge.stats) is JudgeStats  # the audit never touches the judge's stats


def test_token_counts_the_judge_reports_are_credited_per_call(dump, tmp_path, monkeypatch):
    class Counting(Script):
        async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
            report_cost(tokens_in=len(first.text) + len(second.text))
            await asyncio.sleep(0)  # the other calls' counts land while this one is in flight
            report_cost(tokens_out=session(first.text) + 1)
            return 1.0

    summary, lines = run_audit(dump, tmp_path, monkeypatch, Counting(None), "--concurrency", "8")
    texts = {}
    for line in lines:
        first, second = line["first"], line["second"]
        assert line["tokens_out"] == [first + 1, second + 1]
        assert line["tokens_in"][0] == line["tokens_in"][1] > 0
        texts[line["pair"]] = line["tokens_in"][0]
    calls = [n for line in lines for n in line["tokens_in"]]
    assert summary["tokens_in_per_call"] == float(Fraction(sum(calls), len(calls)))
    outs = [n for line in lines for n in line["tokens_out"]]
    assert summary["tokens_out_per_call"] == float(Fraction(sum(outs), len(outs)))
    assert summary["run"]["tokens_from"] == judging.REPORTED_SOURCE


def test_a_model_judge_without_token_counters_is_counted_with_its_tokenizer(dump, tmp_path, monkeypatch):
    class Words(ModelJudge):
        name = "words"

        def __init__(self):
            super().__init__(judge_settings(parse_retries=0), count_tokens=lambda text: len(text.split()))
            self.prompts: list[int] = []

        async def _generate(self, messages, temperature, group=None):
            self.prompts.append(len("\n\n".join(m["content"] for m in messages).split()))
            await asyncio.sleep(0)
            return Reply("Both are fine; A is clearer.\n[[A]]")

    judge = Words()
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge, "--concurrency", "3")
    assert all(line["tokens_out"] == [7, 7] for line in lines)  # one generation per call, 7 words
    assert sorted(n for line in lines for n in line["tokens_in"]) == sorted(judge.prompts)
    assert summary["tokens_out_per_call"] == 7.0 and summary["first_position_preference"] == 1.0
    assert "_generate" not in vars(judge)  # nothing of the judge is replaced
    assert summary["run"]["tokens_from"] == judging.TOKENIZER_SOURCE


def test_a_probability_read_counts_its_prompt_and_no_generated_token_and_its_low_mass(dump, tmp_path, monkeypatch):
    class Reader(ModelJudge):
        """Reads its verdict from next-token probabilities (one read per call, no generation); the labels get little
        mass (low-mass) when the first-shown trace's session is even."""

        name = "reader"

        def __init__(self):
            super().__init__(judge_settings(verdict="probability"), count_tokens=lambda text: len(text.split()))
            self.prompts: dict[tuple[int, int], int] = {}  # (first, second shown): the read's prompt, in words

        async def _generate(self, messages, temperature, group=None):
            raise AssertionError("a probability read generates nothing")

        async def _next_token_probs(self, messages, continuation, targets, group=None):
            text = "\n\n".join(m["content"] for m in messages)
            shown = tuple(int(n) for n in _SESSION.findall(text))
            self.prompts[shown] = len((text + continuation).split())
            await asyncio.sleep(0)  # the other calls' counts land while this one is in flight
            return {"A": 0.75, "B": 0.25} if shown[0] % 2 else {"A": 0.09375, "B": 0.03125}  # mass < low_mass_floor

    judge = Reader()
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge, "--concurrency", "4")
    for line in lines:
        first, second = line["first"], line["second"]
        assert line["tokens_in"] == [judge.prompts[(first, second)], judge.prompts[(second, first)]] > [0, 0]
        assert line["tokens_out"] == [0, 0] and line["outcomes"] == [0.75, 0.75]
        assert line["low_mass"] == [int(first % 2 == 0), int(second % 2 == 0)], line["pair"]
    assert summary["tokens_out_per_call"] == 0.0 and summary["first_position_preference"] == 0.75
    assert summary["calls_low_mass"] == judge.stats.low_mass == sum(sum(line["low_mass"]) for line in lines) > 0
    assert summary["run"]["tokens_from"] == judging.TOKENIZER_SOURCE


def test_summary_keys_report_files_and_the_console_line(dump, tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch, Script(oracle)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary)[: len(FIGURE_KEYS) + 2] == [*FIGURE_KEYS, "judge", "verdict"]
    assert summary["judge"] == "simulated" and summary["verdict"] == "generate"
    for key in ("pairs_labelled", "pairs_same_outcome", "calls", "calls_without_verdict", "calls_low_mass"):
        assert type(summary[key]) is int
    assert summary["tokens_in_per_call"] is None  # a scripted judge without a tokenizer measures no tokens
    for name in ("labelled_outcomes", "same_outcome_outcomes", "by_order"):
        assert (out / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    page = (out / "index.html").read_text()
    assert "accuracy" in page and "labelled_outcomes.png" in page
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "audit of simulated (SIMULATED judge), verdict generate: 10 labelled"
    )
    assert "accuracy 100.0%" in lines[0] and str(out / "index.html") in lines[0]


def test_the_engines_prompt_and_cached_tokens_are_credited_per_call(dump, tmp_path, monkeypatch):
    class Engine(ModelJudge):
        """Its engine reports, per generation, a prompt of 1000 + 10 * first + second tokens (the sessions shown)
        and a cache hit of 100 * first of them."""

        name = "engine"

        def __init__(self):
            super().__init__(judge_settings(parse_retries=0))

        async def _generate(self, messages, temperature, group=None):
            first, second = (int(n) for n in _SESSION.findall("\n\n".join(m["content"] for m in messages)))
            await asyncio.sleep(0)  # the other calls' counts land while this one is in flight
            self.count_usage(1000 + 10 * first + second, 100 * first)
            return Reply("[[A]]")

    judge = Engine()
    summary, lines = run_audit(dump, tmp_path, monkeypatch, judge, "--concurrency", "8")
    for line in lines:
        first, second = line["first"], line["second"]
        assert line["prompt_tokens"] == [1000 + 10 * first + second, 1000 + 10 * second + first], line
        assert line["cached_tokens"] == [100 * first, 100 * second], line
    prompts = [n for line in lines for n in line["prompt_tokens"]]
    cached = [n for line in lines for n in line["cached_tokens"]]
    assert sum(prompts) == judge.stats.prompt_tokens and sum(cached) == judge.stats.cached_tokens > 0
    assert summary["prompt_tokens_per_call"] == float(Fraction(sum(prompts), len(prompts)))
    assert summary["cached_tokens_per_call"] == float(Fraction(sum(cached), len(cached)))
    assert summary["tokens_in_per_call"] is None  # no tokenizer: no count of its own


def test_a_judge_that_reports_no_usage_has_null_engine_tokens_and_old_pairs_files_still_resume(
    dump, tmp_path, monkeypatch
):
    summary, lines = run_audit(dump, tmp_path, monkeypatch, Script(oracle))
    assert summary["prompt_tokens_per_call"] is None and summary["cached_tokens_per_call"] is None
    assert all(line["prompt_tokens"] == [None, None] for line in lines)
    # A pairs file written before the engine counts existed: its lines lack the keys; a rerun reads it, judges
    # nothing again, and the figures stay null.
    pairs = tmp_path / "report" / "pairs.jsonl"
    old = [{k: v for k, v in line.items() if k not in ("prompt_tokens", "cached_tokens")} for line in lines]
    pairs.write_text("".join(json.dumps(line) + "\n" for line in old))
    judge = Script(oracle)
    summary, _ = run_audit(dump, tmp_path, monkeypatch, judge)
    assert judge.calls == [] and summary["prompt_tokens_per_call"] is None and summary["calls"] == len(lines) * 2


def test_an_ensemble_audits_each_member_and_the_ensemble_on_the_same_pairs(dump, tmp_path, monkeypatch):
    """An oracle, an always-first judge and a member that always fails, combined by their mean: the ensemble's
    figures, each member's alone, and the agreement between members, on the same pairs; the failing member's calls
    are its own (the ensemble's calls all have a verdict)."""
    from arena_verl.judge.ensemble import EnsembleJudge, Member

    def dead(problem, first, second):
        raise ConnectionError("gone")

    judge = EnsembleJudge(
        [Member("judge", Script(oracle), 5.0), Member("first", Script(always_first), 5.0),
         Member("dead", Script(dead), 5.0)]
    )  # fmt: skip
    summary, lines = run_audit(
        dump, tmp_path, monkeypatch, judge, "--member", "first=simulated", "--member", "dead=simulated?seed=2"
    )
    assert summary["judge"].startswith("ensemble(mean): judge=simulated + first=simulated + dead=simulated")
    calls = 2 * (LABELLED_PAIRS + SAME_PAIRS)
    members, between = summary["members"]["alone"], summary["members"]["between"]
    assert members["judge"]["accuracy"] == 1.0 and members["first"]["first_position_preference"] == 1.0
    assert members["dead"]["calls_without_verdict"] == calls and members["dead"]["accuracy"] is None
    assert summary["calls_without_verdict"] == 0
    # the mean of the oracle and always-first: a labelled pair's correct trace wins shown first, ties shown second
    assert (summary["accuracy_first_order"], summary["accuracy_second_order"]) == (1.0, 0.5)  # a tie: half
    assert between["dead vs first"] is None  # never both answered
    assert 0 < between["first vs judge"] < 1
    assert all(set(line["members"]) == {"judge", "first", "dead"} for line in lines)
    assert all(line["members"]["dead"] == [None, None] for line in lines)
    assert "Ensemble members" in (tmp_path / "report" / "index.html").read_text()
