"""A judge backend defined in this file alone, the way a user adds an HTTP API of their own: an options field of its
own (``api_weight``), a request path other than ``/v1/chat/completions``, and no label probabilities. Its field is
set with ``+reward.arena.judge.api_weight=...`` in a composed config and through ``--judge``; it runs through
``arena-verl audit-judge`` and a referee; ``verdict=probability`` is refused for it, naming why. No package file
names it."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import threading
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from arena_verl.backend_registry import BACKENDS, JudgeBackend, backend_of, register, spec_error
from arena_verl.backend_registry.builtin import EndpointOptions
from arena_verl.backend_registry.grammar import endpoint_grammar, exact
from arena_verl.core.fields import setting
from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.names import ROUTE_TOURNAMENT
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.urls import request_url
from arena_verl.judge.factory import make_judge
from arena_verl.judge.spec import judge_settings_from_spec, judge_spec
from arena_verl.settings import arena_settings, settings_from_config
from arena_verl.tools.audit import command
from arena_verl.tools.common.compose import compose_experiment
from helpers.score_dumps import write_dump

PATH = "/v2/judge"


@dataclass(frozen=True)
class ScorerApiOptions(EndpointOptions):
    api_weight: float = setting(1.0, low=0.0, high=1.0, help="scorer_api: how much the API's preference counts")


class ScorerApiJudge:
    """POSTs each pair to the API at its request path; the API prefers the longer trace."""

    name = "scorer_api"

    def __init__(self, settings):
        self.settings = settings
        self.url = request_url(settings.options.base_url, settings.request_path)
        self.stats = JudgeStats()

    def _post(self, body: dict) -> float:
        request = urllib.request.Request(self.url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            return float(json.loads(reply.read())["outcome"])

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.stats.calls += 1
        body = {"first": first.text, "second": second.text, "weight": self.settings.options.api_weight}
        return await asyncio.to_thread(self._post, body)

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        raise NotImplementedError

    async def close(self):
        pass


_endpoint_parse, _endpoint_format = endpoint_grammar("scorer_api")


def _parse(spec: str) -> dict:
    head, question, query = spec.partition("?")
    keys = _endpoint_parse(head)
    if question:
        name, _, value = query.partition("=")
        if name != "api_weight":
            raise spec_error(spec, "scorer_api takes only ?api_weight=X")
        keys["api_weight"] = float(value)
    return keys


SCORER_API = JudgeBackend(
    "scorer_api",
    options=ScorerApiOptions,
    factory=ScorerApiJudge,
    spec_form="scorer_api:URL#MODEL[?api_weight=X]",
    parse_spec=_parse,
    format_spec=lambda s: f"{_endpoint_format(s)}?api_weight={exact(s.options.api_weight)}",
    needs_url=True,
    request_path=PATH,
    label_probabilities=False,
    prompts=False,
    retries=False,
)


@pytest.fixture
def api():
    """The backend registered, and a loopback API that answers at PATH only (recording what it was sent)."""
    seen: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, body))
            if self.path != PATH:
                self.send_error(404)
                return
            a, b = len(body["first"]), len(body["second"])
            reply = json.dumps({"outcome": 0.5 if a == b else 0.5 + (0.5 if a > b else -0.5) * body["weight"]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    register(SCORER_API)  # as a user's package does at import
    try:
        yield f"http://127.0.0.1:{server.server_port}/v2", seen
    finally:
        del BACKENDS["scorer_api"]
        server.shutdown()


def test_its_own_field_is_set_with_plus_in_a_composed_config(api):
    url, _ = api
    overrides = [
        "reward.arena.judge.backend=scorer_api",
        f"reward.arena.judge.base_url={url}",
        "reward.arena.judge.model_path=m",
        "+reward.arena.judge.api_weight=0.25",
        "actor_rollout_ref.rollout.n=4",
    ]
    settings = settings_from_config(compose_experiment("arena_ppo", overrides))
    assert settings.judge.options == ScorerApiOptions(base_url=url, model_path="m", api_weight=0.25)
    assert backend_of(settings.judge).request_path == PATH
    with pytest.raises(ValueError, match=r"api_weight must be in \[0, 1\], got 2"):
        settings_from_config(
            compose_experiment("arena_ppo", [*overrides[:3], "+reward.arena.judge.api_weight=2", overrides[4]])
        )


def test_verdict_probability_is_refused_naming_why(api):
    url, _ = api
    with pytest.raises(ValueError, match="scorer_api backend cannot give label probabilities"):
        arena_settings(group_size=4, judge={"backend": "scorer_api", "base_url": url, "model_path": "m",
                                            "verdict": "probability"})  # fmt: skip


def test_its_spec_sets_its_field_and_it_runs_through_audit_judge(api, tmp_path):
    url, seen = api
    spec = f"scorer_api:{url}#m?api_weight=0.5"
    settings = judge_settings_from_spec(spec)
    assert settings.options.api_weight == 0.5 and judge_spec(settings) == spec
    dump = write_dump(tmp_path / "rollout", {1: [[1, 0, 1], [0, 0, 0]]})
    out = tmp_path / "report"
    assert command.main([str(dump), "--judge", spec, "--out", str(out), "--workers", "1"]) == 0
    lines = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert lines and {line["judge_backend"] for line in lines} == {"scorer_api"}
    assert seen and {path for path, _ in seen} == {PATH} and {body["weight"] for _, body in seen} == {0.5}


def test_it_judges_a_routed_group_through_the_referee_at_its_request_path(api):
    url, seen = api
    settings = arena_settings(
        group_size=3, group_deadline_s=10.0, tournament_timeout_s=10.0,
        judge={"backend": "scorer_api", "base_url": url, "model_path": "m", "api_weight": 1.0, "timeout_s": 5.0},
    )  # fmt: skip
    texts = ["a" * 30, "a" * 10, "a" * 20]
    subs = [Submission(uid="g", sample_key=str(i), problem="p", trace=Trace(t), verifier_reward=0.0)
            for i, t in enumerate(texts)]  # fmt: skip

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=make_judge(settings.judge))
        verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in subs)), 30)
        await referee.drain()
        return verdicts

    verdicts = asyncio.run(scenario())
    assert all(v.route == ROUTE_TOURNAMENT for v in verdicts)
    rewards = [v.reward for v in verdicts]
    assert rewards[0] > rewards[2] > rewards[1]  # the API prefers the longer trace
    assert seen and {path for path, _ in seen} == {PATH}


def test_an_unregistered_backend_is_refused_by_the_settings_and_the_grammar():
    with pytest.raises(ValueError, match=r"reward.arena.judge.backend must be one of"):
        settings_from_config({"reward": {"arena": {"group_size": 2, "judge": {"backend": "scorer_api"}}}})
    with pytest.raises(ValueError, match="unknown judge 'scorer_api'"):
        judge_settings_from_spec("scorer_api:http://h:1#m")


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_built_in_factory_names_a_callable_that_exists(name):
    """Checked without importing the backend (its SDKs): the module exists and defines the name at top level."""
    for path in (BACKENDS[name].factory, BACKENDS[name].preflight, BACKENDS[name].probe):
        if path is None:
            continue
        assert isinstance(path, str)
        module, _, attribute = path.partition(":")
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, module
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        assert attribute in defined, path


def test_a_backend_key_that_another_backend_means_otherwise_is_refused_at_registration():
    """verl's yaml lists each judge key once: a plugin's ``device`` may not be an int while transformers' is a str."""

    @dataclass(frozen=True)
    class Clash(EndpointOptions):
        device: int = setting(0, help="another meaning of reward.arena.judge.device")

    clash = JudgeBackend("clash", options=Clash, factory=ScorerApiJudge, spec_form="clash", parse_spec=_parse,
                         format_spec=str)  # fmt: skip
    with pytest.raises(ValueError, match=r"reward\.arena\.judge\.device is declared by the transformers backend"):
        register(clash)
    assert "clash" not in BACKENDS
