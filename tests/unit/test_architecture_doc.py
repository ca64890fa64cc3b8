"""docs/architecture.md is checked against the tree: every path it names exists (the table of where old modules went
names the old ones on purpose: only its right-hand column is checked), every package folder of ``arena_verl`` is
described in the module map, and every module the map lists under a folder is in that folder."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "arena_verl"
DOC = REPO / "docs" / "architecture.md"
OLD_MODULES_HEADING = "## Where the old modules went"


def module_map(text: str) -> dict[str, str]:
    """``{"arena_verl/judge/": "its description ...", ...}`` from the code block under ``## Module map``."""
    block = text.split("## Module map", 1)[1].split("```", 2)[1]
    entries, current = {}, None
    for line in block.splitlines():
        if line and not line[0].isspace():
            current, _, rest = line.partition(" ")
            entries[current] = rest
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def named_paths(text: str) -> list[str]:
    """Backticked repository paths (``arena_verl/...``, ``judge/x.py`` style paths inside the package), outside the
    old-modules table's left column."""
    kept = []
    for line in text.splitlines():
        if line.startswith(OLD_MODULES_HEADING):
            break
        kept.append(line)
    tail = text.split(OLD_MODULES_HEADING, 1)[1] if OLD_MODULES_HEADING in text else ""
    kept += [row.split("|")[2] for row in tail.splitlines() if row.startswith("|") and row.count("|") >= 3]
    found = re.findall(r"`([A-Za-z_][\w./-]*(?:\.py|/))`", "\n".join(kept))
    return sorted({p for p in found if "/" in p})


def exists(path: str) -> bool:
    candidates = [REPO / path, PACKAGE / path]
    return any(c.exists() for c in candidates)


def package_folders(root: Path = PACKAGE) -> list[str]:
    return sorted(
        str(p.parent.relative_to(root.parent)) + "/" for p in root.rglob("__init__.py") if "__pycache__" not in p.parts
    )


def undescribed(entries: dict[str, str], folders: list[str]) -> list[str]:
    """Package folders without an entry of their own and not named (``name/``) in their nearest ancestor's entry."""
    missing = []
    for folder in folders:
        if folder in entries or folder == "arena_verl/":
            continue
        parts = folder.rstrip("/").split("/")
        ancestors = ["/".join(parts[:i]) + "/" for i in range(len(parts) - 1, 0, -1)]
        owner = next((a for a in ancestors if a in entries), None)
        if owner is None or not re.search(rf"(?<![\w-]){re.escape(parts[-1])}/", entries[owner]):
            missing.append(folder)
    return missing


def misplaced_modules(entries: dict[str, str]) -> list[str]:
    wrong = []
    for entry, description in entries.items():
        if not entry.startswith("arena_verl/"):
            continue
        folder = REPO / entry
        if entry.endswith(".py"):
            if not folder.is_file():
                wrong.append(entry)
            continue
        for module in re.findall(r"(?<![\w./`-])([a-z_][a-z0-9_]*\.py)\b", description):
            if not any(folder.rglob(module)):
                wrong.append(f"{entry} {module}")
    return wrong


def test_every_path_the_architecture_names_exists():
    assert [p for p in named_paths(DOC.read_text(encoding="utf-8")) if not exists(p)] == []


def test_every_package_folder_is_in_the_module_map():
    assert undescribed(module_map(DOC.read_text(encoding="utf-8")), package_folders()) == []


def test_every_module_the_map_lists_is_in_its_folder():
    assert misplaced_modules(module_map(DOC.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ("## Module map\n\n```\narena_verl/core/   nothing.py\n```\n", "misplaced"),
        ("## Module map\n\n```\narena_verl/core/   names.py\n```\n", "undescribed"),
        ("See `arena_verl/no_such_module.py`.\n", "missing"),
    ],
)
def test_the_checks_can_fail(doc, problem):
    if problem == "misplaced":
        assert misplaced_modules(module_map(doc)) == ["arena_verl/core/ nothing.py"]
    elif problem == "undescribed":
        assert "arena_verl/judge/" in undescribed(module_map(doc), package_folders())
    else:
        assert named_paths(doc) == ["arena_verl/no_such_module.py"] and not exists("arena_verl/no_such_module.py")
