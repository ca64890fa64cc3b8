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

A spec becomes :class:`~arena_verl.settings.JudgeSettings` through the same reader and validation as
``reward.arena.judge.*`` in a training config, so a value a config would reject is rejected here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.settings import JudgeSettings, settings_from_config

__all__ = ["JUDGE_SPEC_FORMS", "SIM_OPTIONS", "judge_settings_from_spec", "judge_spec"]

JUDGE_SPEC_FORMS = ("simulated", "transformers:PATH", "vllm:PATH", "openai:URL#MODEL", "python:MODULE:FUNCTION")
# simulated?NAME=VALUE options and the JudgeSettings field each sets.
SIM_OPTIONS = {
    "sharpness": "sim_sharpness",
    "position_bias": "sim_position_bias",
    "tie_rate": "sim_tie_rate",
    "parse_failure_rate": "sim_parse_failure_rate",
    "latency": "sim_latency_s",
    "latency_sigma": "sim_latency_sigma",
    "seed": "seed",
}
# Options that only change how long a call takes, not what it answers: not part of a judge's identity.
_TIMING_OPTIONS = ("latency", "latency_sigma")


def judge_settings_from_spec(spec: str, **overrides) -> JudgeSettings:
    """The judge settings a ``--judge`` spec names (grammar in the module docstring).

    Parameters
    ----------
    spec : str
        ``simulated[?options]``, ``transformers:PATH``, ``vllm:PATH``, ``openai:URL#MODEL`` or
        ``python:MODULE:FUNCTION[?keyword arguments]``.
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
        raise _error(spec, "the judge spec is empty")
    spec = spec.strip()
    scheme, colon, rest = spec.partition(":")
    if scheme == "simulated" or scheme.startswith("simulated?"):
        if colon:
            raise _error(spec, "the simulated judge takes no path (options go after '?')")
        fields = {"backend": "simulated", **_sim_options(spec)}
    elif scheme.partition("?")[0] == "python":
        if not colon or scheme != "python":
            raise _error(spec, "python needs a function: python:package.module:function")
        fields = {"backend": "python", **_python_target(spec, rest)}
    elif scheme in ("transformers", "vllm", "openai") and not colon:
        raise _error(spec, f"{scheme} needs {'a URL and a model' if scheme == 'openai' else 'a model folder'}")
    elif scheme in ("transformers", "vllm"):
        fields = {"backend": scheme, "model_path": _model_folder(spec, rest)}
    elif scheme == "openai":
        fields = {"backend": "openai", **_endpoint(spec, rest)}
    else:
        raise _error(spec, f"unknown judge {scheme!r}")
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
    if settings.backend == "simulated":
        defaults = JudgeSettings()
        changed = [
            f"{name}={_exact(getattr(settings, field))}"
            for name, field in SIM_OPTIONS.items()
            if name not in _TIMING_OPTIONS and getattr(settings, field) != getattr(defaults, field)
        ]
        return "simulated" + ("?" + "&".join(changed) if changed else "")
    if settings.backend in ("transformers", "vllm"):
        return f"{settings.backend}:{Path(settings.model_path).expanduser().resolve()}"
    if settings.backend == "openai":
        return f"openai:{settings.base_url}#{settings.model_path}"
    if settings.backend == "python":
        kwargs = settings.callable_kwargs or {}
        options = "&".join(f"{name}={_spec_value(kwargs[name])}" for name in sorted(kwargs))
        return f"python:{settings.callable}" + (f"?{options}" if options else "")
    raise ValueError(f"no judge spec for backend {settings.backend!r}")


def _exact(value: float) -> str:
    """A number as text that reads back to the same value (``:g`` would round 12345678 to 1.23457e+07)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _sim_options(spec: str) -> dict[str, float]:
    _, question, query = spec.partition("?")
    if question and not query:
        raise _error(spec, "nothing after '?'")
    options: dict[str, float] = {}
    for item in query.split("&") if query else []:
        name, equals, value = item.partition("=")
        if name not in SIM_OPTIONS:
            raise _error(spec, f"unknown simulated option {name!r} (options: {', '.join(SIM_OPTIONS)})")
        if not equals or not value:
            raise _error(spec, f"simulated option {name!r} has no value ({name}=NUMBER)")
        if name in options:
            raise _error(spec, f"simulated option {name!r} given twice")
        try:
            options[name] = float(value)
        except ValueError:
            raise _error(spec, f"simulated option {name}={value!r} is not a number") from None
    return {SIM_OPTIONS[name]: value for name, value in options.items()}


def _python_target(spec: str, rest: str) -> dict[str, Any]:
    """``MODULE:FUNCTION[?NAME=VALUE&...]`` as ``callable`` and ``callable_kwargs`` (the settings check the form)."""
    target, question, query = rest.partition("?")
    if question and not query:
        raise _error(spec, "nothing after '?'")
    kwargs: dict[str, Any] = {}
    for item in query.split("&") if query else []:
        name, equals, value = item.partition("=")
        if not name:
            raise _error(spec, f"a keyword argument without a name ({item!r})")
        if not equals or not value:
            raise _error(spec, f"keyword argument {name!r} has no value ({name}=VALUE)")
        if name in kwargs:
            raise _error(spec, f"keyword argument {name!r} given twice")
        kwargs[name] = _number_or_text(unquote(value))
    return {"callable": target, "callable_kwargs": kwargs or None}


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def _spec_value(value: Any) -> str:
    """A keyword argument's value in a spec: a number exactly (:func:`_exact`), text percent-encoded where it holds
    what the grammar reads (``&``, ``=``, ``%``, ``?``, ``#``, spaces); a config's null and bools as yaml spells
    them (they read back as text: a spec records a judge's identity)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return _exact(value)
    return quote(str(value), safe="/:.,@+-_~")


def _model_folder(spec: str, path: str) -> str:
    if not path.strip():
        raise _error(spec, "no model folder after ':'")
    folder = Path(path).expanduser()
    if not folder.exists():
        raise _error(spec, f"model folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise _error(spec, f"{str(folder)!r} is not a folder (a local model folder with config.json is expected)")
    return str(folder.resolve())


def _endpoint(spec: str, rest: str) -> dict[str, str]:
    url, hash_sign, model = rest.rpartition("#")
    if not hash_sign:
        raise _error(spec, "no '#MODEL' after the URL (the served model's name)")
    if not model.strip():
        raise _error(spec, "empty model name after '#'")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _error(spec, f"{url!r} is not an http(s) URL (e.g. http://localhost:8000/v1)")
    return {"base_url": url, "model_path": model}


def _error(spec, reason: str) -> ValueError:
    return ValueError(f"judge {spec!r}: {reason}; expected one of {', '.join(JUDGE_SPEC_FORMS)}")
