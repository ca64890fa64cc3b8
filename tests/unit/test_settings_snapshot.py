"""The settings redesign changed no user's key: ``tests/data/settings_snapshot.json`` was taken with the reader as it
was before it (at 89340cd): for every shipped config and every recipe's ``--dry-run`` (SETTING=node8, paper, cpu), the
``reward.arena`` leaves verl composes and the value of every setting read from them. Today's configs compose to the
same leaves (plus the keys added since, at their defaults), and today's reader reads the same values from them.
(The recipes' composed leaves are compared in tests/integration/test_recipes.py, which runs their dry runs.)"""

from __future__ import annotations

import pytest

from arena_verl.settings import settings_from_config, settings_leaves
from arena_verl.tools.common.compose import compose_experiment
from helpers.settings_snapshot import ADDED, BACKEND_OWN, SNAPSHOT, arena_leaves, tree


@pytest.mark.parametrize("name", sorted(k.split()[1] for k in SNAPSHOT if k.startswith("config ")))
def test_every_shipped_config_composes_to_the_same_reward_arena_leaves(name):
    assert arena_leaves(compose_experiment(name)) == {**SNAPSHOT[f"config {name}"]["leaves"], **ADDED}


@pytest.mark.parametrize("entry", sorted(SNAPSHOT))
def test_today_s_reader_reads_the_same_values_from_the_same_leaves(entry):
    old = dict(SNAPSHOT[entry]["settings"])
    config = {**tree(SNAPSHOT[entry]["leaves"]), "actor_rollout_ref": {"rollout": {"n": old["group_size"]}}}
    refused = old.pop("__error__", None)
    if refused is not None:  # the old reader refused it (a served judge without its address): so does today's
        with pytest.raises(ValueError):
            settings_from_config(config)
        judge = config["reward"]["arena"]["judge"]
        judge["base_url"] = "http://judge:8000/v1"
        judge["model_path"] = judge.get("model_path") or "judge-model"
    new = settings_leaves(settings_from_config(config))
    assert {key: new[key] for key in old if key in new} == {key: old[key] for key in old if key in new}
    assert {key for key in old if key not in new} <= {f"judge.{key}" for key in BACKEND_OWN}
    assert set(new) - set(old) == {key.removeprefix("reward.arena.") for key in ADDED}
