"""The built-in judge backends: each one's own options (its ``reward.arena.judge`` keys beyond the common ones of
:class:`~arena_verl.settings_judge.JudgeSettings`) and its registry entry. The judge classes are in
``arena_verl/judge/backends/`` and ``arena_verl/judge/simulated/``, named here by path."""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena_verl.backend_registry.grammar import (
    endpoint_grammar,
    format_python,
    format_simulated,
    model_folder_grammar,
    parse_python,
    parse_simulated,
)
from arena_verl.backend_registry.registry import JudgeBackend, register
from arena_verl.core.fields import DAY_S, Part, setting
from arena_verl.core.urls import CHAT_COMPLETIONS, check_url, repeated_servers, split_urls

__all__ = [
    "SimulatedOptions",
    "TransformersOptions",
    "EndpointOptions",
    "VllmOptions",
    "PythonOptions",
    "PYTHON_JUDGE_ARGUMENTS",
    "CHAT_COMPLETIONS",
]

_KEY = "reward.arena.judge"
# judge.callable: a dotted module path, a colon, a function name.
_CALLABLE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)
# Keyword arguments the python backend passes itself: callable_kwargs may not name them.
PYTHON_JUDGE_ARGUMENTS = ("problem", "first", "second", "trace")


@dataclass(frozen=True)
class SimulatedOptions(Part):
    """The SIMULATED judge (tests, benchmarks, the CPU demo): :mod:`arena_verl.judge.simulated.law`."""

    PREFIX = _KEY
    sim_sharpness: float = setting(1.0, help="SIMULATED judge only: verdict sharpness")
    sim_position_bias: float = setting(0.0, help="SIMULATED judge only: first-position bonus (logits)")
    sim_tie_rate: float = setting(0.0, low=0.0, high=1.0, help="SIMULATED judge only: share of ties")
    sim_parse_failure_rate: float = setting(
        0.0, low=0.0, high=1.0, help="SIMULATED judge only: share of calls without a verdict"
    )
    sim_latency_s: float = setting(0.0, low=0.0, high=3600.0, help="SIMULATED judge only: mean seconds per call")
    sim_latency_sigma: float = setting(
        0.0,
        low=0.0,
        high=3.0,
        help="SIMULATED judge only: 0 = exponential call latency of mean `sim_latency_s`; > 0 = log-normal with "
        "this sigma of the log and the same mean",
    )


_MODEL_PATH_HELP = (
    "transformers / vllm: model folder; openai: the served model's name (`base_url: verl`: verl's "
    "`reward_model.model_path`)"
)


@dataclass(frozen=True)
class TransformersOptions(Part):
    PREFIX = _KEY
    model_path: str | None = setting(None, help=_MODEL_PATH_HELP)
    device: str = setting("cpu", help="transformers device")
    dtype: str = setting("auto", help="model dtype (transformers, vllm)")


@dataclass(frozen=True)
class EndpointOptions(Part):
    """A served OpenAI-compatible chat endpoint (vllm serve, SGLang, a hosted API, verl's reward-model router)."""

    PREFIX = _KEY
    model_path: str | None = setting(None, help=_MODEL_PATH_HELP)
    base_url: str | None = setting(
        None,
        help="openai: the endpoint (`.../v1`); several replicas comma-separated or as a list (every call of a group "
        "to one replica, [judge replicas](judges.md#judge-replicas); a replica is its request URL, so "
        "`http://h:8000` and `http://h:8000/v1` listed together are refused as one replica twice); or `verl` for "
        "the judge verl serves itself",
    )
    base_url_file: str | None = setting(
        None,
        help="openai: a file of endpoints, one a line (blank lines and `#` comments skipped; the Slurm launcher's "
        "URL file), read at start and again after a failed request; the recipes set it from `JUDGE_URL_FILE`",
    )
    api_key_env: str = setting("OPENAI_API_KEY", help="openai: the environment variable holding the API key")
    tokenizer: str | None = setting(
        None,
        help="openai: the tokenizer that counts `max_trace_tokens` (a folder or hub id; one that cannot be loaded "
        "is an error at start-up); null: `model_path`'s when it is a local folder, else UTF-8 bytes, with a warning",
    )

    def rules(self) -> None:
        if self.base_url_file is not None and not self.base_url_file.strip():
            raise ValueError(f"{_KEY}.base_url_file must be a file path or null; got ''")
        if self.tokenizer is not None and not self.tokenizer.strip():
            raise ValueError(f"{_KEY}.tokenizer must be a tokenizer folder or hub id, or null; got ''")


@dataclass(frozen=True)
class VllmOptions(Part):
    PREFIX = _KEY
    model_path: str | None = setting(None, help=_MODEL_PATH_HELP)
    dtype: str = setting("auto", help="model dtype (transformers, vllm)")
    num_engines: int = setting(1, low=1, help="vllm: engines in Ray actors")
    tensor_parallel_size: int = setting(1, low=1, help="vllm: GPUs per engine")
    gpu_memory_utilization: float = setting(0.85, low=0.0, high=1.0, low_open=True, help="vllm engine setting")
    max_model_len: int | None = setting(None, low=1, help="vllm engine setting (null: the model's)")
    enable_prefix_caching: bool = setting(True, help="vllm engine setting")
    start_timeout_s: float = setting(
        3600.0,
        low=0.0,
        high=DAY_S,
        low_open=True,
        help="vllm: how long each engine may take to start (load the weights, compile, capture CUDA graphs) before "
        "its calls fail with an error that names this key; 3600 s as `scripts/slurm/judge_serve.sbatch`'s "
        "`JUDGE_START_TIMEOUT_S`: a 690 GB FP8 judge (DeepSeek-Math-V2) read at 300 MB/s from shared storage takes 38 "
        "minutes, at 1 GB/s 12, plus a few minutes of compiling and graph capture; raise it for slower storage or a "
        "larger judge. The first routed groups' calls wait for the start within their own budgets",
    )


@dataclass(frozen=True)
class PythonOptions(Part):
    """Your own function as the judge (:mod:`arena_verl.judge.backends.python_backend`)."""

    PREFIX = _KEY
    EXCLUSIVE = True  # its keys are refused with any other backend (a function that would never be called)
    callable: str | None = setting(
        None,
        help="python: your judge, `package.module:function` (importable where the referee runs), called with "
        "`problem` and `first`, `second` (or `trace`) as keyword arguments ([a Python judge]"
        "(judges.md#a-python-judge-bring-your-own)); required for `backend: python`, refused with any other",
    )
    callable_kwargs: dict[str, Any] | None = setting(
        None,
        help="python: further keyword arguments of `callable`, a mapping of plain values (null, bool, number, "
        "string; not `problem`, `first`, `second`, `trace`); refused with any other backend",
    )

    def rules(self) -> None:
        if self.callable is not None and (not isinstance(self.callable, str) or not _CALLABLE.fullmatch(self.callable)):
            raise ValueError(
                f"{_KEY}.callable must be 'package.module:function' (a dotted module path, a colon, a function "
                f"name), got {self.callable!r}"
            )
        kwargs, key = self.callable_kwargs, f"{_KEY}.callable_kwargs"
        if kwargs is None:
            return
        if not isinstance(kwargs, Mapping):
            raise ValueError(f"{key} must be a mapping of keyword arguments (or null), got {kwargs!r}")
        for name, value in kwargs.items():
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{key}: {name!r} is not a keyword-argument name")
            if name in PYTHON_JUDGE_ARGUMENTS:
                raise ValueError(
                    f"{key}.{name}: the python backend passes {', '.join(PYTHON_JUDGE_ARGUMENTS)} itself; choose "
                    "another name"
                )
            if not (value is None or isinstance(value, (bool, int, float, str))):
                raise ValueError(
                    f"{key}.{name} must be a plain value (null, a bool, a number or a string), got {value!r}"
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{key}.{name} must be a finite number, got {value!r}")


def check_endpoint(judge: Any) -> None:
    """A served judge's addresses: each an http(s) URL, no replica twice; a model name unless verl serves it."""
    options = judge.options
    if options.base_url and options.base_url != "verl":
        urls = split_urls(options.base_url)
        for url in urls:
            check_url(url, f"{_KEY}.base_url")
        if repeated := repeated_servers(urls, judge.request_path):
            raise ValueError(f"{_KEY}.base_url lists a replica twice: {repeated} in {options.base_url!r}")
    if options.base_url != "verl" and not options.model_path:
        raise ValueError(f"{_KEY}.model_path is required for the {judge.backend} backend (the served model's name)")


def _check_python(judge: Any) -> None:
    if not judge.options.callable:
        raise ValueError(
            f"{_KEY}.callable is required for the python backend ('package.module:function', e.g. "
            "'my_judges:prefer_shorter')"
        )
    if judge.show_reference:
        raise ValueError(
            f"{_KEY}.show_reference: the python backend never passes the reference answer to its callable; leave it "
            "false"
        )


_transformers, _vllm, _openai = (
    model_folder_grammar("transformers"),
    model_folder_grammar("vllm"),
    endpoint_grammar("openai"),
)
for _entry in (
    JudgeBackend(
        "simulated",
        options=SimulatedOptions,
        factory="arena_verl.judge.simulated.trace_judge:simulated_judge",
        spec_form="simulated",
        parse_spec=parse_simulated,
        format_spec=format_simulated,
        prompts=False,
        simulated=True,
    ),
    JudgeBackend(
        "transformers",
        options=TransformersOptions,
        factory="arena_verl.judge.backends.transformers_backend:TransformersJudge",
        spec_form="transformers:PATH",
        parse_spec=_transformers[0],
        format_spec=_transformers[1],
        model_folder=True,
        tokenizer="model_path",
    ),
    JudgeBackend(
        "openai",
        options=EndpointOptions,
        factory="arena_verl.judge.backends.openai_backend:OpenAIJudge",
        spec_form="openai:URL#MODEL",
        parse_spec=_openai[0],
        format_spec=_openai[1],
        validate=check_endpoint,
        needs_url=True,
        verl_router=True,
        request_path=CHAT_COMPLETIONS,
        probe="arena_verl.judge.probe:main",
        tokenizer="tokenizer",
    ),
    JudgeBackend(
        "vllm",
        options=VllmOptions,
        factory="arena_verl.judge.backends.vllm_backend:VLLMJudge",
        spec_form="vllm:PATH",
        parse_spec=_vllm[0],
        format_spec=_vllm[1],
        model_folder=True,
        tokenizer="model_path",
        gpu_engines=True,
    ),
    JudgeBackend(
        "python",
        options=PythonOptions,
        factory="arena_verl.judge.backends.python_backend:PythonJudge",
        spec_form="python:MODULE:FUNCTION",
        parse_spec=parse_python,
        format_spec=format_python,
        validate=_check_python,
        preflight="arena_verl.judge.backends.python_backend:check_callable",
        prompts=False,
        retries=False,
        label_probabilities=False,
    ),
):
    register(_entry)
del _entry
