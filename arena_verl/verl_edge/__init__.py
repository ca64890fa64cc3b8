"""The verl edge's internals (layer L5): tracker hook, validation signal, DAPO bound, placement, verl's rules.
The public verl paths stay at the top: :mod:`arena_verl.verl_plugin`, :mod:`arena_verl.reward_manager`,
:mod:`arena_verl.verl_reward_fn`."""
