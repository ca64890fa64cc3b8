"""Fixtures of the real-vLLM tests: one toy model and one `vllm serve` of it per session."""

import pytest

from arena_verl.testing.toy import build_toy_model
from helpers.vllm_server import vllm_serve


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    return str(build_toy_model(tmp_path_factory.mktemp("toy-vllm")))


@pytest.fixture(scope="session")
def server(toy_model, tmp_path_factory):
    """The address of `vllm serve` of the toy model, served as ``judge`` behind ``helpers.vllm_server.KEY``."""
    with vllm_serve(toy_model, tmp_path_factory.mktemp("served-judge") / "vllm_serve.log") as url:
        yield url
