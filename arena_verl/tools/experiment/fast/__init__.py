"""The experiment's fast trainer (``arena-verl experiment --trainer fast``): verl's step in one process on CPU, with
the arena's own reward manager, referee and estimator and verl's own loss, for runs of hundreds of steps in minutes.
The parts: :mod:`.config` (the recipe's config), :mod:`.sampler`, :mod:`.batch`, :mod:`.update`, :mod:`.trainer`;
``python -m arena_verl.tools.experiment.fast`` runs one recipe (:mod:`.__main__`)."""
