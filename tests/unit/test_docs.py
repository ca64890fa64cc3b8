"""The documentation stays true to the code: the config reference (docs/config.md) agrees with the settings
dataclasses and the yaml that declares the defaults for verl; the README stays short; every relative link, repository
path, ``python -m arena_verl.X`` module and ``arena-verl`` command the README and docs/ mention exists; the index
docs/README.md lists every page."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import yaml

from arena_verl.settings import ArenaSettings, JudgeSettings
from arena_verl.tools.cli import COMMANDS
from helpers import paths

README = paths.REPO / "README.md"
DOCS = paths.REPO / "docs"
CONFIG_DOC = DOCS / "config.md"
DEFAULTS_YAML = paths.CONFIGS / "arena_manager" / "default.yaml"
MAX_README_LINES = 320


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def relative(path: Path) -> str:
    try:
        return str(path.relative_to(paths.REPO))
    except ValueError:  # a page outside the repository (the tests of the checks themselves)
        return path.name


# --- the config reference --------------------------------------------------------------------------------------------

_SECTION = re.compile(r"^## `(reward\.arena(?:\.judge)?)\.\*`\s*$")
_ROW = re.compile(r"^\|\s*`([a-z_0-9]+)`\s*\|\s*`([^`]*)`\s*\|")


def documented_defaults(text: str) -> dict[str, object]:
    """``{"reward.arena.l2": 0.1, ...}`` from the tables under the ``## `reward.arena.*``` headings (yaml literals)."""
    found: dict[str, object] = {}
    prefix = None
    for line in text.splitlines():
        heading = _SECTION.match(line)
        if heading:
            prefix = heading.group(1)
        elif line.startswith("#"):
            prefix = None
        elif prefix and (row := _ROW.match(line)):
            key = f"{prefix}.{row.group(1)}"
            if key in found:
                raise AssertionError(f"{relative(CONFIG_DOC)} lists {key} twice")
            found[key] = yaml.safe_load(row.group(2))
    return found


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def dataclass_defaults() -> dict[str, object]:
    found = {}
    for prefix, cls in (("reward.arena", ArenaSettings), ("reward.arena.judge", JudgeSettings)):
        for f in dataclasses.fields(cls):
            if f.name == "judge":  # the nested JudgeSettings, listed key by key
                continue
            found[f"{prefix}.{f.name}"] = _plain(f.default)
    return found


def yaml_defaults() -> dict[str, object]:
    arena = yaml.safe_load(DEFAULTS_YAML.read_text(encoding="utf-8"))["reward"]["arena"]
    found = {f"reward.arena.{k}": v for k, v in arena.items() if k != "judge"}
    found.update({f"reward.arena.judge.{k}": v for k, v in arena["judge"].items()})
    return found


def same(a: object, b: object) -> bool:
    """Equal as config values: 900 and 900.0 are the same number, but true is not 1 and "1e-6" is not 1e-6."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def config_disagreements(sources: dict[str, dict[str, object]]) -> list[str]:
    """One line per key that is missing from a source or whose default differs between sources."""
    problems = []
    for key in sorted(set().union(*sources.values())):
        missing = [name for name, values in sources.items() if key not in values]
        if missing:
            problems.append(f"{key}: missing from {', '.join(missing)}")
            continue
        values = {name: values[key] for name, values in sources.items()}
        first = next(iter(values.values()))
        if not all(same(first, v) for v in values.values()):
            problems.append(f"{key}: defaults differ: " + ", ".join(f"{name} says {v!r}" for name, v in values.items()))
    return problems


def config_sources(doc_text: str | None = None) -> dict[str, dict[str, object]]:
    text = CONFIG_DOC.read_text(encoding="utf-8") if doc_text is None else doc_text
    return {
        relative(CONFIG_DOC): documented_defaults(text),
        "the settings dataclasses": dataclass_defaults(),
        relative(DEFAULTS_YAML): yaml_defaults(),
    }


def test_the_config_reference_the_dataclasses_and_the_yaml_agree():
    sources = config_sources()
    assert len(sources[relative(CONFIG_DOC)]) > 50  # the tables were found
    problems = config_disagreements(sources)
    assert not problems, "\n".join(problems)


def test_a_default_that_differs_is_named():
    text = CONFIG_DOC.read_text(encoding="utf-8").replace("| `l2` | `0.1` |", "| `l2` | `0.2` |")
    problems = config_disagreements(config_sources(text))
    assert problems == [
        "reward.arena.l2: defaults differ: docs/config.md says 0.2, the settings dataclasses says 0.1, "
        "configs/arena_manager/default.yaml says 0.1"
    ]


def test_a_key_left_out_of_the_docs_is_named():
    text = CONFIG_DOC.read_text(encoding="utf-8").replace("| `sim_tie_rate` | `0.0` |", "| sim_tie_rate | 0.0 |")
    problems = config_disagreements(config_sources(text))
    assert problems == ["reward.arena.judge.sim_tie_rate: missing from docs/config.md"]


def test_a_boolean_is_not_a_number():
    assert not same(True, 1) and not same("1e-6", 1e-6) and same(900, 900.0) and same(["a"], ["a"])


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
