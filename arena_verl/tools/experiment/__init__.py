"""``arena-verl experiment``: the learning experiment (see :mod:`arena_verl.tools.experiment.command`)."""
