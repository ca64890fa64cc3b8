"""The vllm judge's engine pool and engine actor with fakes (no Ray cluster, no vLLM engine): a bounded start with a
clear error, an engine replaced only when its actor died (not when it is only unavailable), a timed-out call
aborted in its engine by request id, and the actor's abort of a request running or not yet started."""

import asyncio
from types import SimpleNamespace

import pytest
import ray

from arena_verl.core.judge_protocol import Trace
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.backends.vllm_backend import JudgeStartError, VLLMEngineActor, VLLMJudge
from arena_verl.settings import judge_settings

SETTINGS = dict(backend="vllm", model_path="m", timeout_s=2.0, retries=2, backoff_s=0.0, parse_retries=0)


class Method:
    """``handle.method.remote(*args)``: an awaitable running ``behaviour(*args)``, every call recorded."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.calls = []

    def remote(self, *args):
        self.calls.append(args)
        return asyncio.ensure_future(self.behaviour(*args))  # runs whether awaited or not, as a Ray call does


class FakeEngine:
    """A stand-in for a VLLMEngineActor handle: ``replies`` are returned (or raised) in turn; "hang" never ends."""

    def __init__(self, replies=(), ready=None):
        self.replies = list(replies)
        self.ready = Method(ready or self._ready)
        self.generate = Method(self._generate)
        self.abort = Method(self._abort)
        self.aborted = []

    async def _ready(self):
        return True

    async def _generate(self, messages, temperature, request_id):
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "hang":
            await asyncio.sleep(60)
        return reply, False, (100, 40)  # (text, truncated, (prompt tokens, cached))

    async def _abort(self, request_id):
        self.aborted.append(request_id)


class PoolJudge(VLLMJudge):
    """VLLMJudge over fake engines: the pool logic of the real class, no tokenizer, no Ray."""

    def __init__(self, engines, spares=(), **settings):
        ModelJudge.__init__(self, judge_settings(**{**SETTINGS, **settings}))
        self.spares = list(spares)
        self._engines = list(engines)
        self._init_pool()

    def _start_engine(self):
        return self.spares.pop(0)


def compare(judge):
    return asyncio.run(judge.compare("p", Trace("a"), Trace("b")))


def test_a_dead_engine_is_replaced_and_the_call_retried_on_the_replacement():
    dead = FakeEngine([ray.exceptions.ActorDiedError()])
    spare = FakeEngine(["[[B]]"])
    judge = PoolJudge([dead], [spare])
    assert compare(judge) == 0.0
    assert judge.replaced_engines == 1 and judge._engines == [spare] and judge.stats.errors == 1
    assert len(spare.ready.calls) == 1  # the replacement's start is waited for too
    # The engine's counts of the generation that answered (the dead engine's attempt reported none).
    assert (judge.stats.prompt_tokens, judge.stats.cached_tokens, judge.reports_usage) == (100, 40, True)


def test_an_unavailable_engine_is_kept_and_the_call_retried():
    engine = FakeEngine([ray.exceptions.ActorUnavailableError("node unreachable", None), "[[A]]"])
    judge = PoolJudge([engine], [FakeEngine()])
    assert compare(judge) == 1.0
    assert judge.replaced_engines == 0 and judge._engines == [engine] and judge.stats.errors == 1


def test_a_timed_out_generation_is_aborted_in_its_engine_by_request_id():
    engine = FakeEngine(["hang", "hang", "[[A]]"])
    judge = PoolJudge([engine], timeout_s=0.05)
    assert compare(judge) == 1.0
    sent_ids = [args[-1] for args in engine.generate.calls]
    aborted_ids = [args[0] for args in engine.abort.calls]
    assert aborted_ids == sent_ids[:2] and len(set(sent_ids)) == 3  # each attempt has its own id
    assert judge.aborted_calls == 2 and judge.stats.errors == 2


def test_the_start_is_bounded_with_a_clear_error_and_the_engine_killed(monkeypatch):
    killed = []
    monkeypatch.setattr(ray, "kill", killed.append)

    async def never():
        await asyncio.sleep(60)

    engine = FakeEngine(["[[A]]"], ready=never)
    judge = PoolJudge([engine])
    judge.start_timeout_s = 0.05
    with pytest.raises(JudgeStartError, match=r"engine of 'm' was not ready after 0 s"):
        compare(judge)
    assert killed == [engine] and engine.generate.calls == []
    with pytest.raises(JudgeStartError):  # every later call says so too, without waiting again
        compare(judge)
    assert len(engine.ready.calls) == 1


def test_a_start_error_is_raised_not_swallowed():
    async def fails():
        raise ray.exceptions.RayActorError(error_msg="CUDA out of memory while loading the model")

    judge = PoolJudge([FakeEngine(["[[A]]"], ready=fails)])
    with pytest.raises(JudgeStartError, match="failed to start: .*CUDA out of memory"):
        compare(judge)


def test_calls_go_to_started_engines_first():
    async def slow():
        await asyncio.sleep(60)

    starting, started = FakeEngine(["[[B]]"], ready=slow), FakeEngine(["[[A]]"])
    judge = PoolJudge([starting, started])

    async def scenario():
        judge._start_of(0), await judge._start_of(1)
        return judge._pick(None)

    assert asyncio.run(scenario()) == 1


# -- the engine actor ---------------------------------------------------------------------------------------------


class SlowEngine:
    """An AsyncLLM stand-in: ``generate`` yields one output after ``delay`` s; ``abort`` records the id."""

    def __init__(self, delay):
        self.delay = delay
        self.aborted = []
        self.started = []

    async def generate(self, prompt, params, request_id):
        self.started.append(request_id)
        await asyncio.sleep(self.delay)
        yield SimpleNamespace(outputs=[SimpleNamespace(text="[[A]]", finish_reason="stop", logprobs=None)])

    async def abort(self, request_id):
        self.aborted.append(request_id)


class Tokenizer:
    """The messages' text as bytes: a tokenizer without a chat template (the engine gets token ids)."""

    chat_template = None

    def encode(self, text, add_special_tokens=True):
        return list(text.encode())


def actor(delay):
    settings = judge_settings(backend="vllm", model_path="m")
    return VLLMEngineActor(settings, engine=SlowEngine(delay), tokenizer=Tokenizer(), sampling_params=dict)


def test_the_actor_aborts_a_running_request_by_its_id():
    engine_actor = actor(60)

    async def scenario():
        task = asyncio.ensure_future(engine_actor.generate([{"role": "user", "content": "hi"}], 0.0, "req-1"))
        await asyncio.sleep(0.01)
        assert await engine_actor.abort("req-1") is True
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert engine_actor.engine.aborted == ["req-1"] and engine_actor._running == {}


def test_an_abort_before_the_start_keeps_the_request_from_starting():
    engine_actor = actor(0)

    async def scenario():
        assert await engine_actor.abort("req-2") is False
        return await engine_actor.generate([{"role": "user", "content": "hi"}], 0.0, "req-2")

    assert asyncio.run(scenario()) == ("", False, (None, None))  # no text, no engine counts
    assert engine_actor.engine.started == [] and "req-2" not in engine_actor._aborted


def test_the_actor_generates_with_the_given_id():
    engine_actor = actor(0)
    text, truncated, _ = asyncio.run(engine_actor.generate([{"role": "user", "content": "hi"}], 0.0, "req-3"))
    assert (text, truncated, engine_actor.engine.started) == ("[[A]]", False, ["req-3"])


def test_a_replacement_still_loading_does_not_hold_the_calls_of_the_healthy_engine():
    async def slow_start():
        await asyncio.sleep(5.0)
        return True

    dead = FakeEngine([ray.exceptions.ActorDiedError()])
    healthy = FakeEngine(["[[A]]", "[[A]]"])
    spare = FakeEngine(["[[B]]"], ready=slow_start)
    judge = PoolJudge([dead, healthy], [spare], timeout_s=1.0)

    async def scenario():
        loop = asyncio.get_running_loop()
        first = await judge.compare("p", Trace("a"), Trace("b"))  # the dead engine is replaced; retried elsewhere
        started = loop.time()
        second = await judge.compare("p", Trace("a"), Trace("b"))
        return first, second, loop.time() - started

    first, second, took = asyncio.run(scenario())
    assert first == second == 1.0 and judge.replaced_engines == 1
    assert took < 1.0 and len(healthy.generate.calls) == 2 and not spare.generate.calls


def test_calls_go_on_when_a_replacement_fails_to_start():
    async def broken_start():
        raise ray.exceptions.RayActorError()

    dead = FakeEngine([ray.exceptions.ActorDiedError()])
    healthy = FakeEngine(["[[A]]", "[[A]]", "[[A]]"])
    spare = FakeEngine([], ready=broken_start)
    judge = PoolJudge([dead, healthy], [spare])

    async def scenario():
        return [await judge.compare("p", Trace("a"), Trace("b")) for _ in range(3)]

    assert asyncio.run(scenario()) == [1.0, 1.0, 1.0]


# -- group-sticky routing over the engines ------------------------------------------------------------------------


def test_every_call_of_a_group_goes_to_one_engine_and_a_loading_replacement_moves_only_its_groups():
    engines = [FakeEngine(["[[A]]"] * 200) for _ in range(3)]
    judge = PoolJudge(engines)

    async def groups_served():
        for index in range(3):
            await judge._start_of(index)
        served = {}
        for g in range(40):
            for _ in range(3):
                before = [len(e.generate.calls) for e in engines]
                await judge.compare("p", Trace("a"), Trace("b"), group=f"g{g}")
                after = [len(e.generate.calls) for e in engines]
                served.setdefault(f"g{g}", set()).add(next(i for i in range(3) if after[i] > before[i]))
        return served

    served = asyncio.run(groups_served())
    assert all(len(engines_of) == 1 for engines_of in served.values())  # sticky
    assert {next(iter(e)) for e in served.values()} == {0, 1, 2}  # and spread over every engine
    assert judge.stats.rerouted == 0

    async def slow():
        await asyncio.sleep(60)

    judge._engines[1] = FakeEngine(["[[A]]"] * 200, ready=slow)  # engine 1 replaced, its replacement still loading

    async def again():
        judge._start_of(1)
        moved = {}
        for g in served:
            before = [len(e.generate.calls) for e in engines]
            await judge.compare("p", Trace("a"), Trace("b"), group=g)
            after = [len(e.generate.calls) for e in engines]
            moved[g] = next(i for i in range(3) if after[i] > before[i])
        return moved

    moved = asyncio.run(again())
    for g, engines_of in served.items():
        first = next(iter(engines_of))
        assert moved[g] == first if first != 1 else moved[g] in (0, 2)
    assert judge.stats.rerouted == sum(1 for e in served.values() if 1 in e) > 0
