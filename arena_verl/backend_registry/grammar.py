"""The ``--judge`` grammar of the built-in backends, one parser and one formatter per form, each parameterised by the
backend's name so that a user's backend of the same shape reuses it (:func:`endpoint_grammar` for a served judge at
``NAME:URL#MODEL``). A parser returns ``reward.arena.judge`` keys; a formatter reads a ``JudgeSettings`` back into its
canonical spec (two settings that judge alike have the same one: score files record it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from arena_verl.backend_registry.registry import spec_error

__all__ = [
    "SIM_OPTIONS",
    "parse_simulated",
    "format_simulated",
    "model_folder_grammar",
    "endpoint_grammar",
    "parse_python",
    "format_python",
    "exact",
]

Grammar = tuple[Callable[[str], dict[str, Any]], Callable[[Any], str]]


def exact(value: float) -> str:
    """A number as text that reads back to the same value (``:g`` would round 12345678 to 1.23457e+07)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _head(spec: str, name: str, missing: str) -> str:
    """What follows ``NAME:`` in ``spec``; a ValueError when the head is not ``name`` or nothing follows."""
    head, colon, rest = spec.partition(":")
    if head != name:
        raise spec_error(spec, f"unknown judge {head!r}")
    if not colon:
        raise spec_error(spec, missing)
    return rest


def _options(spec: str, query: str, what: str) -> dict[str, str]:
    """``NAME=VALUE&...`` as a mapping (each name once, each with a value)."""
    options: dict[str, str] = {}
    for item in query.split("&") if query else []:
        name, equals, value = item.partition("=")
        if not name:
            raise spec_error(spec, f"a {what} without a name ({item!r})")
        if not equals or not value:
            raise spec_error(spec, f"{what} {name!r} has no value ({name}=VALUE)")
        if name in options:
            raise spec_error(spec, f"{what} {name!r} given twice")
        options[name] = value
    return options


# --- simulated: no model; verdicts from a seeded hash of each trace's text (arena_verl.judge.simulated) ---

# simulated?NAME=VALUE options and the reward.arena.judge key each sets.
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


def parse_simulated(spec: str) -> dict[str, Any]:
    if ":" in spec:
        raise spec_error(spec, "the simulated judge takes no path (options go after '?')")
    head, question, query = spec.partition("?")
    if head != "simulated":
        raise spec_error(spec, f"unknown judge {head!r}")
    if question and not query:
        raise spec_error(spec, "nothing after '?'")
    values = {}
    for name, value in _options(spec, query, "simulated option").items():
        if name not in SIM_OPTIONS:
            raise spec_error(spec, f"unknown simulated option {name!r} (options: {', '.join(SIM_OPTIONS)})")
        try:
            values[SIM_OPTIONS[name]] = float(value)
        except ValueError:
            raise spec_error(spec, f"simulated option {name}={value!r} is not a number") from None
    return values


def format_simulated(settings: Any) -> str:
    defaults = type(settings)()
    changed = [
        f"{name}={exact(settings.key(key))}"
        for name, key in SIM_OPTIONS.items()
        if name not in _TIMING_OPTIONS and settings.key(key) != defaults.key(key)
    ]
    return "simulated" + ("?" + "&".join(changed) if changed else "")


# --- a local model folder: NAME:PATH ---


def model_folder_grammar(name: str) -> Grammar:
    def parse(spec: str) -> dict[str, Any]:
        path = _head(spec, name, f"{name} needs a model folder")
        if not path.strip():
            raise spec_error(spec, "no model folder after ':'")
        folder = Path(path).expanduser()
        if not folder.exists():
            raise spec_error(spec, f"model folder {str(folder)!r} does not exist")
        if not folder.is_dir():
            raise spec_error(
                spec, f"{str(folder)!r} is not a folder (a local model folder with config.json is expected)"
            )
        return {"model_path": str(folder.resolve())}

    def format_spec(settings: Any) -> str:
        return f"{name}:{Path(settings.options.model_path).expanduser().resolve()}"

    return parse, format_spec


# --- a served judge: NAME:URL#MODEL ---


def endpoint_grammar(name: str) -> Grammar:
    """``NAME:URL#MODEL``: an http(s) base URL (``judge.base_url``) and the served model's name
    (``judge.model_path``)."""

    def parse(spec: str) -> dict[str, Any]:
        rest = _head(spec, name, f"{name} needs a URL and a model")
        url, hash_sign, model = rest.rpartition("#")
        if not hash_sign:
            raise spec_error(spec, "no '#MODEL' after the URL (the served model's name)")
        if not model.strip():
            raise spec_error(spec, "empty model name after '#'")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise spec_error(spec, f"{url!r} is not an http(s) URL (e.g. http://localhost:8000/v1)")
        return {"base_url": url, "model_path": model}

    def format_spec(settings: Any) -> str:
        return f"{name}:{settings.options.base_url}#{settings.options.model_path}"

    return parse, format_spec


# --- python: the user's function (arena_verl.judge.backends.python_backend) ---


def parse_python(spec: str) -> dict[str, Any]:
    """``python:MODULE:FUNCTION[?NAME=VALUE&...]`` as ``callable`` and ``callable_kwargs`` (the settings check the
    form); a value that reads as a number is a float, anything else a string (percent-decoded)."""
    head, colon, rest = spec.partition(":")
    if not colon or head != "python":
        raise spec_error(spec, "python needs a function: python:package.module:function")
    target, question, query = rest.partition("?")
    if question and not query:
        raise spec_error(spec, "nothing after '?'")
    kwargs = {
        name: _number_or_text(unquote(value)) for name, value in _options(spec, query, "keyword argument").items()
    }
    return {"callable": target, "callable_kwargs": kwargs or None}


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def format_python(settings: Any) -> str:
    kwargs = settings.options.callable_kwargs or {}
    options = "&".join(f"{name}={_spec_value(kwargs[name])}" for name in sorted(kwargs))
    return f"python:{settings.options.callable}" + (f"?{options}" if options else "")


def _spec_value(value: Any) -> str:
    """A keyword argument's value in a spec: a number exactly (:func:`exact`), text percent-encoded where it holds
    what the grammar reads (``&``, ``=``, ``%``, ``?``, ``#``, spaces); a config's null and bools as yaml spells
    them (they read back as text: a spec records a judge's identity)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return exact(value)
    return quote(str(value), safe="/:.,@+-_~")
