"""A served judge with several replicas (scripted loopback servers, NOT models): every call of a group goes to one
replica; a replica killed mid-run moves only its own groups, whose calls are retried on their next choice and
counted; settings take the replicas comma-separated or as a list."""

import asyncio
import re

import pytest

from arena_verl.core.judge_protocol import Trace
from arena_verl.judge.backends.openai_backend import OpenAIJudge
from arena_verl.settings import judge_settings, settings_from_config
from helpers.loopback_judge import LoopbackJudge

TAG = re.compile(r"## Attempt A\n<([^>\n]+)>")  # the group's delimiter: a group's calls share it


def tags_seen(server: LoopbackJudge) -> set[str]:
    return {match for prompt in server.prompts for match in TAG.findall(prompt)}


async def run_groups(judge, groups, calls=2):
    return await asyncio.gather(*(
        judge.compare("2+2?", Trace(f"four {g} {c}"), Trace(f"4 {g} {c}"), group=g)
        for g in groups for c in range(calls)
    ))  # fmt: skip


def server_of(servers, tag):
    return [i for i, s in enumerate(servers) if tag in tags_seen(s)]


def test_groups_stick_to_one_replica_and_a_killed_one_moves_only_its_own():
    groups = [f"step1/uid{i}" for i in range(24)]
    with LoopbackJudge() as a, LoopbackJudge() as b, LoopbackJudge() as c:
        servers = [a, b, c]
        settings = judge_settings(backend="openai", base_url=",".join(s.url for s in servers), model_path="judge",
                                 retries=2, backoff_s=0.0, timeout_s=5.0, parse_retries=0)  # fmt: skip
        judge = OpenAIJudge(settings)

        async def scenario():
            try:
                first = await run_groups(judge, groups)
                tags = {g: judge.delimiter(g) for g in groups}  # a group's delimiter, as the judge keeps it
                owners = {g: server_of(servers, tags[g]) for g in groups}
                for server in servers:
                    server.prompts.clear()
                b.__exit__(None, None, None)  # killed mid-run: every connection to it refused from now on
                second = await run_groups(judge, groups)
                return first, second, tags, owners
            finally:
                await judge.close()

        first, second, tags, owners = asyncio.run(scenario())
        after = {g: server_of(servers, tags[g]) for g in groups}
    assert all(outcome in (0.0, 1.0) for outcome in first + second)  # every call answered
    assert all(len(owner) == 1 for owner in owners.values())  # each group on one replica
    assert {owner[0] for owner in owners.values()} == {0, 1, 2}  # and every replica serves some groups
    moved = [g for g in groups if owners[g] == [1]]
    for g in groups:
        if g in moved:
            assert len(after[g]) == 1 and after[g][0] in (0, 2)  # to one live replica, sticky there too
        else:
            assert after[g] == owners[g]  # the live replicas keep every group they had
    # every call of a moved group was answered past its own replica (once each); its refused attempts counted
    assert judge.stats.rerouted == 2 * len(moved) and judge.stats.errors >= 1 and judge.stats.failures == 0
    assert judge.endpoint.ring.down() == [b.url + "/chat/completions"]


@pytest.mark.parametrize("base_url", [["http://a:1/v1", "http://b:2/v1"], "http://a:1/v1, http://b:2/v1"])
def test_settings_take_replicas_as_a_list_or_comma_separated(base_url):
    config = {"reward": {"arena": {"group_size": 4, "judge": {"backend": "openai", "model_path": "j",
                                                              "base_url": base_url}}}}  # fmt: skip
    judge = OpenAIJudge(settings_from_config(config).judge)
    assert judge.endpoint.urls == ["http://a:1/v1/chat/completions", "http://b:2/v1/chat/completions"]


@pytest.mark.parametrize(
    "base_url, message",
    [
        ("http://a:1/v1,ftp://b/v1", "not an http"),
        ("http://a:1/v1,http://a:1/v1/", "twice"),
        ("http://a:1,http://a:1/v1", "twice"),
        ([1, 2], "a list"),
    ],
)
def test_a_bad_replica_list_is_refused_by_key(base_url, message):
    config = {"reward": {"arena": {"group_size": 4, "judge": {"backend": "openai", "model_path": "j",
                                                              "base_url": base_url}}}}  # fmt: skip
    with pytest.raises(ValueError, match=rf"reward\.arena\.judge\.base_url.*{message}"):
        settings_from_config(config)
