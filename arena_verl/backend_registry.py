"""The judge-backend registry: one entry per ``reward.arena.judge.backend``, read by everything that depends on which
backend a judge is.

=====================  =================================================================================================
reader                 what it reads of the entry
=====================  =================================================================================================
settings validation    the name (``judge.backend`` is one of :data:`BACKENDS`), what the backend needs (a model folder,
                       a URL, a Python function), whether its calls are retried (the call bound), its own ``validate``
``--judge`` grammar    ``spec_form``, ``parse_spec`` and ``format_spec`` (:mod:`arena_verl.judge.spec`)
the factory            ``factory`` (:func:`arena_verl.judge.factory.make_judge`), ``prompts`` (templates are checked)
recipe pre-flight      ``model_folder`` and ``tokenizer`` (:mod:`arena_verl.tools.recipe`)
placement              ``gpu_engines`` (:mod:`arena_verl.verl_edge.placement`), ``verl_router``
                       (:mod:`arena_verl.verl_edge.judge_placement`)
the tools              ``simulated`` (the banners), ``gpu_engines`` (Ray is started for them)
=====================  =================================================================================================

Adding a backend is one module (its judge class, in ``arena_verl/judge/backends/``) and one :class:`JudgeBackend`
entry here (and its docs). A backend defined elsewhere (a test, a user's package) is added with :func:`register`
before the settings are read.

This module sits with the settings (layer L1): it imports nothing of the package, so the settings read it without the
judge layer. It names each backend's class by its import path (``factory``, ``"package.module:attribute"``, the
form of ``judge.callable``): the judge layer imports it when it builds the judge (:mod:`arena_verl.judge.factory`),
the settings never do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from arena_verl.core.urls import check_url, repeated_servers, split_urls

__all__ = ["JudgeBackend", "BACKENDS", "register", "backend_of", "required_fields", "spec_error", "SIM_OPTIONS"]

_KEY = "reward.arena.judge"


@dataclass(frozen=True)
class JudgeBackend:
    """One judge backend: how it is built, named on the command line, validated, placed and pre-flighted."""

    name: str  # reward.arena.judge.backend
    # (JudgeSettings) -> Judge: a callable, or its path "package.module:attribute" (imported when a judge is built)
    factory: str | Callable[[Any], Any]
    spec_form: str  # its --judge form, e.g. "vllm:PATH"
    parse_spec: Callable[[str], dict[str, Any]]  # a --judge spec -> JudgeSettings fields (backend excluded)
    format_spec: Callable[[Any], str]  # JudgeSettings -> the canonical spec (score files record it)
    # Its own start-up rules, beyond what the facts below require (run when the judge will run).
    validate: Callable[[Any], None] | None = None
    model_folder: bool = False  # judge.model_path is a local model folder it loads: required, and must exist
    needs_url: bool = False  # judge.base_url (or judge.base_url_file) is required
    verl_router: bool = False  # judge.base_url may be "verl": the judge verl serves, through verl's router
    takes_callable: bool = False  # judge.callable names its Python function (required; refused by every other)
    # Which tokenizer counts its traces, checked by the recipes' pre-flight: "model_path" (its model folder's),
    # "tokenizer" (judge.tokenizer, when set), or None (it reads no tokens).
    tokenizer: str | None = None
    gpu_engines: bool = False  # its engines are Ray actors on GPUs of their own (placed; the tools start Ray)
    prompts: bool = True  # renders the judge templates (checked at start-up)
    retries: bool = True  # a call is retried and re-asked (bounded by judge.call_budget_s), else by timeout_s alone
    simulated: bool = False  # verdicts are synthetic (no model): the tools say so


BACKENDS: dict[str, JudgeBackend] = {}


def register(backend: JudgeBackend) -> JudgeBackend:
    """Add ``backend`` (a name already taken is an error: replace an entry by assigning ``BACKENDS[name]``)."""
    if backend.name in BACKENDS:
        raise ValueError(f"judge backend {backend.name!r} is registered already")
    BACKENDS[backend.name] = backend
    return backend


def backend_of(judge: Any) -> JudgeBackend:
    """The registry entry of ``judge.backend`` (a JudgeSettings, or a backend name); a ``ValueError`` naming the key."""
    name = judge if isinstance(judge, str) else judge.backend
    try:
        return BACKENDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"{_KEY}.backend must be one of {tuple(BACKENDS)}, got {name!r}") from None


def spec_error(spec: Any, reason: str) -> ValueError:
    forms = ", ".join(entry.spec_form for entry in BACKENDS.values())
    return ValueError(f"judge {spec!r}: {reason}; expected one of {forms}")


def _exact(value: float) -> str:
    """A number as text that reads back to the same value (``:g`` would round 12345678 to 1.23457e+07)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# --- simulated: no model; verdicts from a seeded hash of each trace's text (arena_verl.judge.simulated) ---

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


def _parse_simulated(spec: str) -> dict[str, Any]:
    if ":" in spec:
        raise spec_error(spec, "the simulated judge takes no path (options go after '?')")
    head, question, query = spec.partition("?")
    if head != "simulated":
        raise spec_error(spec, f"unknown judge {head!r}")
    if question and not query:
        raise spec_error(spec, "nothing after '?'")
    options: dict[str, float] = {}
    for item in query.split("&") if query else []:
        name, equals, value = item.partition("=")
        if name not in SIM_OPTIONS:
            raise spec_error(spec, f"unknown simulated option {name!r} (options: {', '.join(SIM_OPTIONS)})")
        if not equals or not value:
            raise spec_error(spec, f"simulated option {name!r} has no value ({name}=NUMBER)")
        if name in options:
            raise spec_error(spec, f"simulated option {name!r} given twice")
        try:
            options[name] = float(value)
        except ValueError:
            raise spec_error(spec, f"simulated option {name}={value!r} is not a number") from None
    return {SIM_OPTIONS[name]: value for name, value in options.items()}


def _format_simulated(settings: Any) -> str:
    defaults = type(settings)()
    changed = [
        f"{name}={_exact(getattr(settings, field))}"
        for name, field in SIM_OPTIONS.items()
        if name not in _TIMING_OPTIONS and getattr(settings, field) != getattr(defaults, field)
    ]
    return "simulated" + ("?" + "&".join(changed) if changed else "")


# --- transformers and vllm: a local model folder ---


def _model_folder_parser(name: str) -> Callable[[str], dict[str, Any]]:
    def parse(spec: str) -> dict[str, Any]:
        head, colon, path = spec.partition(":")
        if head != name:
            raise spec_error(spec, f"unknown judge {head!r}")
        if not colon:
            raise spec_error(spec, f"{name} needs a model folder")
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

    return parse


def _format_model_folder(settings: Any) -> str:
    return f"{settings.backend}:{Path(settings.model_path).expanduser().resolve()}"


# --- openai: any OpenAI-compatible chat endpoint ---


def _parse_endpoint(spec: str) -> dict[str, Any]:
    head, colon, rest = spec.partition(":")
    if head != "openai":
        raise spec_error(spec, f"unknown judge {head!r}")
    if not colon:
        raise spec_error(spec, "openai needs a URL and a model")
    url, hash_sign, model = rest.rpartition("#")
    if not hash_sign:
        raise spec_error(spec, "no '#MODEL' after the URL (the served model's name)")
    if not model.strip():
        raise spec_error(spec, "empty model name after '#'")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise spec_error(spec, f"{url!r} is not an http(s) URL (e.g. http://localhost:8000/v1)")
    return {"base_url": url, "model_path": model}


def _check_endpoint(judge: Any) -> None:
    if judge.base_url and judge.base_url != "verl":
        urls = split_urls(judge.base_url)
        for url in urls:
            check_url(url, f"{_KEY}.base_url")
        if repeated := repeated_servers(urls):
            raise ValueError(f"{_KEY}.base_url lists a replica twice: {repeated} in {judge.base_url!r}")
    if judge.base_url != "verl" and not judge.model_path:
        raise ValueError(f"{_KEY}.model_path is required for the openai backend (the served model's name)")


# --- python: the user's function (arena_verl.judge.backends.python_backend) ---


def _parse_python(spec: str) -> dict[str, Any]:
    """``python:MODULE:FUNCTION[?NAME=VALUE&...]`` as ``callable`` and ``callable_kwargs`` (the settings check the
    form); a value that reads as a number is a float, anything else a string (percent-decoded)."""
    head, colon, rest = spec.partition(":")
    if not colon or head != "python":
        raise spec_error(spec, "python needs a function: python:package.module:function")
    target, question, query = rest.partition("?")
    if question and not query:
        raise spec_error(spec, "nothing after '?'")
    kwargs: dict[str, Any] = {}
    for item in query.split("&") if query else []:
        name, equals, value = item.partition("=")
        if not name:
            raise spec_error(spec, f"a keyword argument without a name ({item!r})")
        if not equals or not value:
            raise spec_error(spec, f"keyword argument {name!r} has no value ({name}=VALUE)")
        if name in kwargs:
            raise spec_error(spec, f"keyword argument {name!r} given twice")
        kwargs[name] = _number_or_text(unquote(value))
    return {"callable": target, "callable_kwargs": kwargs or None}


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def _format_python(settings: Any) -> str:
    kwargs = settings.callable_kwargs or {}
    options = "&".join(f"{name}={_spec_value(kwargs[name])}" for name in sorted(kwargs))
    return f"python:{settings.callable}" + (f"?{options}" if options else "")


def _spec_value(value: Any) -> str:
    """A keyword argument's value in a spec: a number exactly (:func:`_exact`), text percent-encoded where it holds
    what the grammar reads (``&``, ``=``, ``%``, ``?``, ``#``, spaces); a config's null and bools as yaml spells
    them (they read back as text: a spec records a judge's identity)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return _exact(value)
    return quote(str(value), safe="/:.,@+-_~")


def _check_python(judge: Any) -> None:
    if judge.show_reference:
        raise ValueError(
            f"{_KEY}.show_reference: the python backend never passes the reference answer to its callable; leave it "
            "false"
        )


for _entry in (
    JudgeBackend(
        "simulated",
        factory="arena_verl.judge.simulated.trace_judge:simulated_judge",
        spec_form="simulated",
        parse_spec=_parse_simulated,
        format_spec=_format_simulated,
        prompts=False,
        simulated=True,
    ),
    JudgeBackend(
        "transformers",
        factory="arena_verl.judge.backends.transformers_backend:TransformersJudge",
        spec_form="transformers:PATH",
        parse_spec=_model_folder_parser("transformers"),
        format_spec=_format_model_folder,
        model_folder=True,
        tokenizer="model_path",
    ),
    JudgeBackend(
        "openai",
        factory="arena_verl.judge.backends.openai_backend:OpenAIJudge",
        spec_form="openai:URL#MODEL",
        parse_spec=_parse_endpoint,
        format_spec=lambda settings: f"openai:{settings.base_url}#{settings.model_path}",
        validate=_check_endpoint,
        needs_url=True,
        verl_router=True,
        tokenizer="tokenizer",
    ),
    JudgeBackend(
        "vllm",
        factory="arena_verl.judge.backends.vllm_backend:VLLMJudge",
        spec_form="vllm:PATH",
        parse_spec=_model_folder_parser("vllm"),
        format_spec=_format_model_folder,
        model_folder=True,
        tokenizer="model_path",
        gpu_engines=True,
    ),
    JudgeBackend(
        "python",
        factory="arena_verl.judge.backends.python_backend:PythonJudge",
        spec_form="python:MODULE:FUNCTION",
        parse_spec=_parse_python,
        format_spec=_format_python,
        validate=_check_python,
        takes_callable=True,
        prompts=False,
        retries=False,
    ),
):
    register(_entry)
del _entry


def required_fields(judge: Any) -> None:
    """What ``judge``'s backend needs that is not there (a model folder, an address, a function): a ``ValueError``
    naming the key. Then the backend's own rules."""
    backend = backend_of(judge)
    if backend.model_folder and not judge.model_path:
        raise ValueError(f"{_KEY}.model_path is required for the {backend.name} backend")
    if judge.base_url_file is not None and not judge.base_url_file.strip():
        raise ValueError(f"{_KEY}.base_url_file must be a file path or null; got ''")
    if backend.needs_url and not judge.base_url and not judge.base_url_file:
        verl = " ('verl': verl's own router)" if backend.verl_router else ""
        raise ValueError(f"{_KEY}.base_url is required for the {backend.name} backend{verl}")
    if backend.validate is not None:
        backend.validate(judge)
    if judge.tokenizer is not None and not judge.tokenizer.strip():
        raise ValueError(f"{_KEY}.tokenizer must be a tokenizer folder or hub id, or null; got ''")
    if backend.takes_callable and not judge.callable:
        raise ValueError(
            f"{_KEY}.callable is required for the {backend.name} backend ('package.module:function', e.g. "
            "'my_judges:prefer_shorter')"
        )
    if not backend.takes_callable:
        for key in ("callable", "callable_kwargs"):
            if getattr(judge, key) not in (None, {}):
                raise ValueError(
                    f"{_KEY}.{key} applies to the python backend only (judge.backend is {backend.name!r}): set "
                    f"{_KEY}.backend=python, or leave {key} null"
                )
