"""The image's `pip check` is of what the image adds (docker/pip_check.py), not of the whole base image: verl's image
ships packages with pins of their own (Apex, TransformerEngine, Megatron-Bridge, DeepEP) that a plain `pip check`
may already find unmet, and any such inconsistency failed the build. Hand-made `pip list --format=freeze` and
`pip check` fixtures (no Docker engine, no base image here)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from helpers import paths

DOCKER = paths.REPO / "docker"
_spec = importlib.util.spec_from_file_location("docker_pip_check", DOCKER / "pip_check.py")
pip_check = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pip_check  # its dataclass looks its module up
_spec.loader.exec_module(pip_check)

BASE_FREEZE = """\
apex==0.1
deep_ep==1.2.1
megatron-bridge==0.2.0
megatron-core==0.15.0
numpy==2.3.1
nvidia-nccl-cu13==2.29.2
tensordict==0.9.1
torch==2.11.0+cu130
transformer_engine==2.8.0
transformers==5.3.0
TransferQueue==0.1.8
vllm==0.24.0
"""
# What the base image already has wrong: none of it is this image's doing.
BASE_CHECK = """\
transformer-engine 2.8.0 has requirement torch<2.11, but you have torch 2.11.0+cu130.
megatron-bridge 0.2.0 has requirement transformers<5.0, but you have transformers 5.3.0.
deep-ep 1.2.1 requires nvshmem, which is not installed.
apex 0.1 is not supported on this platform
"""
AFTER_FREEZE = """\
apex==0.1
arena-verl==0.1.0
deep_ep==1.2.1
math-verify==0.9.0
megatron-bridge==0.2.0
megatron-core==0.15.0
nvidia-nccl-cu13==2.28.9
tensordict==0.10.0
torch==2.11.0+cu130
transformer_engine==2.8.0
transformers==5.9.0
TransferQueue==0.1.11
verl==0.9.1
numpy==2.3.1
vllm==0.24.0
"""
INHERITED = [
    "transformer-engine 2.8.0 has requirement torch<2.11, but you have torch 2.11.0+cu130.",
    # transformers moved (5.3.0 -> 5.9.0), but megatron-bridge's pin on it was unmet in the base already
    "megatron-bridge 0.2.0 has requirement transformers<5.0, but you have transformers 5.9.0.",
    "deep-ep 1.2.1 requires nvshmem, which is not installed.",
    "apex 0.1 is not supported on this platform",
]
OURS = [
    "verl 0.9.1 has requirement numpy<2.3, but you have numpy 2.3.1.",  # what this image installs needs it
    "arena-verl 0.1.0 requires math-verify, which is not installed.",
    # a base package that was fine, broken by an upgrade of ours (nvidia-nccl-cu13 moved back to torch's pin)
    "vllm 0.24.0 has requirement nvidia-nccl-cu13>=2.29, but you have nvidia-nccl-cu13 2.28.9.",
    "tensordict 0.10.0 is not supported on this platform",  # tensordict is ours to install now
]


def split(check_text: str):
    base, now = pip_check.parse_freeze(BASE_FREEZE), pip_check.parse_freeze(AFTER_FREEZE)
    ours, inherited = pip_check.split_problems(pip_check.parse_check(check_text), base, now,
                                               pip_check.parse_check(BASE_CHECK))  # fmt: skip
    return [p.line for p in ours], [p.line for p in inherited]


def test_the_base_images_own_problems_are_notes_and_what_the_image_brings_fails():
    ours, inherited = split("\n".join(INHERITED + OURS) + "\n")
    assert inherited == INHERITED
    assert ours == OURS


def test_a_base_that_only_has_its_own_problems_passes(tmp_path, monkeypatch, capsys):
    """The whole flow (snapshot, then check), pip replaced by the fixtures: the old rule, a plain `pip check` over
    the whole image, would have failed here."""
    outputs = {("list", "--format=freeze"): BASE_FREEZE, ("check",): BASE_CHECK}

    def fake_pip(*args):
        return type("Done", (), {"returncode": 0, "stdout": outputs[args], "stderr": ""})()

    monkeypatch.setattr(pip_check, "_pip", fake_pip)
    assert pip_check.main(["snapshot", str(tmp_path)]) == 0
    assert (tmp_path / "base-freeze.txt").read_text() == BASE_FREEZE
    outputs.update({("list", "--format=freeze"): AFTER_FREEZE, ("check",): "\n".join(INHERITED) + "\n"})
    assert pip_check.main(["check", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("note: the base image's own") == 4 and "(4 problem(s) of the base image's own)" in out
    outputs[("check",)] = "\n".join(INHERITED + OURS[:1]) + "\n"
    assert pip_check.main(["check", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"error: {OURS[0]}" in err and "1 broken requirement(s) from what this image installs" in err


def test_names_are_compared_as_pip_does_and_unknown_lines_are_never_dropped():
    assert pip_check.normalise("Transformer_Engine") == pip_check.normalise("transformer-engine")
    assert pip_check.parse_freeze("deep_ep==1.2.1\n# comment\n-e git+x\nfoo @ file:///foo.whl\n") == {
        "deep-ep": "1.2.1",
        "foo": "file:///foo.whl",
    }
    assert pip_check.parse_check("No broken requirements found.\n") == []
    ours, _ = split("something pip has never said before\n")
    assert ours == ["something pip has never said before"]  # counted as a problem of this image, not skipped


def test_a_missing_snapshot_is_a_usage_error(tmp_path):
    assert pip_check.main(["check", str(tmp_path / "none")]) == 2
    assert pip_check.main(["verify", str(tmp_path)]) == 2


@pytest.mark.parametrize("name", ["Dockerfile", "build_and_smoke.sh"])
def test_the_image_checks_what_it_adds_not_the_whole_base(name):
    text = (DOCKER / name).read_text()
    assert "python3 -m pip check" not in text
    assert "pip_check.py check /usr/local/share/arena-verl" in text
    if name == "Dockerfile":  # the base is recorded before anything is installed
        assert text.index("pip_check.py snapshot") < text.index("pip install")
