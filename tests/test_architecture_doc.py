"""docs/architecture.md names every production module's room, so the map cannot go stale: each module under
evaluator/, leaderboard/, pkb_client/ and problems/ has a row in the doc's tables of rooms ("Every module's room"),
and every module such a row names exists.

A row of those tables reads ``| `directory/` | `module.py`, `other.py` | what they do |``; an empty first cell is the
row above's directory. A module is named when a row of its own directory names its file in backticks; a name may be
a pattern (``pNN_<stem>.py``: ``NN`` two digits, ``<...>`` anything, ``**/`` any folders below). Not modules of
their own: a package's ``__init__.py`` that holds only a docstring, migrations (the tables' history), and
leaderboard/demo/ (candidate files the demo judges, named as a group). A failure names each module left out, or each
stale name with its row."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("evaluator", "leaderboard", "pkb_client", "problems")
NOT_MODULES = ("migrations", "__pycache__")
GROUPS = ("leaderboard/demo/",)  # named as a whole, each file a candidate rather than a module
# A rooms row: a first cell that is empty or a directory of one of the packages, in backticks.
ROW = re.compile(r"^\|\s*(`(?:evaluator|leaderboard|pkb_client|problems)(?:/[\w./]*)?/`)?\s*\|(.*)\|\s*$")
NAME = re.compile(r"`([^`\s]+\.py)`")


def _only_a_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def production_modules(root: Path = ROOT) -> list[str]:
    """Every module of the four packages, as a path relative to ``root``."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if set(path.relative_to(root).parts) & set(NOT_MODULES) or rel.startswith(GROUPS):
                continue
            if path.name == "__init__.py" and _only_a_docstring(path):
                continue
            found.append(rel)
    return found


def rooms(text: str) -> list[tuple[int, str, list[str]]]:
    """(line, directory, names) of each rooms row; a row with an empty first cell keeps the previous directory."""
    out: list[tuple[int, str, list[str]]] = []
    directory = None
    for line_no, line in enumerate(text.splitlines(), 1):
        match = ROW.match(line)
        if not match:
            directory = None  # a table's end: an empty first cell never reaches into the next table
            continue
        if match.group(1):
            directory = match.group(1).strip("`")
        if directory is not None:
            out.append((line_no, directory, NAME.findall(match.group(2))))
    return out


def _glob(name: str) -> str:
    return re.sub(r"<[^<>]*>", "*", name).replace("NN", "[0-9][0-9]")


def _named(module: str, rows: list[tuple[int, str, list[str]]]) -> bool:
    directory, _, filename = module.rpartition("/")
    return any(
        fnmatch.fnmatchcase(filename, _glob(name))
        for _, where, names in rows
        if where == directory + "/"
        for name in names
    )


def unnamed(modules: list[str], text: str) -> list[str]:
    rows = rooms(text)
    return [module for module in modules if not _named(module, rows)]


def stale(text: str, root: Path = ROOT) -> list[str]:
    """Each name of a rooms row that matches no file of its directory."""
    found = []
    for line_no, directory, names in rooms(text):
        found += [
            f"docs/architecture.md:{line_no}: {directory}{name}"
            for name in names
            if not any((root / directory).glob(_glob(name)))
        ]
    return found


def test_every_production_module_is_named_in_the_architecture_doc():
    modules = production_modules()
    assert "evaluator/contract/requests.py" in modules and "problems/__init__.py" in modules and len(modules) > 150
    missing = unnamed(modules, DOC.read_text())
    assert not missing, (
        "modules docs/architecture.md does not name (add a row in 'Every module's room'):\n" + "\n".join(missing)
    )


def test_every_module_the_rooms_name_exists():
    gone = stale(DOC.read_text())
    assert not gone, "rooms naming no module (moved or removed: name where it is now):\n" + "\n".join(gone)


def test_the_check_tells_named_modules_from_unnamed_ones(tmp_path):
    for rel in (
        "evaluator/process/boxes.py",
        "evaluator/process/cgroups.py",
        "evaluator/judge/__init__.py",
        "evaluator/rank/__init__.py",
        "problems/p01_allreduce.py",
        "problems/base.py",
        "leaderboard/demo/broken/1_allreduce_torch.py",
        "leaderboard/migrations/0001_initial.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('"""A docstring."""\n' + ("x = 1\n" if rel.endswith("judge/__init__.py") else ""))
    modules = production_modules(tmp_path)
    assert modules == [
        "evaluator/judge/__init__.py",
        "evaluator/process/boxes.py",
        "evaluator/process/cgroups.py",
        "problems/base.py",
        "problems/p01_allreduce.py",
    ]
    doc = (
        "| directory | modules | room |\n| --- | --- | --- |\n"
        "| `evaluator/process/` | `boxes.py` | box ids |\n"
        "| | `gone.py` | stale |\n"
        "| `problems/` | `pNN_<stem>.py` | the workloads |\n"
        "\n| `evaluator/judge/` | `__init__.py` |\n"
        "elsewhere `cgroups.py` and `base.py` name nothing: not in a row of their directory\n"
    )
    assert unnamed(modules, doc) == ["evaluator/process/cgroups.py", "problems/base.py"]
    assert stale(doc, tmp_path) == ["docs/architecture.md:4: evaluator/process/gone.py"]
