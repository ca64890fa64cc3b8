"""The trainer's own validation flag reaches the reward manager (arena_verl.verl_edge.validation_signal), whatever the
data says: every reward call carries it, True or False."""

import asyncio
import os
import subprocess
import sys
import types

from arena_verl.verl_edge.validation_signal import VALIDATE_KEY, _patch_agent_loop_worker, is_installed


def fake_agent_loop_module():
    """verl's AgentLoopWorker in miniature: _run_agent_loop(trajectory) -> ... -> _compute_score(outputs, kwargs)."""

    class AgentLoopWorker:
        def __init__(self):
            self.scored = []

        async def _run_agent_loop(self, sampling_params, trajectory, *, agent_name, trace=True, **kwargs):
            await asyncio.sleep(0.01 * (kwargs["index"] % 3))  # interleave the tasks
            await self._compute_score([kwargs["index"]], kwargs=kwargs)

        async def _compute_score(self, outputs, kwargs):
            self.scored.append(dict(kwargs))

    return types.SimpleNamespace(AgentLoopWorker=AgentLoopWorker)


def test_the_flag_follows_each_trajectory():
    module = fake_agent_loop_module()
    _patch_agent_loop_worker(module)
    _patch_agent_loop_worker(module)  # idempotent
    assert is_installed(module.AgentLoopWorker)
    worker = module.AgentLoopWorker()

    async def run():
        await asyncio.gather(
            *(
                # verl's V1 trainer passes the trajectory by keyword, the legacy one by position
                worker._run_agent_loop({}, trajectory={"validate": i % 2 == 1}, agent_name="single", index=i, uid=i)
                if i % 4 < 2
                else worker._run_agent_loop({}, {"validate": i % 2 == 1}, agent_name="single", index=i, uid=i)
                for i in range(12)
            )
        )

    asyncio.run(run())
    by_index = {kwargs["index"]: kwargs for kwargs in worker.scored}
    assert len(by_index) == 12
    for i, kwargs in by_index.items():
        assert kwargs[VALIDATE_KEY] is (i % 2 == 1) and set(kwargs) == {"index", "uid", VALIDATE_KEY}


def test_a_changed_verl_signature_is_left_alone_with_a_warning(caplog):
    module = fake_agent_loop_module()

    async def _compute_score(self, outputs, extra):  # a renamed parameter: wrapping it would break every call
        return None

    module.AgentLoopWorker._compute_score = _compute_score
    _patch_agent_loop_worker(module)
    assert not is_installed(module.AgentLoopWorker) and "has changed" in caplog.text


def test_a_failing_patch_never_breaks_the_import(caplog):
    from arena_verl.verl_edge.import_hooks import after_import

    def broken(module):
        raise RuntimeError("patch bug")

    after_import("json", broken)  # already imported: applied now, and contained
    assert "patching json failed" in caplog.text


def test_installed_on_verls_real_agent_loop_worker_by_the_plugin():
    code = (
        "import verl.experimental.agent_loop.agent_loop as m\n"
        "from arena_verl.verl_edge.validation_signal import is_installed\n"
        "import inspect\n"
        "assert is_installed(m.AgentLoopWorker)\n"
        # the wrapped methods keep verl's signatures (hydra/ray introspect methods)
        "print(list(inspect.signature(m.AgentLoopWorker._compute_score).parameters))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'outputs', 'kwargs'" in out.stdout


def test_without_entry_points_the_plugin_loads_as_an_external_module():
    env = {**os.environ, "VERL_USE_EXTERNAL_PLUGINS": "none", "VERL_USE_EXTERNAL_MODULES": "arena_verl.verl_plugin"}
    code = (
        "import verl\n"
        "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
        "import verl.experimental.agent_loop.agent_loop as m\n"
        "from verl.utils.tracking import Tracking\n"
        "from arena_verl.verl_edge.validation_signal import is_installed\n"
        "print(get_reward_manager_cls('arena').__name__, is_installed(m.AgentLoopWorker), Tracking._arena_hook)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ArenaRewardManager", "True", "True"]
