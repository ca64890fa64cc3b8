"""``arena-verl score``: re-judge the non-diverse groups of a rollout dump offline, with any judge and schedule.

    arena-verl score runs/x/rollouts --judge vllm:/models/judge --strategy live --out live.jsonl
    arena-verl score runs/x/rollouts --judge vllm:/models/judge --strategy paced --budget 12 --out paced.jsonl \\
        --compare live.jsonl
    arena-verl score runs/x/rollouts --judge vllm:/models/judge --verdict probability --out soft.jsonl

Reads verl's rollout (or validation) dumps (``<step>.jsonl``, see :mod:`arena_verl.data.dumps`), re-verifies
every sample (:mod:`arena_verl.evaluation.report`: math unless ``--data`` names each prompt's data source), keeps the
groups whose verifier outcomes are all equal (the groups the arena routes to the judge), and runs the project's
tournament on each, with the judge called as the referee calls it and the tournament scheduled as training
schedules it (eager, training's default; ``--wait-for-verdicts`` for the paper's rule), see
:mod:`arena_verl.tools.score.judging`. The dump is read by the one dump reader of ``analyze`` and the evaluation
(:mod:`arena_verl.evaluation.verified`): the dump's ground truth wins, and a ``--data`` row that disagrees is
counted and reported on stderr.

**The score file** (``--out``) holds one JSON line per judged group, appended whole (one ``write`` on an append-only
descriptor, then ``fsync``) as each group finishes: a run killed at any point leaves complete lines and at most one
torn last line. Rerunning with the same ``--out`` drops a torn last line (any text after the last newline, with a
one-line note) and judges only the groups not in the file (keyed by step and group); a corrupt line before the
last is refused, naming its line number. A write that fails mid-run (a full disk) ends with one ``error:`` line and
exit status 1: the lines written stay, and rerunning the same command continues. Every line records the run's
settings (``judge``, ``strategy``, ``budget``, ``seed``, ``verification``, ``wait_for_verdicts``, ``verdict``; a line
without ``wait_for_verdicts`` was scored with the paper's rule, one without ``verdict`` with generated verdicts):
resuming with other settings is an error (one file, one experiment). Every line also records the identity of its
dump step file (``dump_file``: name, size and a digest of its first line): resuming on another dump (a step file
that differs or is missing, a group key the step does not have, a group with other responses) is an error, exit 2
(one file, one dump). Lines written before ``dump_file`` existed are checked by group keys and responses only, with
a note. Keys of a line:

==================  ===========================================================================================
step, group         the dump's step and the group key (``uid <uuid>``: V1 trainer; ``input of line N``: legacy)
judge ...           ``judge`` (canonical spec), ``judge_backend``, ``simulated``, ``strategy``, ``budget``, ``seed``,
                    ``verification``, ``wait_for_verdicts``, ``verdict`` (``generate`` or ``probability``);
                    ``dump_file``: the step file's identity
samples             sample count; ``sample_digests``: a hash of each response, in the order of the arrays below
verifier_reward     the group's common verifier reward (1 all correct, 0 all wrong); ``task``, ``data_source``;
                    ``ground_truth_disagrees``: ``--data`` has another ground truth than the dump (the dump's used)
judge_calls         calls made; ``failures``: calls without a usable verdict (counted as ties in the fit)
pairs               ``[first, second, outcome]`` per call, in call order; first is the trace shown first;
                    outcome 1 first won, 0 second won, 0.5 tie, null failed; with ``--verdict probability`` any
                    number in [0, 1] (P(first is better)), written exactly (the fit of ``pairs`` is ``strengths``)
strengths, rewards  Bradley-Terry strengths and the arena's rewards (``routing.tournament_rewards``, mode arena)
first_wins          the sum of the outcomes of decided verdicts (not 0.5, not failures) for the trace shown first:
                    with hard verdicts the ones it won; ``decided``: their count (the tracker's definition)
==================  ===========================================================================================

The report (printed at the end, also for a file already complete) covers every line of the file: groups, calls,
failures and the first-position win share (0.5 for a judge without position bias). ``--compare OTHER.jsonl`` adds
the agreement with another score file on the groups both scored: the mean Kendall tau between their rewards and
how often both put the same trace first.
"""

from arena_verl.tools.common.dump_groups import DumpGroup
from arena_verl.tools.score.cli import configure_parser, main, run
from arena_verl.tools.score.groups import DumpSummary, read_dump_groups
from arena_verl.tools.score.judging import replay_tournament, score_group, tournament_options
from arena_verl.tools.score.report import compare_runs, render_comparison, render_report, summarise
from arena_verl.tools.score.score_file import RUN_KEYS, ScoreFile, ScoreInputError, read_score_file

__all__ = [
    "RUN_KEYS",
    "DumpGroup",
    "DumpSummary",
    "ScoreFile",
    "ScoreInputError",
    "compare_runs",
    "configure_parser",
    "main",
    "read_dump_groups",
    "read_score_file",
    "render_comparison",
    "render_report",
    "replay_tournament",
    "run",
    "score_group",
    "summarise",
    "tournament_options",
]
