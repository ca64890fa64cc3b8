"""Per-node GPU pre-flight: will the run's GPU groups fit on the Ray cluster's nodes, each group on ONE node?

A sum over the cluster is not enough: ``JUDGE_TP=4`` on two nodes with 2 free GPUs each has 4 GPUs in all, but the
judge's engine needs its 4 on one node, pends forever, and every routed group falls back at its deadline.

How the GPUs are asked for (the installed verl 0.9.1, vLLM and this package; paths under site-packages):

* verl's trainer: ``resource_pool_spec["global_pool"] = [trainer.n_gpus_per_node] * trainer.nnodes``
  (verl/trainer/ppo/v1/trainer_base.py:819; the legacy trainer: verl/trainer/main_ppo_v0.py:72). Each entry becomes
  ONE placement group of ``n_gpus_per_node`` bundles ``{"CPU": max_colocate_count, "GPU": 1}``
  (verl/single_controller/ray/base.py:131-157, max_colocate_count 3 by default: base.py:192), created with
  ``STRICT_PACK`` (RayWorkerGroup's ``bin_pack=True``: base.py:430, 557), so each entry's GPUs are on a single node.
  The entries are separate placement groups: two of them may share a node that has room for both. verl's own check
  (``ResourcePoolManager._check_resource_available``, base.py:226) compares only the cluster-wide sum.
* verl's reward-model pool: ``[reward.reward_model.n_gpus_per_node] * reward.reward_model.nnodes`` when
  ``enable_resource_pool`` (trainer_base.py:829); its placement groups are made (``split_resource_pool`` ->
  ``get_placement_groups()``, STRICT_PACK by default: verl/experimental/reward_loop/reward_model.py:84, base.py:305)
  only when ``reward.reward_model.enable`` (trainer_base.py:344). Without its own pool it shares the trainer's.
* verl's distillation teacher pool: ``[distillation.n_gpus_per_node] * distillation.nnodes`` when
  ``distillation.enabled`` (trainer_base.py:844), the same way.
* this package's ``vllm`` judge: each engine is ONE Ray actor with ``num_gpus=tensor_parallel_size``
  (arena_verl/judge/backends/vllm_backend.py), so its GPUs are on one node; in an actor outside a placement group vLLM
  picks its ``mp`` executor (vllm/config/parallel.py:995-1030): the TP workers are processes on the actor's node.
  Each referee builds its own judge (arena_verl/referee_actor.py:28): ``num_referees * num_engines`` engines, started
  with the referees on the first routed group, i.e. after verl's pools have their placement groups.

So a demand is a number of bundles that each need ``gpus`` GPUs on a single node, and the question is a bin packing:
can every bundle be given a node, no node giving more GPUs than it has free? ``fits`` decides it exactly with a
depth-first search over the bundles, largest first, remembering the dead ends; a state is the bundle index and the
multiset of the nodes' remaining free GPUs, so nodes with equal room are one choice, not many. First-fit-decreasing
(largest group first, onto the first node with room) is exact when the group sizes divide one another (1, 2, 4, 8),
but not in general: nodes with 8 and 6 free GPUs, a trainer of 1 x 6 and two TP=4 judge engines: FFD puts the 6 on
the 8-GPU node and strands an engine, while 6 | 4 + 4 fits.

Ray places the groups one after another, not all at once, and picks nodes by its own policy: a layout that exists
may still be missed. ``placement_warnings`` says when some choice of nodes for the earlier demands (in start order:
trainer, reward model, teacher, judge) leaves a later one without room. Not modelled: CPUs (each verl GPU bundle
also takes ``max_colocate_count`` CPUs), custom resources and node labels, accelerators other than ``GPU``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Demand",
    "demands_from_config",
    "fits",
    "free_gpus_per_node",
    "placement_problems",
    "placement_warnings",
]

_EPS = 1e-6
# Search states visited before giving up (an undecided case counts as fitting: no false refusals). Real layouts
# (a few demands, tens of nodes) need far fewer.
_MAX_STATES = 200_000


@dataclass(frozen=True)
class Demand:
    """``bundles`` groups of ``gpus`` GPUs, each group on one node.

    ``size_key`` and ``count_key`` name the settings behind ``gpus`` and the count (recipe variable and config key),
    for the messages; ``per`` multiplies the count into bundles (the judge: ``num_referees`` judges of
    ``num_engines`` engines each, so ``bundles = per * num_engines``)."""

    name: str
    gpus: int
    bundles: int
    size_key: str = ""
    count_key: str = ""
    per: int = 1
    kind: str = "other"  # trainer | reward_model | teacher | judge | other: which fix to suggest

    @property
    def count(self) -> int:
        """The value of ``count_key``."""
        return self.bundles // max(1, self.per)

    def describe(self) -> str:
        return f"{self.name} ({self.bundles} x {self.gpus} GPUs)"


def _int(config: Any, dotted: str) -> int:
    from arena_verl.settings import config_value

    value = config_value(config, dotted)
    return int(value) if value is not None else 0


def demands_from_config(config: Any) -> list[Demand]:
    """The run's GPU bundles from a composed verl config, in the order they are placed (trainer, verl reward model,
    distillation teacher, judge engines). Only a judge backend with ``gpu_engines`` in the registry (``vllm``) places
    engines in the cluster; the others run outside it (``openai``: a server; ``verl``'s reward model: its pool above)
    or on the reward worker's CPU."""
    from arena_verl.backend_registry import backend_of
    from arena_verl.settings import config_value, settings_from_config

    demands = []
    nodes, per_node = _int(config, "trainer.nnodes"), _int(config, "trainer.n_gpus_per_node")
    if nodes > 0 and per_node > 0:
        demands.append(
            Demand(
                "trainer",
                per_node,
                nodes,
                size_key="GPUS_PER_NODE (trainer.n_gpus_per_node)",
                count_key="NNODES (trainer.nnodes)",
                kind="trainer",
            )
        )
    if config_value(config, "reward.reward_model.enable") and config_value(
        config, "reward.reward_model.enable_resource_pool"
    ):
        nodes = _int(config, "reward.reward_model.nnodes")
        per_node = _int(config, "reward.reward_model.n_gpus_per_node")
        if nodes > 0 and per_node > 0:
            demands.append(
                Demand(
                    "verl reward model",
                    per_node,
                    nodes,
                    size_key="JUDGE_GPUS_PER_NODE (reward.reward_model.n_gpus_per_node)",
                    count_key="JUDGE_NNODES (reward.reward_model.nnodes)",
                    kind="reward_model",
                )
            )
    if config_value(config, "distillation.enabled"):
        nodes, per_node = _int(config, "distillation.nnodes"), _int(config, "distillation.n_gpus_per_node")
        if nodes > 0 and per_node > 0:
            demands.append(
                Demand(
                    "distillation teacher",
                    per_node,
                    nodes,
                    size_key="distillation.n_gpus_per_node",
                    count_key="distillation.nnodes",
                    kind="teacher",
                )
            )
    settings = settings_from_config(config)
    if settings.uses_judge and backend_of(settings.judge).gpu_engines:
        referees = settings.num_referees
        demands.append(
            Demand(
                "judge engine" if referees * settings.judge.options.num_engines == 1 else "judge engines",
                settings.judge.options.tensor_parallel_size,
                referees * settings.judge.options.num_engines,
                size_key="JUDGE_TP (reward.arena.judge.tensor_parallel_size)",
                count_key="JUDGE_ENGINES (reward.arena.judge.num_engines)",
                per=referees,
                kind="judge",
            )
        )
    return demands


def free_gpus_per_node(resource: str = "GPU") -> list[float]:
    """The free (available, not total) ``resource`` of each alive node of the connected Ray cluster, largest first.
    The caller has called ``ray.init``. Ray 2.60 keeps the per-node available resources in the GCS
    (``ray._private.state.available_resources_per_node``, a DeveloperAPI: ray/_private/state.py:1252; the same call
    verl's own check makes: verl/single_controller/ray/base.py:228); a resource at 0 may be absent from a node's
    entry. Placement groups already reserved (by another run) count as used; the view lags by a heartbeat."""
    import ray
    from ray._private import state

    alive = [node["NodeID"] for node in ray.nodes() if node.get("Alive")]
    available = state.available_resources_per_node()
    return sorted((float(available.get(node, {}).get(resource, 0.0)) for node in alive), reverse=True)


def _capacities(free_gpus_per_node: Sequence[float]) -> list[int]:
    # Bundles ask for whole GPUs: 1.5 free GPUs hold one.
    return [max(0, math.floor(float(free) + _EPS)) for free in free_gpus_per_node]


def _counts(capacities: Sequence[int], size: int) -> tuple[int, ...]:
    counts = [0] * (max(max(capacities, default=0), size) + 1)
    for capacity in capacities:
        counts[capacity] += 1
    return tuple(counts)


def _sizes(demands: Sequence[Demand]) -> list[int]:
    return [demand.gpus for demand in demands for _ in range(demand.bundles) if demand.gpus > 0]


def fits(sizes: Sequence[int], free_gpus_per_node: Sequence[float]) -> bool:
    """Whether bundles of ``sizes`` GPUs (each on one node) fit the nodes' free GPUs: exact (module docstring)."""
    order = sorted((int(s) for s in sizes if s > 0), reverse=True)
    capacities = _capacities(free_gpus_per_node)
    if not order:
        return True
    if order[0] > max(capacities, default=0) or sum(order) > sum(capacities):
        return False
    suffix = [0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + order[i]
    dead: set[tuple[int, tuple[int, ...]]] = set()
    visited = 0

    def place(i: int, counts: tuple[int, ...]) -> bool:
        nonlocal visited
        if i == len(order):
            return True
        if (i, counts) in dead:
            return False
        visited += 1
        if visited > _MAX_STATES:
            return True  # undecided: do not refuse
        smallest = order[-1]
        if sum(c * n for c, n in enumerate(counts) if c >= smallest) < suffix[i]:
            dead.add((i, counts))
            return False
        size = order[i]
        for capacity in range(size, len(counts)):  # tightest node first: a good layout is found early
            if counts[capacity]:
                following = list(counts)
                following[capacity] -= 1
                following[capacity - size] += 1
                if place(i + 1, tuple(following)):
                    return True
        dead.add((i, counts))
        return False

    return place(0, _counts(capacities, order[0]))


def _nodes_text(free_gpus_per_node: Sequence[float]) -> str:
    if not free_gpus_per_node:
        return "the Ray cluster has no alive node"
    free = sorted((float(f) for f in free_gpus_per_node), reverse=True)
    with_gpus = [f for f in free if f > _EPS]
    none = len(free) - len(with_gpus)
    if not with_gpus:
        return f"no node has a free GPU ({len(free)} node{'s' if len(free) != 1 else ''})"
    if len(with_gpus) <= 16:
        listed = ", ".join(f"{f:g}" for f in with_gpus)
    else:  # many nodes: "8 (x12), 2 (x3)"
        groups: dict[float, int] = {}
        for f in with_gpus:
            groups[f] = groups.get(f, 0) + 1
        listed = ", ".join(f"{f:g} (x{n})" if n > 1 else f"{f:g}" for f, n in groups.items())
    text = f"the node{'s have' if len(with_gpus) > 1 else ' has'} {listed} free GPUs"
    if none:
        text += f" (and {none} node{'s' if none > 1 else ''} none)"
    return text


def _env_name(key: str) -> str:
    """``JUDGE_TP (reward.arena...)`` -> ``JUDGE_TP``; a bare config key stays."""
    return key.split(" (")[0]


def _room(gpus: int, capacities: Sequence[int]) -> int:
    """Bundles of ``gpus`` the nodes hold (one demand alone)."""
    return sum(c // gpus for c in capacities) if gpus > 0 else 0


def _size_fix(demand: Demand, free: Sequence[float]) -> str:
    capacities = _capacities(free)
    largest = max(capacities, default=0)
    size, count = _env_name(demand.size_key), _env_name(demand.count_key)
    tail = f"or a node with {demand.gpus} free GPUs"
    if largest < 1:
        return f"the run needs a node with {demand.gpus} free GPUs"
    if demand.kind == "judge":
        tp = 1 << int(math.log2(largest))  # a power of two: what attention-head counts divide
        while tp > 1 and demand.gpus % tp:
            tp //= 2
        engines = demand.count * demand.gpus // tp
        while engines > 1 and not fits([tp] * (engines * demand.per), free):
            engines -= 1
        more = f" (and {count}={engines})" if engines != demand.count else ""
        return f"use {size}={tp}{more} {tail}"
    if demand.kind in ("trainer", "reward_model", "teacher"):
        nodes = math.ceil(demand.bundles * demand.gpus / largest)
        return f"use {size}={largest} (and {count}={nodes}, if the cluster has the nodes) {tail}"
    return f"use at most {largest} GPUs per group {tail}"


def _count_fix(demand: Demand, room: int) -> str:
    count = _env_name(demand.count_key) or "fewer groups"
    most = room // max(1, demand.per)
    cut = f"use {count}={most}" if most >= 1 else f"lower {count}"
    return f"{cut} or add nodes with {demand.gpus} free GPUs"


def _most_that_fit(others: Sequence[Demand], demand: Demand, free: Sequence[float]) -> int:
    """The largest count of ``demand`` (in units of its count_key) that fits beside ``others``."""
    base = _sizes(others)
    for count in range(demand.count - 1, 0, -1):
        if fits(base + [demand.gpus] * (count * demand.per), free):
            return count
    return 0


def placement_problems(demands: Sequence[Demand], free_gpus_per_node: Sequence[float]) -> list[str]:
    """Why ``demands`` cannot be placed on nodes with these free GPUs (empty: a layout exists).

    Each demand alone first (a group larger than every node; more groups than the nodes hold), then, when each fits
    alone, the smallest sets of demands that do not fit together. A demand with ``gpus == 0`` (a CPU engine) needs
    nothing here."""
    demands = [d for d in demands if d.gpus > 0 and d.bundles > 0]
    free = [float(f) for f in free_gpus_per_node]
    capacities = _capacities(free)
    nodes = _nodes_text(free)
    problems = []
    alone_ok = []
    for demand in demands:
        size = _env_name(demand.size_key)
        label = f"{size}={demand.gpus}" if size else f"{demand.name}'s group of {demand.gpus}"
        if demand.gpus > max(capacities, default=0):
            where = "needs" if demand.bundles == 1 else f"needs, for each of its {demand.bundles} groups,"
            problems.append(
                f"{demand.name}: {label} {where} {demand.gpus} GPUs on one node; {nodes}: {_size_fix(demand, free)}"
            )
            continue
        room = _room(demand.gpus, capacities)
        if room < demand.bundles:
            setting = f"{_env_name(demand.count_key)}={demand.count}" if demand.count_key else ""
            if setting and demand.per > 1:
                setting += f" x {demand.per} referees"
            problems.append(
                f"{demand.name}: {demand.bundles} groups of {demand.gpus} GPUs, each on one node"
                f"{f' ({setting})' if setting else ''}, but {nodes}, room for {room}: {_count_fix(demand, room)}"
            )
            continue
        alone_ok.append(demand)
    if problems or fits(_sizes(alone_ok), free):
        return problems
    # Each fits alone: report the smallest combinations that do not (demands are few: 2**len subsets).
    from itertools import combinations

    failing: list[tuple[Demand, ...]] = []
    for k in range(2, len(alone_ok) + 1):
        for subset in combinations(alone_ok, k):
            if any(set(map(id, small)) <= set(map(id, subset)) for small in failing):
                continue
            if not fits(_sizes(subset), free):
                failing.append(subset)
        if failing:
            break
    for subset in failing:
        *others, last = subset
        names = " and ".join(d.describe() for d in subset)
        needed = sum(d.gpus * d.bundles for d in subset)
        most = _most_that_fit(others, last, free)
        count = _env_name(last.count_key)
        if most >= 1 and count:
            fix = f"use {count}={most}, or add a node with {last.gpus} free GPUs"
        else:
            fix = f"shrink one of them or add a node with {last.gpus} free GPUs"
        problems.append(
            f"{names} do not fit together, each group on one node ({needed} GPUs, {sum(capacities)} free); "
            f"{nodes}: {fix}"
        )
    return problems


def placement_warnings(demands: Sequence[Demand], free_gpus_per_node: Sequence[float]) -> list[str]:
    """When a layout exists but Ray could miss it: some choice of nodes for the demands placed earlier (``demands``
    in start order) leaves a later group without a node. Ray picks the nodes itself, one placement group or actor at
    a time, so this is a risk, not a certainty. Empty when ``placement_problems`` has something to say."""
    demands = [d for d in demands if d.gpus > 0 and d.bundles > 0]
    free = [float(f) for f in free_gpus_per_node]
    if not demands or placement_problems(demands, free):
        return []
    order = [(index, demand.gpus) for index, demand in enumerate(demands) for _ in range(demand.bundles)]
    capacities = _capacities(free)
    safe: set[tuple[int, tuple[int, ...]]] = set()
    visited = 0

    def strand(i: int, counts: tuple[int, ...]) -> int | None:
        """The index into ``order`` of a bundle some earlier choices leave without a node, or None."""
        nonlocal visited
        if i == len(order) or (i, counts) in safe:
            return None
        visited += 1
        if visited > _MAX_STATES:
            return None
        size = order[i][1]
        options = [capacity for capacity in range(size, len(counts)) if counts[capacity]]
        if not options:
            return i
        for capacity in options:
            following = list(counts)
            following[capacity] -= 1
            following[capacity - size] += 1
            found = strand(i + 1, tuple(following))
            if found is not None:
                return found
        safe.add((i, counts))
        return None

    stranded = strand(0, _counts(capacities, max(d.gpus for d in demands)))
    if stranded is None:
        return []
    victim = demands[order[stranded][0]]
    earlier = demands[: order[stranded][0]]
    before = ", ".join(d.describe() for d in earlier) or f"its own earlier groups ({victim.bundles} in all)"
    return [
        f"{victim.describe()} fits only if Ray places {before} on the right nodes ({_nodes_text(free)}); another "
        f"choice leaves a group of {victim.gpus} without a node and it pends: leave more room (smaller or fewer "
        f"groups) or make the groups' sizes divide the nodes' free GPUs"
    ]
