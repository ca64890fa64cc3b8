"""The arena's advantage estimator (``algorithm.adv_estimator=arena_grpo``): verl's own GRPO advantages, exactly, for
every group but a routed tournament's under certainty weighting, whose are scaled by its certainty; registered with
verl and run through verl's own ``compute_advantage``. The referee's side: what it remembers of each answered group."""

import asyncio

import numpy as np
import pytest
import torch

import arena_verl.verl_plugin  # noqa: F401  (registers arena_grpo)
from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.referee import Referee, Submission
from arena_verl.settings import arena_settings, settings_from_config
from arena_verl.verl_edge.advantage import compute_arena_grpo_advantage, pop_step_figures, route_figures

UIDS = np.array(["routed"] * 4 + ["mixed"] * 4 + ["uniform"] * 4, dtype=object)


def batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(12, generator=generator)
    scores[4:8] = torch.tensor([1.0, 0.0, 1.0, 0.0])  # a diverse verifier group
    scores[8:] = 0.0  # a uniform group: GRPO gives it 0
    mask = torch.ones(12, 5)
    mask[:, 3:] = torch.tensor([[1.0, 0.0]] * 6 + [[0.0, 0.0]] * 6)  # responses of different lengths
    rewards = torch.zeros(12, 5)
    rewards[torch.arange(12), mask.sum(-1).long() - 1] = scores
    return rewards, mask


def verl_grpo(rewards, mask, norm=True):
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    return compute_grpo_outcome_advantage(rewards, mask, UIDS, norm_adv_by_std_in_grpo=norm)[0]


@pytest.mark.parametrize("norm", [True, False])
def test_without_weights_it_gives_verl_s_own_grpo_advantages_exactly(norm):
    rewards, mask = batch()
    config = {"norm_adv_by_std_in_grpo": norm}
    ours, returns = compute_arena_grpo_advantage(rewards, mask, UIDS, config, lookup=lambda uids: {})
    assert torch.equal(ours, verl_grpo(rewards, mask, norm)) and torch.equal(returns, ours)
    every_weight_one = {u: (c, 1.0) for u, c in (("routed", "routed"), ("mixed", "mixed"), ("uniform", "uniform"))}
    ours, _ = compute_arena_grpo_advantage(rewards, mask, UIDS, config, lookup=lambda uids: every_weight_one)
    assert torch.equal(ours, verl_grpo(rewards, mask, norm))


def test_a_routed_group_is_scaled_by_its_certainty_and_no_other_group_changes():
    rewards, mask = batch()
    groups = {"routed": ("routed", 0.1), "mixed": ("mixed", 1.0), "uniform": ("uniform", 1.0)}
    ours, _ = compute_arena_grpo_advantage(rewards, mask, UIDS, None, lookup=lambda uids: groups)
    grpo = verl_grpo(rewards, mask)
    assert torch.allclose(ours[:4], 0.1 * grpo[:4]) and grpo[:4].abs().max() > 0.5
    assert torch.equal(ours[4:], grpo[4:])
    # The figures the tracker logs are of the advantages the trainer gets: per sample, over its response tokens.
    figures = pop_step_figures()
    assert figures["arena/mean_abs_advantage_routed"] == pytest.approx(float((0.1 * grpo[:4, 0]).abs().mean()))
    assert figures["arena/mean_abs_advantage_mixed"] == pytest.approx(float(grpo[4:8, 0].abs().mean()))
    assert pop_step_figures() == {}  # once per step


def test_verl_s_compute_advantage_calls_the_registered_estimator():
    from verl import DataProto
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.ray_trainer import compute_advantage

    assert get_adv_estimator_fn("arena_grpo") is compute_arena_grpo_advantage
    rewards, mask = batch()
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors={"uid": UIDS}
    )
    out = compute_advantage(data, adv_estimator="arena_grpo", config={"norm_adv_by_std_in_grpo": True})
    # No referee in this process: every group keeps GRPO's advantages.
    assert torch.equal(out.batch["advantages"], verl_grpo(rewards, mask))


def test_route_figures_leave_out_a_route_without_samples():
    assert route_figures([1.0, 3.0, 5.0], ["routed", "routed", None]) == {"arena/mean_abs_advantage_routed": 2.0}
    assert route_figures([1.0], ["uniform"]) == {}


class OrderJudge:
    """Prefers the trace with the larger index in its text: transitive, tells every pair apart."""

    name = "order"

    def __init__(self):
        self.stats = JudgeStats()

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        return 1.0 if first.text > second.text else 0.0

    async def score(self, *args, **kwargs):
        return 0.5


def answer_groups(weighting: bool):
    settings = arena_settings(group_size=4, certainty_weighting=weighting, group_deadline_s=30.0)

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=OrderJudge())
        rewards = {"routed": [0.0] * 4, "mixed": [1.0, 0.0, 0.0, 1.0]}
        subs = [
            Submission(uid, str(i), "p", Trace(f"{uid} {i}"), verifier_reward=r, step=1)
            for uid, values in rewards.items()
            for i, r in enumerate(values)
        ]
        verdicts = await asyncio.gather(*(referee.submit(s) for s in subs))
        await referee.drain()
        return referee.advantage_groups(["routed", "mixed", "never seen"]), verdicts, referee.metrics(1)

    return asyncio.run(scenario())


def test_the_referee_remembers_each_group_s_route_and_certainty():
    groups, verdicts, metrics = answer_groups(weighting=True)
    assert set(groups) == {"routed", "mixed"}
    assert groups["mixed"] == ("mixed", 1.0)
    route, weight = groups["routed"]
    certainty = verdicts[0].certainty
    assert route == "routed" and weight == certainty and 0.0 < certainty <= 1.0
    assert all(v.certainty == certainty for v in verdicts[:4]) and all(v.certainty == -1.0 for v in verdicts[4:])
    assert metrics["arena/certainty"] == pytest.approx(certainty)
    unweighted, _, _ = answer_groups(weighting=False)
    assert unweighted["routed"] == ("routed", 1.0)  # the certainty is logged either way, weighted only when on


def test_a_step_without_a_routed_tournament_has_no_certainty_figure():
    settings = arena_settings(group_size=2, group_deadline_s=30.0)

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=OrderJudge())
        subs = [Submission("g", str(i), "p", Trace(str(i)), verifier_reward=float(i), step=2) for i in range(2)]
        await asyncio.gather(*(referee.submit(s) for s in subs))
        await referee.drain()
        return referee.metrics(2)

    assert "arena/certainty" not in asyncio.run(scenario())


def config(estimator, mode="arena", weighting=True):
    return {
        "algorithm": {"adv_estimator": estimator},
        "actor_rollout_ref": {"rollout": {"n": 4}},
        "reward": {"arena": {"mode": mode, "certainty_weighting": weighting}},
    }


def test_certainty_weighting_that_could_not_act_is_refused_naming_both_keys():
    with pytest.raises(ValueError, match=r"certainty_weighting=true needs algorithm\.adv_estimator=arena_grpo"):
        settings_from_config(config("grpo"))
    with pytest.raises(ValueError, match=r"certainty_weighting=true.*reward\.arena\.mode='rlvr'"):
        settings_from_config(config("arena_grpo", mode="rlvr"))
    assert settings_from_config(config("arena_grpo")).referee.certainty_weighting
    assert not settings_from_config(config("grpo", weighting=False)).referee.certainty_weighting
