"""arena_verl.verl_edge.placement: the per-node GPU pre-flight (each trainer / reward-model / judge group
on ONE node)."""

from __future__ import annotations

import itertools
import random

import pytest

from arena_verl.verl_edge.placement import Demand, demands_from_config, fits, placement_problems, placement_warnings
from helpers.ray_local import fake_gpu_cluster


def judge(tp: int, engines: int = 1, referees: int = 1) -> Demand:
    return Demand(
        "judge engines",
        tp,
        engines * referees,
        size_key="JUDGE_TP (reward.arena.judge.tensor_parallel_size)",
        count_key="JUDGE_ENGINES (reward.arena.judge.num_engines)",
        per=referees,
        kind="judge",
    )


def trainer(nnodes: int, per_node: int) -> Demand:
    return Demand(
        "trainer",
        per_node,
        nnodes,
        size_key="GPUS_PER_NODE (trainer.n_gpus_per_node)",
        count_key="NNODES (trainer.nnodes)",
        kind="trainer",
    )


def reward_model(nnodes: int, per_node: int) -> Demand:
    return Demand(
        "verl reward model",
        per_node,
        nnodes,
        size_key="JUDGE_GPUS_PER_NODE (reward.reward_model.n_gpus_per_node)",
        count_key="JUDGE_NNODES (reward.reward_model.nnodes)",
        kind="reward_model",
    )


def first_fit_decreasing(sizes, free) -> bool:
    room = sorted(free, reverse=True)
    for size in sorted(sizes, reverse=True):
        for i, left in enumerate(room):
            if left >= size:
                room[i] -= size
                break
        else:
            return False
    return True


# -- pure cases -------------------------------------------------------------------------------------------------------


def test_tp4_on_two_nodes_of_two_is_refused_with_a_fix():
    (problem,) = placement_problems([judge(4)], [2.0, 2.0])
    assert "JUDGE_TP=4 needs 4 GPUs on one node" in problem
    assert "the nodes have 2, 2 free GPUs" in problem
    assert "use JUDGE_TP=2 (and JUDGE_ENGINES=2) or a node with 4 free GPUs" in problem
    # The old cluster-wide sum would have let it through.
    assert sum([2.0, 2.0]) >= 4


def test_a_fitting_layout_has_no_problems_or_warnings():
    assert placement_problems([judge(2, engines=2)], [2.0, 2.0]) == []
    assert placement_warnings([judge(2, engines=2)], [2.0, 2.0]) == []
    assert placement_problems([], [0.0]) == []


def test_trainer_and_judge_together_on_8_gpu_nodes():
    # node8: one 8-GPU node, 6 train + 2 judge.
    assert placement_problems([trainer(1, 6), judge(2)], [8.0]) == []
    # 4 nodes x 8: trainer on 3 whole nodes, 2 engines of TP=4 on the fourth.
    assert placement_problems([trainer(3, 8), judge(4, engines=2)], [8.0] * 4) == []
    # 4 x 8 trainer leaves nothing: the judge needs a node of its own.
    (problem,) = placement_problems([trainer(4, 8), judge(8)], [8.0] * 4)
    assert "trainer (4 x 8 GPUs) and judge engines (1 x 8 GPUs) do not fit together" in problem
    assert "40 GPUs, 32 free" in problem and "add a node with 8 free GPUs" in problem
    # 1 x 8 + 3 engines of 4 on two nodes: 20 > 16; at most 2 engines fit beside the trainer.
    (problem,) = placement_problems([trainer(1, 8), judge(4, engines=3)], [8.0, 8.0])
    assert "use JUDGE_ENGINES=2" in problem


def test_trainer_groups_each_on_one_node():
    (problem,) = placement_problems([trainer(2, 8)], [8.0, 4.0, 4.0])  # 16 free, but one node of 8
    assert problem.startswith("trainer: 2 groups of 8 GPUs, each on one node (NNODES=2)")
    assert "room for 1" in problem and "use NNODES=1" in problem
    (problem,) = placement_problems([trainer(1, 8)], [4.0, 4.0])
    assert "GPUS_PER_NODE=8 needs 8 GPUs on one node" in problem and "use GPUS_PER_NODE=4 (and NNODES=2" in problem
    # Two trainer groups may share a node with room for both (separate placement groups).
    assert placement_problems([trainer(2, 4)], [8.0]) == []


def test_several_engines_spread_over_nodes():
    assert placement_problems([judge(2, engines=4)], [4.0, 2.0, 2.0]) == []
    (problem,) = placement_problems([judge(2, engines=4)], [3.0, 3.0, 2.0])  # 8 free, room for 3 engines
    assert "room for 3" in problem and "use JUDGE_ENGINES=3" in problem
    # Each referee starts its own engines: 2 referees x 2 engines = 4 groups.
    (problem,) = placement_problems([judge(2, engines=2, referees=2)], [2.0, 2.0, 2.0])
    assert "(JUDGE_ENGINES=2 x 2 referees)" in problem and "use JUDGE_ENGINES=1" in problem


def test_verl_reward_model_pool():
    assert placement_problems([trainer(1, 6), reward_model(1, 2)], [8.0]) == []
    (problem,) = placement_problems([trainer(1, 6), reward_model(1, 4)], [8.0, 2.0])
    assert "trainer (1 x 6 GPUs) and verl reward model (1 x 4 GPUs) do not fit together" in problem
    (problem,) = placement_problems([trainer(1, 4), reward_model(1, 8)], [4.0, 4.0])
    assert "JUDGE_GPUS_PER_NODE=8 needs 8 GPUs on one node" in problem


def test_exact_where_first_fit_decreasing_fails():
    # Nodes with 8 and 6 free: FFD puts the trainer's 6 on the 8 and strands a TP=4 engine; 6 | 4 + 4 fits.
    free = [8.0, 6.0]
    assert not first_fit_decreasing([6, 4, 4], free)
    assert placement_problems([trainer(1, 6), judge(4, engines=2)], free) == []
    # ... and Ray, placing the trainer first, could make FFD's choice: a warning, not a refusal.
    (warning,) = placement_warnings([trainer(1, 6), judge(4, engines=2)], free)
    assert "fits only if Ray places trainer (1 x 6 GPUs) on the right nodes" in warning
    # A classic mixed-size case: 4, 3, 3, 2, 2, 2 on 8 + 8 (4+2+2 | 3+3+2).
    assert not first_fit_decreasing([4, 3, 3, 2, 2, 2], [8, 8]) and fits([4, 3, 3, 2, 2, 2], [8, 8])


def test_fits_agrees_with_brute_force():
    rng = random.Random(0)

    def brute(sizes, free):
        for nodes in itertools.product(range(len(free)), repeat=len(sizes)):
            used = [0] * len(free)
            for size, node in zip(sizes, nodes):
                used[node] += size
            if all(u <= f for u, f in zip(used, free)):
                return True
        return not sizes

    for _ in range(400):
        free = [rng.randint(0, 8) for _ in range(rng.randint(1, 4))]
        sizes = [rng.randint(1, 8) for _ in range(rng.randint(0, 5))]
        assert fits(sizes, free) == brute(sizes, free), (sizes, free)


def test_fractional_and_empty_clusters():
    assert fits([1], [1.5]) and not fits([2], [1.5])  # whole GPUs per bundle
    (problem,) = placement_problems([trainer(1, 8)], [])
    assert "the Ray cluster has no alive node" in problem
    (problem,) = placement_problems([trainer(1, 2)], [0.0, 0.0])
    assert "no node has a free GPU (2 nodes)" in problem
    assert "(and 1 node none)" in placement_problems([judge(4)], [2.0, 0.0])[0]


def test_large_cluster_is_quick():
    free = [8.0] * 48 + [6.0] * 16
    demands = [trainer(40, 8), judge(6, engines=16), judge(4, engines=4)]
    assert placement_problems(demands, free) == []
    # 468 of 480 GPUs, each demand fits alone, but 24 TP=6 engines take every 6-node and the last 8-nodes' 6s.
    (problem,) = placement_problems([trainer(40, 8), judge(6, engines=24), judge(4)], free)
    assert "do not fit together" in problem and "8 (x48), 6 (x16) free GPUs" in problem


# -- from a config ----------------------------------------------------------------------------------------------------


def _config(**arena_judge):
    return {
        "trainer": {"nnodes": 2, "n_gpus_per_node": 8},
        "actor_rollout_ref": {"rollout": {"n": 4}},
        "reward": {
            "reward_model": {"enable": False, "enable_resource_pool": False, "nnodes": 1, "n_gpus_per_node": 4},
            "arena": {"mode": "arena", "judge": arena_judge},
        },
        "distillation": {"enabled": False, "nnodes": 0, "n_gpus_per_node": 8},
    }


def test_demands_from_config():
    config = _config(backend="vllm", model_path="/m", num_engines=2, tensor_parallel_size=4)
    config["reward"]["arena"]["num_referees"] = 3
    trainer_demand, judge_demand = demands_from_config(config)
    assert (trainer_demand.name, trainer_demand.bundles, trainer_demand.gpus) == ("trainer", 2, 8)
    assert (judge_demand.kind, judge_demand.bundles, judge_demand.gpus, judge_demand.count) == ("judge", 6, 4, 2)
    # Judges outside the cluster place nothing; verl's reward pool only with enable and enable_resource_pool.
    assert [d.name for d in demands_from_config(_config(backend="openai", base_url="verl"))] == ["trainer"]
    config = _config(backend="openai", base_url="verl")
    config["reward"]["reward_model"].update(enable=True, enable_resource_pool=True)
    assert [(d.name, d.bundles, d.gpus) for d in demands_from_config(config)][1] == ("verl reward model", 1, 4)
    config["reward"]["reward_model"]["enable_resource_pool"] = False  # shares the trainer's pool
    assert len(demands_from_config(config)) == 1
    config["distillation"].update(enabled=True, nnodes=1)
    assert demands_from_config(config)[-1].name == "distillation teacher"
    rlvr = _config(backend="vllm", model_path="/m")
    rlvr["reward"]["arena"]["mode"] = "rlvr"
    assert len(demands_from_config(rlvr)) == 1


def test_demands_from_a_composed_recipe_config():
    from arena_verl.tools.recipe import compose_experiment

    config = compose_experiment(
        "arena_live",
        [
            "trainer.nnodes=1",
            "trainer.n_gpus_per_node=6",
            "reward.arena.judge.backend=vllm",
            "reward.arena.judge.model_path=/m",
            "reward.arena.judge.tensor_parallel_size=4",
        ],
    )
    demands = demands_from_config(config)
    assert [(d.name, d.bundles, d.gpus) for d in demands] == [("trainer", 1, 6), ("judge engine", 1, 4)]
    (problem,) = placement_problems(demands, [8.0])
    assert "do not fit together" in problem
    assert placement_problems(demands, [6.0, 4.0]) == []


# -- a fake two-node GPU cluster ----------------------------------------------------------------------------------


@pytest.fixture
def two_gpu_nodes():
    """Two Ray nodes with 2 (fake) GPUs each, on CPU."""
    with fake_gpu_cluster(nodes=2, gpus_per_node=2) as ray:
        yield ray


def test_fake_cluster_refuses_tp4_and_accepts_tp2(two_gpu_nodes):
    import time

    from arena_verl.verl_edge.placement import free_gpus_per_node

    ray = two_gpu_nodes
    deadline = time.monotonic() + 30
    while (free := free_gpus_per_node()) != [2.0, 2.0] and time.monotonic() < deadline:
        time.sleep(0.2)  # the nodes' resource reports arrive within a heartbeat
    assert free == [2.0, 2.0]
    assert float(ray.cluster_resources()["GPU"]) == 4.0  # the sum that used to pass
    (problem,) = placement_problems([judge(4)], free)
    assert "JUDGE_TP=4 needs 4 GPUs on one node; the nodes have 2, 2 free GPUs" in problem
    assert placement_problems([judge(2)], free) == []
    assert placement_problems([judge(2, engines=2)], free) == []

    # Reserved GPUs are not free: hold one node's 2 GPUs in a placement group, then read again.
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group([{"GPU": 2}], strategy="STRICT_PACK")
    try:
        ray.get(group.ready(), timeout=30)
        deadline = time.monotonic() + 30
        while (free := free_gpus_per_node()) != [2.0, 0.0] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert free == [2.0, 0.0]
        assert placement_problems([judge(2)], free) == []
        assert "room for 1" in placement_problems([judge(2, engines=2)], free)[0]
    finally:
        remove_placement_group(group)
