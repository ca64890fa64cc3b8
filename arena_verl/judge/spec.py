"""The ``--judge`` grammar every ``arena-verl`` command shares: one string names a judge backend and its model.

=========================  ==========================================================================================
``simulated``              the SIMULATED judge (no model: verdicts from a seeded hash of each trace's text); options
                           after ``?``, e.g. ``simulated?latency=0.2&position_bias=0.5`` (names in ``SIM_OPTIONS``)
``transformers:PATH``      a local model folder run by transformers
``vllm:PATH``              a local model folder served by vLLM engines in Ray actors
``openai:URL#MODEL``       an OpenAI-compatible chat endpoint (http or https) and the served model's name; the API
                           key comes from the environment variable ``JudgeSettings.api_key_env`` (OPENAI_API_KEY)
``python:MODULE:FUNCTION`` a Python function as the judge (``reward.arena.judge.backend: python``): ``MODULE`` a
                           top-level module or a dotted package path, importable here; keyword arguments for it
                           after ``?``, e.g. ``python:my_judges:prefer_shorter?weight=0.5&mode=strict``
                           (``judge.callable_kwargs``): a value that reads as a number is a float, anything else a
                           string (percent-decoded: ``%26`` for ``&``)
=========================  ==========================================================================================

Each backend's form, its parser and its canonical spec are its entry in the registry
(:mod:`arena_verl.backend_registry`): a registered backend has its form here too. A spec becomes
:class:`~arena_verl.settings_judge.JudgeSettings` through the same reader and validation as ``reward.arena.judge.*`` in
a training config, so a value a config would reject is rejected here too.
"""

from __future__ import annotations

from arena_verl.backend_registry import BACKENDS, backend_names, backend_of, spec_error
from arena_verl.backend_registry.grammar import SIM_OPTIONS
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.settings import settings_from_config
from arena_verl.settings_judge import JudgeSettings

__all__ = ["JUDGE_SPEC_FORMS", "SIM_OPTIONS", "judge_settings_from_spec", "judge_spec", "judge_spec_forms"]


def judge_spec_forms() -> tuple[str, ...]:
    """The ``--judge`` form of every registered backend."""
    return tuple(backend_of(name).spec_form for name in backend_names())


JUDGE_SPEC_FORMS = judge_spec_forms()  # the built-in backends' forms (a backend registered later: judge_spec_forms())


def judge_settings_from_spec(spec: str, **overrides) -> JudgeSettings:
    """The judge settings a ``--judge`` spec names (grammar in the module docstring).

    Parameters
    ----------
    spec : str
        ``simulated[?options]``, ``transformers:PATH``, ``vllm:PATH``, ``openai:URL#MODEL``,
        ``python:MODULE:FUNCTION[?keyword arguments]``, or a registered backend's form.
    **overrides
        Further :class:`JudgeSettings` fields (``max_concurrency=8``), applied after the spec's own.

    Raises
    ------
    ValueError
        An unknown scheme, an empty or missing model folder, a URL that is not http(s) or has no ``#MODEL``, an
        unknown simulated option, a python function that cannot be imported, or a value the settings' validation
        rejects; the message quotes the spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise spec_error(spec, "the judge spec is empty")
    spec = spec.strip()
    scheme = spec.partition(":")[0]
    name = scheme.partition("?")[0]
    if name not in backend_names():
        raise spec_error(spec, f"unknown judge {scheme!r}")
    fields = {"backend": name, **BACKENDS[name].parse_spec(spec)}
    try:
        # The training config's own reader: type checks, unknown keys and every range, named by key.
        arena = settings_from_config({"reward": {"arena": {"group_size": 2, "judge": {**fields, **overrides}}}})
        check_judge_templates(arena.judge)
    except ValueError as exc:
        raise ValueError(f"judge {spec!r}: {exc}") from None
    return arena.judge


def judge_spec(settings: JudgeSettings) -> str:
    """The canonical spec of ``settings``: model folders as absolute paths, and the simulated options that change
    its verdicts (not its latency), a python function with all its keyword arguments (sorted by name). Two settings
    that judge alike have the same spec (score files record it)."""
    return backend_of(settings).format_spec(settings)
