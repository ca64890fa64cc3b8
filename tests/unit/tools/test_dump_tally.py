"""The one tally of a dump for the commands that judge a dump offline: :func:`verified_groups` counts what it reads
(files, groups, diverse, non-diverse, single-sample, each step file's identity and group keys) and yields the groups of
two samples or more with whether they are diverse; ``score`` keeps the non-diverse ones, ``audit-judge`` both kinds,
and both report the same tally."""

from __future__ import annotations

import dataclasses

import pytest

from arena_verl.evaluation.scoring import Scorer, ScoringOptions
from arena_verl.tools.audit.selection import read_audit_groups
from arena_verl.tools.common.dump_groups import DumpTally, verified_groups
from arena_verl.tools.score.groups import dump_identities, read_dump_groups
from helpers.score_dumps import uuid, write_dump

# step -> per prompt, the correctness of each sample
PATTERNS = {
    1: [[1, 1, 1], [1, 0, 1], [0], [0, 0]],
    2: [[0, 1], [1, 1, 1, 1], [1]],
}


@pytest.fixture(scope="module")
def scorer():
    with Scorer(ScoringOptions(workers=1)) as shared:
        yield shared


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return write_dump(tmp_path_factory.mktemp("tally") / "rollout", PATTERNS)


def key(step: int, prompt: int) -> str:
    return f"uid {uuid(step, prompt)}"


def tally_of(found) -> dict:
    return {field.name: getattr(found, field.name) for field in dataclasses.fields(DumpTally)}


def test_the_tally_counts_every_group_and_yields_the_comparable_ones_with_their_kind(dump, scorer):
    tally = DumpTally()
    read = [(group.step, group.key, diverse) for group, diverse in verified_groups(dump, scorer, [], tally)]
    assert sorted(read) == sorted(
        [
            (1, key(1, 0), False),
            (1, key(1, 1), True),
            (1, key(1, 3), False),
            (2, key(2, 0), True),
            (2, key(2, 1), False),
        ]
    )
    assert (tally.files, tally.groups, tally.by_uid) == (2, 7, 7)
    assert (tally.diverse, tally.non_diverse, tally.single) == (2, 3, 2)
    assert not tally.not_verified and sum(tally.statuses.values()) == sum(map(len, sum(PATTERNS.values(), [])))
    assert tally.identities == dump_identities(dump)
    assert tally.keys == {step: {key(step, p) for p in range(len(prompts))} for step, prompts in PATTERNS.items()}

    only = DumpTally()
    assert {group.step for group, _ in verified_groups(dump, scorer, [], only, step=2)} == {2}
    assert (only.files, only.groups, only.single) == (1, 3, 1) and set(only.keys) == {2}


def test_score_and_audit_read_the_same_tally(dump, scorer):
    tally = DumpTally()
    read = list(verified_groups(dump, scorer, [], tally))
    groups, summary = read_dump_groups(dump, "all", [], scorer)
    assert groups == [group for group, diverse in read if not diverse]
    assert tally_of(summary) == tally_of(tally)
    found = read_audit_groups(dump, scorer, [])
    assert found.diverse_groups == [group for group, diverse in read if diverse]
    assert found.non_diverse_groups == groups
    assert tally_of(found) == tally_of(tally)
