"""DAPO's bound on generation batches (algorithm.filter_groups.max_num_gen_batches), which verl 0.9.1's V1 trainer
ignores: the counter, verl's real sync replay buffer refilling uniform groups (over an in-memory stand-in for
TransferQueue), the trainer patch on a composed rlvr_dapo config, and the referees' figures on a local Ray."""

import logging
import time
import types
import uuid

import pytest
from omegaconf import OmegaConf

from arena_verl.verl_edge import dapo_bound
from arena_verl.verl_edge.dapo_bound import GenerationBound, GenerationLimitExceeded
from helpers import paths

CONFIGS = paths.CONFIGS


# -- the counter --------------------------------------------------------------------------------------------------


def test_a_warning_per_further_batch_and_an_error_past_the_limit(caplog):
    bound = GenerationBound(128, 8, max_num_gen_batches=4, label="rlvr_dapo", figures=lambda step: None)
    caplog.set_level(logging.WARNING, logger="arena_verl.verl_edge.dapo_bound")
    warnings = [bound.before_refill(12, 64) for _ in range(6)]  # 1.5, 2, 2.5, 3, 3.5, 4 batches
    assert [w is not None for w in warnings] == [False, True, False, True, False, True]
    assert warnings[1].startswith("rlvr_dapo: step 12 has generated 2 batches (256 prompts, 2048 rollouts: its first")
    assert "2 refills of 128 prompts in all" in warnings[1]
    assert "too easy or too hard for the policy (algorithm.filter_groups.max_num_gen_batches=4)" in warnings[1]
    with pytest.raises(GenerationLimitExceeded) as error:
        bound.before_refill(12, 1)  # a 513th prompt for a step bounded at 4 x 128
    message = str(error.value)
    assert message.startswith("rlvr_dapo: run stopped at step 12, which has generated 4 batches (512 prompts, 4096")
    assert "6 refills of 384 prompts" in message and "max_num_gen_batches=4" in message
    assert "groups kept so far unknown" in message
    levels = [r.levelno for r in caplog.records if r.name == "arena_verl.verl_edge.dapo_bound"]
    assert levels == [logging.WARNING] * 3 + [logging.ERROR]
    single = GenerationBound(128, 8, max_num_gen_batches=0, label="rlvr_dapo", figures=lambda step: None)
    assert "its first batch and 1 refill of 128 prompts" in single.before_refill(3, 128)


def test_without_a_limit_only_warnings_and_each_step_counts_afresh():
    bound = GenerationBound(4, 2, max_num_gen_batches=0, figures=lambda step: {"scored": 9, "kept": 1})
    messages = [bound.before_refill(1, 4) for _ in range(30)]
    assert all(messages)  # one per further batch, never an error
    assert "step 1 has generated 31 batches" in messages[-1]
    assert "(algorithm.filter_groups.max_num_gen_batches=0: no limit)" in messages[-1]
    assert "1 of 4 groups kept so far (9 groups scored)" in messages[-1]
    assert bound.before_refill(2, 3) is None  # step 2 begins at its own first batch
    assert "step 2 has generated 2 batches" in bound.before_refill(2, 1)


def test_a_limit_of_one_batch_allows_no_refill_and_broken_figures_do_not_matter():
    def broken(step):
        raise RuntimeError("referee gone")

    bound = GenerationBound(8, 4, max_num_gen_batches=1, figures=broken)
    with pytest.raises(GenerationLimitExceeded, match="step 3, which has generated 1 batches .* kept so far unknown"):
        bound.before_refill(3, 1)


# -- verl's real sync replay buffer ---------------------------------------------------------------------------------


class FakeTransferQueue:
    """The four TransferQueue calls verl's ReplayBuffer makes, in memory: tags per partition, values per key."""

    def __init__(self):
        self.tags: dict[str, dict[str, dict]] = {}
        self.values: dict[str, dict] = {}

    def kv_list(self, partition_id=None):
        return {partition: dict(items) for partition, items in self.tags.items()}

    def kv_clear(self, partition_id, keys):
        for key in keys:
            self.tags.get(partition_id, {}).pop(key, None)
            self.values.pop(key, None)

    def kv_batch_get(self, keys, partition_id, select_fields):
        return {"extra_fields": [self.values[key] for key in keys]}

    def put_group(self, step: int, accs, status: str = "finished") -> str:
        """One generated prompt group as the agent loop leaves it (no trajectories when its scoring failed)."""
        uid = uuid.uuid4().hex  # the replay buffer splits keys at "_"
        train = self.tags.setdefault("train", {})
        train[uid] = {"is_prompt": True, "status": status, "global_steps": step}
        if status == "finished":
            for session, acc in enumerate(accs):
                key = f"{uid}_{session}_0"
                train[key] = {"status": "success", "global_steps": step}
                self.values[key] = {"reward_extra_info": {"acc": float(acc)}}
        return uid


@pytest.fixture
def fake_tq(monkeypatch):
    from verl.trainer.ppo.v1 import replay_buffer

    queue = FakeTransferQueue()
    monkeypatch.setattr(replay_buffer, "tq", queue)
    return queue


def sync_buffer(refill_fn, batch_size: int):
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    # As verl's trainer builds it for sync DAPO (trainer_base._build_replay_buffer), polling without sleeping.
    return ReplayBuffer(
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.0,
        refill_fn=refill_fn,
        filter_groups_metric="acc",
        train_batch_size=batch_size,
        gen_batch_size=1,
        max_inflight_gen_batches=1,
    )


def test_uniform_groups_stop_the_real_replay_buffer_at_the_limit(fake_tq):
    """Every group all wrong: verl's buffer alone would refill forever; bounded, sample() raises after 3 batches."""
    batch, n, step = 4, 4, 7
    refilled = []

    def generate(num_prompts):  # the trainer's _add_prompts_to_generate: groups are scored at once here
        assert sum(refilled) < 20 * batch, "refilled past 20 batches: the step is unbounded"  # fail, never hang
        refilled.append(num_prompts)
        for _ in range(num_prompts):
            fake_tq.put_group(step, [0] * n)
        return num_prompts

    buffer = sync_buffer(generate, batch)
    bound = GenerationBound(batch, n, max_num_gen_batches=3, label="rlvr_dapo")
    dapo_bound.guard_replay_buffer(buffer, bound, lambda: step)
    dapo_bound.guard_replay_buffer(buffer, bound, lambda: step)  # guarding twice changes nothing
    for _ in range(batch):  # the step's own batch (prepare_step)
        fake_tq.put_group(step, [0] * n)
    with pytest.raises(GenerationLimitExceeded, match="rlvr_dapo: run stopped at step 7, which has generated 3 batch"):
        buffer.sample(global_steps=step, partition_id="train", batch_size=batch)
    assert sum(refilled) == 2 * batch  # never more than max_num_gen_batches batches generated


def test_without_a_limit_the_real_replay_buffer_warns_until_the_step_completes(fake_tq, caplog):
    batch, n, step = 4, 4, 2
    refilled = []

    def generate(num_prompts):  # from the 3rd batch on, every group is diverse
        for _ in range(num_prompts):
            diverse = sum(refilled) >= batch
            fake_tq.put_group(step, [0, 1, 0, 1] if diverse else [1] * n)
            refilled.append(1)
        return num_prompts

    buffer = sync_buffer(generate, batch)
    dapo_bound.guard_replay_buffer(buffer, GenerationBound(batch, n, max_num_gen_batches=0), lambda: step)
    for _ in range(batch):
        fake_tq.put_group(step, [1] * n)
    caplog.set_level(logging.WARNING, logger="arena_verl.verl_edge.dapo_bound")
    selected, metrics = buffer.sample(global_steps=step, partition_id="train", batch_size=batch)
    assert len(selected.keys) == batch * n and metrics["training/filter_groups/evicted_samples"] == 2 * batch
    warned = [r.getMessage() for r in caplog.records if r.name == "arena_verl.verl_edge.dapo_bound"]
    assert [w.split(" (")[0] for w in warned] == [f"DAPO: step 2 has generated {k} batches" for k in (2, 3)]


# -- the trainer patch, on the shipped config -----------------------------------------------------------------------


def composed(name="rlvr_dapo", overrides=()):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(name, overrides=list(overrides))


def stand_in_trainer(config, global_steps=5):
    """What verl's PPOTrainer._build_replay_buffer reads of its trainer (the real trainer needs GPUs and models)."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    refills = []
    trainer = types.SimpleNamespace(config=config, trainer_mode="sync", global_steps=global_steps)
    trainer._add_prompts_to_generate = lambda num_prompts: refills.append(num_prompts) or num_prompts
    trainer._resolve_filter_groups_metric = lambda: PPOTrainer._resolve_filter_groups_metric(trainer)
    return trainer, refills


def test_the_plugin_bounds_the_v1_trainers_refills_for_rlvr_dapo():
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    import arena_verl.verl_plugin  # noqa: F401  (as verl's plugin loading does in every process)

    assert getattr(PPOTrainer._build_replay_buffer, "_arena_dapo_bound", False)
    config = composed()
    assert config.algorithm.filter_groups.max_num_gen_batches == 10
    trainer, refills = stand_in_trainer(config)
    buffer = PPOTrainer._build_replay_buffer(trainer)
    batch = config.data.train_batch_size
    buffer.refill_fn(9 * batch)  # up to the 10th batch: generated
    assert refills == [9 * batch]
    with pytest.raises(GenerationLimitExceeded, match=r"^rlvr_dapo: run stopped at step 5, which has generated 10 "):
        buffer.refill_fn(1)
    assert refills == [9 * batch]  # nothing generated past the limit
    trainer.global_steps = 6
    assert buffer.refill_fn(1) == 1  # the next step has its own count


@pytest.mark.parametrize(
    "overrides",
    [["algorithm.filter_groups.enable=false"], ["reward.reward_manager.name=naive"]],
    ids=["no-dapo", "not-arena"],
)
def test_other_jobs_are_left_alone(overrides):
    config = composed(overrides=overrides)
    assert dapo_bound.bound_from_config(config) is None
    if config.algorithm.filter_groups.enable:  # verl needs the metric only with DAPO on
        from verl.trainer.ppo.v1.trainer_base import PPOTrainer

        dapo_bound.install_dapo_bound()
        trainer, refills = stand_in_trainer(config)
        buffer = PPOTrainer._build_replay_buffer(trainer)
        assert not getattr(buffer.refill_fn, "_arena_dapo_bound", False)


def test_rlvr_samples_are_counted_for_the_bound_even_without_tracker_metrics():
    from arena_verl.reward_manager import ArenaRewardManager

    config = composed(overrides=["reward.arena.log_metrics=false"])
    assert ArenaRewardManager(config, tokenizer=None).observe_rlvr
    config = composed("rlvr", overrides=["reward.arena.log_metrics=false"])
    assert not ArenaRewardManager(config, tokenizer=None).observe_rlvr


# -- the referees' figures, and the error through Ray ---------------------------------------------------------------


def test_referee_figures_sum_every_shard_and_the_error_reaches_the_driver(ray_cluster):
    ray = ray_cluster
    from arena_verl.actors.referee_actor import referee_handle
    from arena_verl.core.referee import Submission
    from arena_verl.judge import Trace
    from arena_verl.settings import arena_settings

    settings = arena_settings(mode="rlvr", group_size=4, num_referees=2, referee_name=f"dapo_{uuid.uuid4().hex[:8]}")
    step, groups = 3, {f"uniform-{i}": [0.0] * 4 for i in range(5)}
    groups["diverse"] = [0.0, 1.0, 1.0, 0.0]
    groups["other-step"] = [1.0] * 4
    for uid, rewards in groups.items():
        for i, reward in enumerate(rewards):
            sample_step = step + 1 if uid == "other-step" else step
            submission = Submission(uid, f"session-{i}", "", Trace(""), reward, step=sample_step)
            referee_handle(settings, uid).observe.remote(submission)  # as the rlvr manager does: fire and forget
    figures = dapo_bound.referee_figures(settings)
    deadline = time.monotonic() + 30
    while (figures(step) or {}).get("scored") != 6 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert figures(step) == {"scored": 6, "kept": 1}
    shards = {ray.get(referee_handle(settings, uid).metrics.remote(step))["arena/groups"] for uid in groups}
    assert len(shards) == 2  # the groups really are split over both shards

    @ray.remote(num_cpus=0)
    class Trainer:  # stands for verl's TaskRunnerV1, whose run() main_ppo waits on with ray.get
        def run(self, name):
            figures = dapo_bound.referee_figures(arena_settings(num_referees=2, referee_name=name))
            bound = GenerationBound(4, 4, 2, "rlvr_dapo", figures)
            bound.before_refill(3, 4)
            bound.before_refill(3, 1)

    with pytest.raises(GenerationLimitExceeded) as error:
        ray.get(Trainer.remote().run.remote(settings.referee_name))
    assert "which has generated 2 batches (8 prompts, 32 rollouts" in str(error.value)
    assert "1 of 4 groups kept so far (6 groups scored)" in str(error.value)
