"""The judge-backend registry: one entry per ``reward.arena.judge.backend``, read by everything that depends on which
backend a judge is. An entry is data: the backend's name, its facts, its own options (a
:class:`~arena_verl.core.fields.Part` whose keys sit in ``reward.arena.judge``), its ``--judge`` grammar and its
constructor.

=====================  =================================================================================================
reader                 what it reads of the entry
=====================  =================================================================================================
settings               the name, ``options`` (the backend's own keys), ``model_folder``, ``needs_url``,
                       ``label_probabilities``, ``retries`` (the call bound)
``--judge`` grammar    ``spec_form``, ``parse_spec`` and ``format_spec`` (:mod:`arena_verl.judge.spec`)
the factory            ``factory`` (:func:`arena_verl.judge.factory.make_judge`), ``prompts`` (templates are checked)
a served judge         ``request_path`` (each replica's request URL, :mod:`arena_verl.core.urls`), ``probe`` (readiness)
recipe pre-flight      ``model_folder`` and ``tokenizer`` (:mod:`arena_verl.tools.recipe`), ``probe``
placement              ``gpu_engines`` (:mod:`arena_verl.verl_edge.placement`), ``verl_router``
the tools              ``simulated`` (the banners), ``gpu_engines`` (Ray is started for them)
=====================  =================================================================================================

Adding a backend is one module (its judge class, and its options type) and one :func:`register` call: the built-in
ones are in :mod:`arena_verl.backend_registry.builtin`; a user's package registers its own at import, found in every
process through :mod:`arena_verl.core.plugin_loader` (an entry point, or ``reward.arena.plugins``).

This package sits with the settings (layer L1): it imports nothing of the judge layer. It names each backend's class
by its import path (``"package.module:attribute"``, imported when a judge is built by
:mod:`arena_verl.judge.factory`).
"""

from arena_verl.backend_registry import builtin as _builtin  # registers the built-in backends
from arena_verl.backend_registry.registry import (
    BACKENDS,
    JudgeBackend,
    backend_names,
    backend_of,
    option_types,
    register,
    spec_error,
)

__all__ = ["JudgeBackend", "BACKENDS", "register", "backend_of", "backend_names", "option_types", "spec_error"]

del _builtin
