"""The trainer's own validation flag reaches the reward manager (arena_verl.validation_signal), whatever the data
says; training samples are left as verl builds them."""

import asyncio
import subprocess
import sys
import types

from arena_verl.validation_signal import VALIDATE_KEY, _patch_agent_loop_worker, is_installed


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


def test_the_flag_follows_each_trajectory_and_training_kwargs_are_untouched():
    module = fake_agent_loop_module()
    _patch_agent_loop_worker(module)
    _patch_agent_loop_worker(module)  # idempotent
    assert is_installed(module.AgentLoopWorker)
    worker = module.AgentLoopWorker()

    async def run():
        await asyncio.gather(
            *(
                worker._run_agent_loop({}, {"validate": i % 2 == 1}, agent_name="single", index=i, uid=f"u{i}")
                for i in range(12)
            )
        )

    asyncio.run(run())
    by_index = {kwargs["index"]: kwargs for kwargs in worker.scored}
    assert len(by_index) == 12
    for i, kwargs in by_index.items():
        if i % 2:
            assert kwargs[VALIDATE_KEY] is True
        else:
            assert VALIDATE_KEY not in kwargs and set(kwargs) == {"index", "uid"}


def test_installed_on_verls_real_agent_loop_worker_by_the_plugin():
    code = (
        "import verl.experimental.agent_loop.agent_loop as m\n"
        "from arena_verl.validation_signal import is_installed\n"
        "import inspect\n"
        "assert is_installed(m.AgentLoopWorker)\n"
        # the wrapped methods keep verl's signatures (hydra/ray introspect methods)
        "print(list(inspect.signature(m.AgentLoopWorker._compute_score).parameters))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'outputs', 'kwargs'" in out.stdout
