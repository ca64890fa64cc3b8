"""The documentation stays true to the code: the config reference (docs/config.md) and the yaml that declares the
defaults for verl are written from the settings' declarations (not stale); the README stays short; every relative
link, repository path, ``python -m arena_verl.X`` module and ``arena-verl`` command the README and docs/ mention
exists; the index docs/README.md lists every page."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import yaml

from arena_verl.backend_registry import BACKENDS
from arena_verl.settings import ArenaSettings, settings_leaves
from arena_verl.tools import config_docs
from arena_verl.tools.cli import COMMANDS
from helpers import paths

README = paths.REPO / "README.md"
DOCS = paths.REPO / "docs"
MAX_README_LINES = 320


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def relative(path: Path) -> str:
    try:
        return str(path.relative_to(paths.REPO))
    except ValueError:  # a page outside the repository (the tests of the checks themselves)
        return path.name


# --- the config reference --------------------------------------------------------------------------------------------


def test_the_config_reference_and_the_yaml_are_written_from_the_settings_declarations():
    """Run `arena-verl config-docs` after changing a key's declaration (its default, range or help)."""
    assert config_docs.stale_files() == []


def test_a_changed_declaration_makes_them_stale(monkeypatch):
    from arena_verl.core.options import TournamentOptions

    field = TournamentOptions.__dataclass_fields__["l2"]
    monkeypatch.setattr(field, "default", 0.2)
    assert config_docs.stale_files() == [config_docs.DEFAULTS_YAML, config_docs.CONFIG_DOC]
    assert "    l2: 0.2  # Bradley-Terry" in config_docs.render_yaml()


def test_every_key_the_reader_accepts_is_in_the_yaml_and_the_tables():
    arena = yaml.safe_load(config_docs.render_yaml())["reward"]["arena"]
    tables = config_docs.render_tables()
    settings = settings_leaves(ArenaSettings())
    for key in settings:
        *parents, name = key.split(".")
        node = arena
        for part in parents:
            node = node[part]
        assert name in node, key
        assert f"| `{name}` |" in tables, key
    built_in = [entry.options for entry in BACKENDS.values() if entry.options.__module__.startswith("arena_verl.")]
    for options in built_in:  # every built-in backend's own keys, at their defaults
        for f in dataclasses.fields(options):
            assert f.name in arena["judge"] and f"| `{f.name}` |" in tables, f.name


# --- the README and the links ----------------------------------------------------------------------------------------


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move reference material into docs/"


_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file (lower case, punctuation dropped, spaces as hyphens)."""
    seen: dict[str, int] = {}
    found = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{relative(path)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{relative(path)}: {target} (no heading #{anchor} in {relative(linked)})")
    return broken


def test_every_relative_link_points_to_a_file_and_heading_that_exist():
    broken = [b for path in doc_files() for b in broken_links(path)]
    assert not broken, "\n".join(broken)


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n[a](page.md#title) [b](missing.md) [c](#nowhere) [d](https://example.org)\n")
    assert broken_links(page) == [
        "page.md: missing.md (no such file)",
        "page.md: #nowhere (no heading #nowhere in page.md)",
    ]


# --- what the docs name exists ---------------------------------------------------------------------------------------

_PYTHON_M = re.compile(r"python -m\s+(arena_verl(?:\.\w+)*)")
_REPO_PATH = re.compile(r"`((?:arena_verl|tests|scripts|recipes|configs|docker|docs)/[^`\s]*)`")
_COMMAND = re.compile(r"(?:`|^\s*)arena-verl ([a-z][a-z_-]*)", re.MULTILINE)


def test_every_python_m_module_exists():
    missing = [
        f"{relative(path)}: python -m {module}"
        for path in doc_files()
        for module in _PYTHON_M.findall(path.read_text(encoding="utf-8"))
        if importlib.util.find_spec(module) is None
    ]
    assert not missing, "\n".join(missing)


def test_every_repository_path_named_in_code_exists():
    """`arena_verl/core/sources.py`, `tests/unit/...`, `recipes/cpu_smoke.sh`: a module (with or without .py), a
    file or a folder. Patterns (`recipes/<experiment>.sh`, `configs/*.yaml`) are left out."""
    missing = []
    for path in doc_files():
        for named in _REPO_PATH.findall(path.read_text(encoding="utf-8")):
            if any(c in named for c in "<*{$"):
                continue
            target = paths.REPO / named.rstrip("/")
            if not (target.exists() or target.with_suffix(".py").exists()):
                missing.append(f"{relative(path)}: {named}")
    assert not missing, "\n".join(missing)


def test_every_arena_verl_command_exists():
    unknown = [
        f"{relative(path)}: arena-verl {command}"
        for path in doc_files()
        for command in _COMMAND.findall(path.read_text(encoding="utf-8"))
        if command not in COMMANDS
    ]
    assert not unknown, "\n".join(unknown)


def test_the_index_lists_every_page():
    index = DOCS / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in _LINK.findall(index.read_text())}
    pages = [p for p in sorted(DOCS.rglob("*.md")) if p != index]
    unlisted = [relative(p) for p in pages if p.resolve() not in linked]
    assert not unlisted, f"docs/README.md does not link: {unlisted}"
