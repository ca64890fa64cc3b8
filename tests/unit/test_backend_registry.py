"""The judge-backend registry (``arena_verl.backend_registry``): adding a backend is one module and one entry. A backend
defined here, registered by one entry, is accepted by the settings, named by ``--judge``, built by the factory and
run through ``arena-verl audit-judge`` and the referee; the built-in entries name classes that exist."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

from arena_verl.backend_registry import BACKENDS, JudgeBackend, backend_of, spec_error
from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.names import ROUTE_TOURNAMENT
from arena_verl.core.referee import Referee, Submission
from arena_verl.judge.factory import make_judge
from arena_verl.judge.spec import judge_settings_from_spec, judge_spec, judge_spec_forms
from arena_verl.settings import ArenaSettings, JudgeSettings, referee_options, settings_from_config
from arena_verl.tools.audit import command
from helpers.score_dumps import write_dump


class LongerJudge:
    """A judge of its own: the longer trace is better (``seed`` breaks nothing; it only shows a setting arrives)."""

    name = "longer"

    def __init__(self, settings: JudgeSettings):
        self.settings = settings
        self.stats = JudgeStats()

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.stats.calls += 1
        a, b = len(first.text), len(second.text)
        return 0.5 if a == b else float(a > b)

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        self.stats.calls += 1
        return min(1.0, len(trace.text) / 100)

    async def close(self):
        pass


def _parse_longer(spec: str) -> dict:
    head, question, query = spec.partition("?")
    if head != "longer" or (question and not query.startswith("seed=")):
        raise spec_error(spec, "longer takes only ?seed=N")
    return {"seed": int(query[len("seed=") :])} if question else {}


LONGER = JudgeBackend(
    "longer",
    factory=LongerJudge,
    spec_form="longer[?seed=N]",
    parse_spec=_parse_longer,
    format_spec=lambda settings: f"longer?seed={settings.seed}",
    prompts=False,
)


@pytest.fixture
def longer(monkeypatch):
    monkeypatch.setitem(BACKENDS, "longer", LONGER)
    return LONGER


def test_an_unregistered_backend_is_refused_by_the_settings_and_the_grammar():
    with pytest.raises(ValueError, match=r"reward.arena.judge.backend must be one of"):
        settings_from_config({"reward": {"arena": {"group_size": 2, "judge": {"backend": "longer"}}}})
    with pytest.raises(ValueError, match="unknown judge 'longer'"):
        judge_settings_from_spec("longer")


def test_one_entry_makes_a_backend_of_the_settings_the_grammar_and_the_factory(longer):
    settings = settings_from_config({"reward": {"arena": {"group_size": 2, "judge": {"backend": "longer"}}}})
    assert backend_of(settings.judge) is longer
    assert "longer[?seed=N]" in judge_spec_forms()
    judge_settings = judge_settings_from_spec("longer?seed=3")
    assert (judge_settings.backend, judge_settings.seed, judge_spec(judge_settings)) == ("longer", 3, "longer?seed=3")
    judge = make_judge(judge_settings)
    assert isinstance(judge, LongerJudge) and judge.settings.seed == 3
    # The facts it leaves at their defaults: it retries (the call bound is call_budget_s), places nothing.
    assert not (longer.gpu_engines or longer.model_folder or longer.needs_url or longer.simulated)


def test_a_registered_backend_runs_through_audit_judge(longer, tmp_path):
    patterns = {1: [[1, 0, 1], [0, 0, 0]]}  # one labelled group, one same-outcome triple
    dump = write_dump(tmp_path / "rollout", patterns)
    out = tmp_path / "report"
    assert command.main([str(dump), "--judge", "longer?seed=5", "--out", str(out), "--workers", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    lines = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert summary["calls"] == 2 * len(lines) > 0
    assert {line["judge"] for line in lines} == {"longer?seed=5"}
    assert {(line["judge_backend"], line["simulated"]) for line in lines} == {("longer", False)}


def test_a_registered_backend_judges_a_routed_group_through_the_referee(longer):
    settings = ArenaSettings(
        group_size=3, group_deadline_s=10.0, tournament_timeout_s=10.0, judge=JudgeSettings(backend="longer")
    )
    texts = ["a" * 30, "a" * 10, "a" * 20]
    subs = [Submission(uid="g", sample_key=str(i), problem="p", trace=Trace(t), verifier_reward=0.0)
            for i, t in enumerate(texts)]  # fmt: skip

    async def scenario():
        referee = Referee(referee_options(settings), make_judge(settings.judge))
        verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in subs)), 30)
        await referee.drain()
        return verdicts, referee

    verdicts, referee = asyncio.run(scenario())
    assert all(v.route == ROUTE_TOURNAMENT for v in verdicts)
    rewards = [v.reward for v in verdicts]
    assert rewards[0] > rewards[2] > rewards[1]  # longer is better
    assert isinstance(referee.judge, LongerJudge) and referee.judge.stats.calls == verdicts[0].judge_calls > 0


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_built_in_factory_names_a_callable_that_exists(name):
    """Checked without importing the backend (its SDKs): the module exists and defines the name at top level."""
    factory = BACKENDS[name].factory
    assert isinstance(factory, str)
    module, _, attribute = factory.partition(":")
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert attribute in defined, factory
