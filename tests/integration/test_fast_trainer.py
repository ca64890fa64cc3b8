"""The fast trainer's parts against verl's and Hugging Face's own (no Ray, no trainer process): its sampler decodes as
``generate`` does; its update's loss follows ``actor.policy_loss.loss_mode`` as verl's policy loss computes it, and
its advantages follow ``algorithm.adv_estimator`` as verl's estimators compute them, both read from the recipe's
composed config; leaving zero-advantage rows out of the forward pass changes nothing. (The update against verl's
``FSDPEngine`` over several steps: test_fast_update_tie.py; the whole trainer in the experiment: test_experiment.py.)"""

import os

import numpy as np
import pytest
import torch

from arena_verl.testing.toy import build_toy_model
from arena_verl.tools.experiment.fast.config import recipe_config
from arena_verl.tools.experiment.fast.sampler import sample
from arena_verl.tools.experiment.fast.update import PolicyUpdate, UpdateBatch


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_toy_model(tmp_path_factory.mktemp("toy") / "model")
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    return path, model, AutoTokenizer.from_pretrained(str(path))


def _generate(model, prompt, max_new_tokens, eos, pad):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=max_new_tokens,
                         eos_token_id=eos, pad_token_id=pad)[0, len(prompt):].tolist()  # fmt: skip
    return out[: out.index(eos) + 1] if eos in out else out


def test_greedy_sampling_equals_generate_with_rows_that_finish_early(toy):
    _, model, tokenizer = toy
    prompts = [tokenizer.encode(text) for text in ("What is 2 + 2?", "x = 4", "We compute the sum step by step.")]
    pad = tokenizer.pad_token_id
    # An "end" token that one prompt's greedy path first writes at its third token or later: that row finishes early
    # and is dropped from the cache while others go on (a random-weight model rarely writes its real eos).
    paths = [_generate(model, p, 12, -1, pad) for p in prompts]
    eos = next(tok for path in paths for i, tok in enumerate(path) if i >= 2 and tok not in path[:i])
    ours = sample(model, prompts, 12, eos, pad, temperature=0)
    theirs = [_generate(model, p, 12, eos, pad) for p in prompts]
    assert ours == theirs
    assert sample(model, prompts, 12, eos, pad, temperature=0, max_rows=2) == ours  # decoded in chunks: the same
    lengths = [len(row) for row in ours]
    assert min(lengths) < max(lengths) and any(row[-1] == eos and len(row) >= 3 for row in ours), lengths


def test_sampling_is_seeded_and_follows_the_temperature(toy):
    _, model, tokenizer = toy
    prompts = [tokenizer.encode("What is 2 + 2?")] * 64
    draw = lambda seed, t: sample(model, prompts, 8, -1, tokenizer.pad_token_id, t, torch.Generator().manual_seed(seed))  # noqa: E731
    assert draw(3, 1.0) == draw(3, 1.0) and draw(3, 1.0) != draw(4, 1.0)
    # colder sampling concentrates on the greedy token: its first-token agreement with greedy rises
    greedy = draw(0, 0)[0][0]
    agreement = {t: np.mean([row[0] == greedy for row in draw(5, t)]) for t in (0.2, 2.0)}
    assert agreement[0.2] > agreement[2.0]


def _config(path, *overrides):
    """The arena_live recipe's config as verl would receive it (its dry run), with the toy model."""
    env = {**os.environ, "SETTING": "cpu", "MODEL_PATH": str(path), "TRAIN_FILES": "/absent/train.parquet",
           "VAL_FILES": "/absent/val.parquet"}  # fmt: skip
    return recipe_config("arena_live", env, ["actor_rollout_ref.rollout.n=4", "data.train_batch_size=2", *overrides])


def _batch(model, tokenizer, seed=0):
    torch.manual_seed(seed)
    prompts = [tokenizer.encode("What is 2 + 2?"), tokenizer.encode("x = 4 so")]
    rows = [p for p in prompts for _ in range(4)]
    responses = sample(model, rows, 10, -1, tokenizer.pad_token_id, 1.0, torch.Generator().manual_seed(seed))
    width_p, width_r = max(map(len, rows)), max(map(len, responses))
    pad = tokenizer.pad_token_id
    prompts_t = torch.tensor([[pad] * (width_p - len(p)) + p for p in rows])
    responses_t = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    mask = torch.cat([prompts_t != pad, torch.tensor([[1] * len(r) + [0] * (width_r - len(r)) for r in responses])], 1)
    response_mask = mask[:, width_p:].long()
    # the second group's rewards are all the same: zero advantages, left out of the forward pass
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5, 0, 0, 0, 0])[:, None] * response_mask
    return UpdateBatch(prompts_t, responses_t, mask.long(), response_mask, advantages)


@pytest.mark.parametrize("loss_mode", ["cispo", "vanilla"])
def test_the_loss_is_verls_policy_loss_for_the_configs_loss_mode(toy, loss_mode):
    from transformers import AutoModelForCausalLM
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.utils.config import omega_conf_to_dataclass

    path, _, tokenizer = toy
    config = _config(path, f"actor_rollout_ref.actor.policy_loss.loss_mode={loss_mode}")
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    assert actor.policy_loss.loss_mode == loss_mode
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    batch = _batch(model, tokenizer)
    update = PolicyUpdate(model, actor, total_steps=1, rollout_n=4)
    current, _ = update.log_probs(batch)
    # off-policy old log-probs, so that the ratio (and so the loss mode) matters
    old = current + 0.4 * torch.linspace(-1, 1, current.numel()).reshape(current.shape)
    expected_actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    expected_actor.global_batch_info.update(
        dp_size=1, batch_num_tokens=int(batch.response_mask.sum()), global_batch_size=len(batch), loss_scale_factor=None
    )
    expected, _ = get_policy_loss_fn(loss_mode)(
        old_log_prob=old, log_prob=current, advantages=batch.advantages, response_mask=batch.response_mask.bool(),
        loss_agg_mode=actor.loss_agg_mode, config=expected_actor,
    )  # fmt: skip
    figures = update.step(batch, old_log_probs=old)
    assert figures["actor/pg_loss"] == pytest.approx(float(expected), rel=1e-5, abs=1e-7)


def test_cispo_and_vanilla_give_different_losses_off_policy(toy):
    from transformers import AutoModelForCausalLM
    from verl.utils.config import omega_conf_to_dataclass

    path, _, tokenizer = toy
    losses = {}
    for mode in ("cispo", "vanilla"):
        config = _config(path, f"actor_rollout_ref.actor.policy_loss.loss_mode={mode}")
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        batch = _batch(model, tokenizer)
        update = PolicyUpdate(model, omega_conf_to_dataclass(config.actor_rollout_ref.actor), 1, 4)
        current, _ = update.log_probs(batch)
        losses[mode] = update.step(batch, old_log_probs=current + 0.3)["actor/pg_loss"]
    assert abs(losses["cispo"] - losses["vanilla"]) > 1e-3


def test_leaving_zero_advantage_rows_out_changes_nothing(toy):
    from transformers import AutoModelForCausalLM
    from verl.utils.config import omega_conf_to_dataclass

    path, _, tokenizer = toy
    config = _config(path)
    params = {}
    for skip in (True, False):
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        update = PolicyUpdate(model, omega_conf_to_dataclass(config.actor_rollout_ref.actor), 1, 4)
        assert update.skip_zero_rows
        update.skip_zero_rows = skip
        figures = update.step(_batch(model, tokenizer))
        params[skip] = (figures["actor/pg_loss"], torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert params[True][0] == pytest.approx(params[False][0], rel=1e-5, abs=1e-7)
    assert torch.allclose(params[True][1], params[False][1], atol=1e-6)


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "arena_grpo"])
def test_advantages_are_verls_estimator_for_the_configs_adv_estimator(toy, estimator):
    from verl import DataProto
    from verl.trainer.ppo import core_algos

    from arena_verl.tools.experiment.fast.trainer import step_advantages
    from arena_verl.verl_edge.advantage import install_advantage_estimator, use_lookup

    install_advantage_estimator()
    path, _, _ = toy
    config = _config(path, f"algorithm.adv_estimator={estimator}")
    assert config.algorithm.adv_estimator == estimator
    rewards = torch.zeros(8, 5)
    rewards[[0, 2, 5], 4] = 1.0
    uids = np.array(["a"] * 4 + ["b"] * 4, dtype=object)
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": torch.ones(8, 5)},
                               non_tensors={"uid": uids})  # fmt: skip
    use_lookup(lambda groups: {})  # no referee answered: arena_grpo keeps GRPO's advantages
    try:
        got = step_advantages(data, config.algorithm, 4).batch["advantages"]
    finally:
        use_lookup(None)
    name = "grpo" if estimator == "arena_grpo" else estimator
    fn = core_algos.get_adv_estimator_fn(name)
    expected, _ = fn(token_level_rewards=rewards, response_mask=torch.ones(8, 5), index=uids, config=config.algorithm)
    assert torch.allclose(got, expected, atol=1e-6)
    if estimator == "rloo":  # not GRPO's: the estimator named in the config is the one used
        grpo, _ = core_algos.compute_grpo_outcome_advantage(rewards, torch.ones(8, 5), uids)
        assert not torch.allclose(got, grpo, atol=1e-3)


@pytest.mark.parametrize(
    "override, message",
    [
        ("algorithm.filter_groups.enable=true", "DAPO"),
        ("actor_rollout_ref.actor.use_kl_loss=true", "use_kl_loss"),
        ("algorithm.use_kl_in_reward=true", "use_kl_in_reward"),
        ("reward.arena.num_referees=2", "num_referees"),
        ("actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm", "loss_scale_factor"),
    ],
)
def test_what_the_fast_trainer_does_not_do_is_refused(toy, override, message):
    from arena_verl.core.errors import InputError
    from arena_verl.tools.experiment.fast.trainer import refuse_unsupported

    path, _, _ = toy
    refuse_unsupported(_config(path))  # the recipe's own config is accepted
    with pytest.raises(InputError, match=message):
        refuse_unsupported(_config(path, override))
