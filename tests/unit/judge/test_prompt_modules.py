"""The judge prompts are split into modules with one job each; the old import paths keep every name, and the light
modules stay light (a reward worker that only reads templates does not import the numerical backends)."""

import subprocess
import sys
from pathlib import Path

import pytest

import arena_verl
from arena_verl.judge import budget, hygiene, messages, prompts, templates

PACKAGE = Path(arena_verl.__file__).resolve().parent

# Every name imported from arena_verl.judge.prompts somewhere in the repository, and the module that owns it.
OWNERS = {
    "build_pairwise_messages": messages,
    "build_pointwise_messages": messages,
    "sanitize_trace": hygiene,
    "special_token_strings": hygiene,
    "new_delimiter": hygiene,
    "EMPTY": hygiene,
    "truncate_middle": budget,
    "approx_tokens": budget,
    "load_template": templates,
    "TEMPLATES": templates,
    "TEMPLATE_DIR": templates,
    "task_of": templates,
    "check_judge_templates": templates,
}


@pytest.mark.parametrize("name", sorted(OWNERS))
def test_the_old_path_re_exports_each_name_from_its_module(name):
    assert getattr(prompts, name) is getattr(OWNERS[name], name)
    assert name in prompts.__all__


def test_the_package_facade_still_answers():
    from arena_verl.judge import build_pairwise_messages, parse_verdict, sanitize_trace

    assert build_pairwise_messages is messages.build_pairwise_messages and sanitize_trace is hygiene.sanitize_trace
    assert parse_verdict("...\n[[A]]") == "A"


def test_templates_are_package_data_next_to_the_module():
    assert templates.TEMPLATE_DIR == PACKAGE / "judge" / "templates"
    for name in templates.TEMPLATES:
        assert "{tag}" in templates.load_template(name)


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


@pytest.mark.parametrize(
    "statement",
    ["import arena_verl.judge", "import arena_verl.judge.templates", "import arena_verl.judge.prompts",
     "from arena_verl.judge import build_pairwise_messages, parse_verdict"],
)  # fmt: skip
def test_light_judge_modules_import_no_numerical_backend(statement):
    loaded = loaded_after(statement)
    heavy = {m for m in loaded if m.split(".")[0] in ("numpy", "scipy", "torch", "ray", "transformers", "openai")}
    backends = {m for m in loaded if m.startswith(("arena_verl.judge.simulated", "arena_verl.judge.vllm"))}
    assert not heavy and not backends, sorted(heavy | backends)


@pytest.mark.parametrize("folder", ["judge", "verify"])
def test_no_module_of_the_judge_or_verifier_holds_several_jobs_worth_of_lines(folder):
    paths = (PACKAGE / folder).glob("*.py")
    lengths = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in paths}
    assert lengths and max(lengths.values()) <= 450, lengths
