"""The judge package in rooms (backends, prompting, verdicts, the simulated judge, the shipped Python judges), at most
ten modules directly in ``judge/``, every import from the module that defines the name (no re-exporting shim modules
anywhere in the package), and the light modules stay light (a reward worker that only reads templates does not
import the numerical backends)."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import arena_verl
from arena_verl.judge.prompting import hygiene, messages, templates

PACKAGE = Path(arena_verl.__file__).resolve().parent
ROOMS = ("backends", "prompting", "verdicts", "simulated", "programs")


def test_the_judge_package_is_in_rooms():
    judge = PACKAGE / "judge"
    assert len(list(judge.glob("*.py"))) <= 10, sorted(p.name for p in judge.glob("*.py"))
    for room in ROOMS:
        assert (judge / room / "__init__.py").is_file(), room
    for shim in ("arena_verl.judge.base", "arena_verl.judge.prompts"):
        assert importlib.util.find_spec(shim) is None, shim


def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "arena_verl":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None  # a package (its __init__ is a documented facade) or not ours


def _defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names.add(leaf.id)
        elif isinstance(node, (ast.If, ast.Try)):  # a conditional definition still defines
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    names.add(inner.name)
                elif isinstance(inner, ast.Assign):
                    names.update(leaf.id for t in inner.targets for leaf in ast.walk(t) if isinstance(leaf, ast.Name))
    return names


def reexported_imports(root: Path) -> list[str]:
    """``from arena_verl.a.b import name`` where ``a/b.py`` does not define ``name`` (it imported it): a shim."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            target = _module_file(node.module)
            if target is None:
                continue
            defined = _defined_names(target)
            for alias in node.names:
                submodule = target.with_suffix("") / f"{alias.name}.py"
                if alias.name != "*" and alias.name not in defined and not submodule.is_file():
                    found.append(f"{path.relative_to(root.parent)}: {alias.name} from {node.module}")
    return found


def test_every_import_comes_from_the_module_that_defines_the_name():
    assert reexported_imports(PACKAGE) == []


def test_the_shim_check_can_fail(tmp_path, monkeypatch):
    package = tmp_path / "arena_verl"
    package.mkdir()
    (package / "owner.py").write_text("def f():\n    pass\n")
    (package / "shim.py").write_text("from arena_verl.owner import f\n")
    (package / "user.py").write_text("from arena_verl.shim import f\nfrom arena_verl.owner import f\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert reexported_imports(package) == ["arena_verl/user.py: f from arena_verl.shim"]


def test_the_package_facade_still_answers():
    from arena_verl.judge import build_pairwise_messages, parse_verdict, sanitize_trace

    assert build_pairwise_messages is messages.build_pairwise_messages and sanitize_trace is hygiene.sanitize_trace
    assert parse_verdict("...\n[[A]]") == "A"


def test_templates_are_package_data_next_to_the_module():
    assert templates.TEMPLATE_DIR == PACKAGE / "judge" / "prompting" / "templates"
    for name in templates.TEMPLATES:
        assert "{tag}" in templates.load_template(name)


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


@pytest.mark.parametrize(
    "statement",
    ["import arena_verl.judge", "import arena_verl.judge.prompting.templates",
     "import arena_verl.judge.verdicts.parsing", "from arena_verl.judge import build_pairwise_messages, parse_verdict"],
)  # fmt: skip
def test_light_judge_modules_import_no_numerical_backend(statement):
    loaded = loaded_after(statement)
    heavy = {m for m in loaded if m.split(".")[0] in ("numpy", "scipy", "torch", "ray", "transformers", "openai")}
    backends = {m for m in loaded if m.startswith(("arena_verl.judge.simulated.", "arena_verl.judge.backends."))}
    assert not heavy and not backends, sorted(heavy | backends)


@pytest.mark.parametrize("folder", ["judge", "verify"])
def test_no_module_of_the_judge_or_verifier_holds_several_jobs_worth_of_lines(folder):
    paths = (PACKAGE / folder).rglob("*.py")
    lengths = {str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines()) for path in paths}
    assert lengths and max(lengths.values()) <= 450, lengths
