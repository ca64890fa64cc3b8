"""JUDGE_PLACEMENT=verl: verl's own RewardModelManager serves the judge. Driven here with a fake replica that records
sleep/wake (no GPU, no vLLM, no Ray): under verl's default free_cache_engine=true the manager puts the judge to sleep
at start and, on the streaming reward path the recipe uses, nothing wakes it; under the recipe's own overrides the
judge is awake for its first call. The arena-side guard (arena_verl.verl_edge.judge_placement) refuses the compositions
that would leave the judge silent."""

import os
import subprocess
import sys
import types

import pytest
import ray

from arena_verl.tools import recipe
from arena_verl.verl_edge.judge_placement import RECIPE_OVERRIDES, check_verl_placement, verl_placement_problems
from helpers import paths

REPO = paths.REPO
NO_VERL_PYTHON = "/usr/bin/python3"  # a Python without verl: the recipe's dry run prints the command only (fast)
SLEEP_KEY = "reward.reward_model.rollout.free_cache_engine"


@pytest.fixture(scope="module")
def judge_dir(tmp_path_factory):
    """A judge folder verl's HFModelConfig loads: the toy tokenizer and a tiny model config (no weights needed)."""
    from transformers import Qwen2Config

    from arena_verl.testing.toy import build_toy_tokenizer

    path = build_toy_tokenizer(tmp_path_factory.mktemp("judge"))
    tiny = dict(vocab_size=400, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, max_position_embeddings=512)  # fmt: skip
    Qwen2Config(architectures=["Qwen2ForCausalLM"], **tiny).save_pretrained(str(path))
    return path


def recipe_command(tmp_path, judge_dir, **env) -> tuple[str, list[str]]:
    """The config name and Hydra overrides that ``recipes/arena_live.sh --dry-run`` prints for JUDGE_PLACEMENT=verl."""
    import shlex

    base = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING"))}
    base.update(MODELS_DIR=str(tmp_path / "models"), DATA_DIR=str(tmp_path / "data"), RUN_DIR=str(tmp_path / "run"),
                PYTHON=NO_VERL_PYTHON, JUDGE_PLACEMENT="verl", JUDGE_MODEL=str(judge_dir),
                JUDGE_GPUS_PER_NODE="2", JUDGE_TP="1", **env)  # fmt: skip
    result = subprocess.run(["bash", str(REPO / "recipes" / "arena_live.sh"), "--dry-run"], capture_output=True,
                            text=True, timeout=120, env=base, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    command = shlex.split(lines[lines.index("# command") + 1])
    name = next(a.split("=", 1)[1] for a in command if a.startswith("--config-name="))
    return name, command[command.index(f"--config-name={name}") + 1 :]


@pytest.fixture(scope="module")
def recipe_overrides(tmp_path_factory, judge_dir):
    return recipe_command(tmp_path_factory.mktemp("recipe"), judge_dir)


def compose(recipe_overrides, *extra):
    name, overrides = recipe_overrides
    return recipe.compose_experiment(name, [*overrides, *extra])


def with_verl_default(recipe_overrides):
    """The recipe's command with any free_cache_engine override taken out: verl's default (true) applies."""
    name, overrides = recipe_overrides
    return name, [o for o in overrides if not o.lstrip("+~").startswith(f"{SLEEP_KEY}=")]


class RecordingReplica:
    """Stands in for verl's vLLMReplica (same constructor, RolloutReplica's own __init__ and config conversion):
    records how it was started and every sleep()/wake_up(), in order."""

    created: list["RecordingReplica"] = []

    @classmethod
    def make_class(cls):
        from verl.workers.rollout.replica import RolloutReplica

        class Replica(RolloutReplica):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.events = []
                cls.created.append(self)

            async def launch_servers(self):
                self._server_address = f"127.0.0.1:{18000 + self.replica_rank}"
                self._server_handle = None

            async def init_colocated(self, resource_pool):
                self.events.append("init_colocated")
                await self.launch_servers()

            async def init_standalone(self):
                self.events.append("init_standalone")
                await self.launch_servers()

            async def sleep(self):
                self.events.append("sleep")

            async def wake_up(self):
                self.events.append("wake_up")

        return Replica


def asleep(events: list[str]) -> bool:
    """A sleep() with no later wake_up()."""
    moves = [e for e in events if e in ("sleep", "wake_up")]
    return bool(moves) and moves[-1] == "sleep"


@pytest.fixture
def start_judge(monkeypatch):
    """Start verl's real RewardModelManager on a config the way the V1 trainer does (``reward_pool`` resource pool,
    trainer/ppo/v1/trainer_base.py), with the replica factory and the router process replaced; return the replicas'
    events as they stand when the first judge call is made."""
    import verl.experimental.reward_loop.router.naive_router as naive_router
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager
    from verl.experimental.reward_loop.reward_model import RewardModelManager
    from verl.single_controller.ray.base import RayResourcePool
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    RecordingReplica.created = []
    replica_cls = RecordingReplica.make_class()
    monkeypatch.setitem(RolloutReplicaRegistry._registry, "vllm", lambda: replica_cls)
    monkeypatch.setattr(naive_router, "launch_router_process", lambda worker_urls: ("127.0.0.1:18999", None))

    def start(config) -> list[list[str]]:
        rm = config.reward.reward_model
        assert rm.enable and rm.rollout.name == "vllm"
        pool = None
        if rm.enable_resource_pool:
            pool = RayResourcePool(process_on_nodes=[rm.n_gpus_per_node] * rm.nnodes, name_prefix="reward_pool")
            pool.pgs = [types.SimpleNamespace(id=i) for i in range(rm.nnodes)]  # placement groups "already made"
        manager = RewardModelManager(rm, pool)
        assert not ray.is_initialized()  # nothing here needed Ray
        assert manager.get_router_address() == "127.0.0.1:18999"
        # The trainers call compute_rm_score (the only wake_up) only when the reward loop hands out no worker
        # handles; otherwise the first judge call comes from the agent loop's streaming reward, right after init.
        trainer_view = types.SimpleNamespace(config=config, reward_loop_workers=["worker"])
        streaming = RewardLoopManager.reward_loop_worker_handles.fget(trainer_view) is not None
        assert streaming == bool(rm.enable_resource_pool)
        if not streaming:
            manager.wake_up()  # compute_rm_score's first step, before any judge call
        return [replica.events for replica in RecordingReplica.created]

    return start


def test_verl_default_puts_the_judge_to_sleep_for_good(start_judge, recipe_overrides):
    """Today's failure, pinned: with free_cache_engine at verl's default the replicas sleep and nothing wakes them."""
    config = compose(with_verl_default(recipe_overrides))
    assert config.reward.reward_model.rollout.free_cache_engine is True
    events = start_judge(config)
    assert len(events) == 2  # 2 judge GPUs, TP 1: two replicas
    assert all(e == ["init_colocated", "sleep"] for e in events), events
    assert all(asleep(e) for e in events)
    # ... and the guard refuses that composition.
    problems = verl_placement_problems(config)
    assert len(problems) == 1 and "free_cache_engine=false" in problems[0]
    with pytest.raises(ValueError, match="free_cache_engine"):
        check_verl_placement(config)


def test_the_recipes_overrides_keep_the_judge_awake(start_judge, recipe_overrides):
    """The recipe's own JUDGE_PLACEMENT=verl command: the judge must be awake for its first call."""
    config = compose(recipe_overrides)
    events = start_judge(config)
    assert events and not any(asleep(e) for e in events), (
        f"the judge sleeps for good ({events}): the recipe needs {' '.join(RECIPE_OVERRIDES)}"
    )
    assert all(e == ["init_colocated"] for e in events), events
    assert verl_placement_problems(config) == []
    check_verl_placement(config)


def test_the_override_alone_is_what_keeps_it_awake(start_judge, recipe_overrides):
    """Independent of the recipe's text: verl's default plus free_cache_engine=false never sleeps the replicas."""
    config = compose(with_verl_default(recipe_overrides), f"{SLEEP_KEY}=False")
    events = start_judge(config)
    assert events == [["init_colocated"], ["init_colocated"]]
    assert verl_placement_problems(config) == []


def test_without_its_own_pool_the_judge_is_woken_but_the_v1_trainer_starves_it(start_judge, recipe_overrides):
    """enable_resource_pool=false: verl wakes the judge around its batch scoring (legacy trainer: allowed), but the
    V1 trainer's batch scoring gives the reward manager no uid, data source or ground truth: refused."""
    base = with_verl_default(recipe_overrides)
    config = compose(base, "reward.reward_model.enable_resource_pool=False")
    events = start_judge(config)
    assert all(not asleep(e) for e in events) and all("wake_up" in e for e in events)
    problems = verl_placement_problems(config)
    assert len(problems) == 1 and "enable_resource_pool=false" in problems[0] and "uid" in problems[0]
    legacy = compose(base, "reward.reward_model.enable_resource_pool=False", "trainer.use_v1=False")
    assert verl_placement_problems(legacy) == []


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ([], "free_cache_engine"),  # verl's default: the judge sleeps for good
        ([f"{SLEEP_KEY}=False"], None),
        (["reward.reward_model.enable=False", f"{SLEEP_KEY}=False"], "reward.reward_model.enable=true"),
        (["reward.reward_model.enable_resource_pool=False"], "enable_resource_pool=false"),
        (["reward.arena.mode=rlvr"], None),  # no judge calls at all
        (["reward.arena.judge.base_url=http://judge:8000/v1", "reward.arena.judge.model_path=judge"], None),
    ],
)  # fmt: skip
def test_the_guard(recipe_overrides, extra, refused):
    config = compose(with_verl_default(recipe_overrides), *extra)
    problems = verl_placement_problems(config)
    if refused is None:
        assert problems == []
    else:
        assert len(problems) == 1 and refused in problems[0], problems


def test_the_guard_reads_string_flags_and_takes_given_settings(recipe_overrides):
    from omegaconf import OmegaConf

    from arena_verl.settings import settings_from_config

    config = compose(with_verl_default(recipe_overrides))
    settings = settings_from_config(config)
    OmegaConf.update(config, SLEEP_KEY, "false", force_add=True)
    assert verl_placement_problems(config, settings) == []
    OmegaConf.update(config, SLEEP_KEY, "true", force_add=True)
    assert verl_placement_problems(config, settings) != []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
