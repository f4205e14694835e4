"""The images run what they ship. No Docker daemon here, so the Dockerfile is read: the tree its `source` stage
copies (COPY lines, minus .dockerignore) is built in a temporary directory, and the worker's, the build worker's, the
feedback worker's and the judge's entry modules are imported there, and `python -m evaluator.cli --help` run there,
by an interpreter that sees this environment's installed libraries but not this checkout (no editable install, no
current directory): a module the image lacks is a ModuleNotFoundError, as in the container."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
ENTRY_MODULES = (
    "evaluator.cli",
    "evaluator.serve",
    "evaluator.rank.worker",
    "leaderboard.jobs.actors",
    "leaderboard.jobs.build_stage",
    "leaderboard.feedback.worker",
    "leaderboard.wsgi",
)


def stages() -> dict[str, list[str]]:
    """Each stage's instructions, continuation lines joined."""
    found, current = {}, None
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head = re.match(r"FROM\s+\S+(?:\s+AS\s+(\S+))?", line, re.I)
        if head:
            current = head.group(1) or f"stage{len(found)}"
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return found


def ignored(rel: str, patterns: list[str]) -> bool:
    """.dockerignore's rule for a path (and so for everything under an ignored directory)."""
    parts = Path(rel).parts
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        for pattern in patterns:
            if fnmatch.fnmatch(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatch(parts[i - 1], pattern[3:])
            ):
                return True
    return False


def dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]
    assert not any(p.startswith("!") for p in patterns), "exceptions (!) are not read by this test"
    return patterns


def build_tree(target: str, into: Path) -> Path:
    """The files the `target` stage places at its WORKDIR: it copies the `source` stage's /src/, which holds what the
    source stage's COPY lines take from the build context (Docker's rules: a directory's contents into the
    destination, files into a destination ending in /), less what .dockerignore excludes."""
    all_stages, patterns = stages(), dockerignore()
    workdir = next(line.split()[1] for line in all_stages[target] if line.startswith("WORKDIR"))
    assert [c for c in all_stages[target] if c.startswith("COPY")] == [f"COPY --from=source /src/ {workdir}/"]
    for copy in (c for c in all_stages["source"] if c.startswith("COPY")):
        *sources, dest = copy.split()[1:]
        assert dest.startswith("/src/") or dest == "/src", copy
        base = into / dest.removeprefix("/src").strip("/")
        for src in sources:
            path = ROOT / src
            assert path.exists(), f"{copy}: {src} is not in the build context"
            pairs = (
                [(path, base / path.name if dest.endswith("/") else base)]
                if path.is_file()
                else [(file, base / file.relative_to(path)) for file in path.rglob("*") if file.is_file()]
            )
            for file, out in pairs:
                if ignored(file.relative_to(ROOT).as_posix(), patterns):
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, out)
    return into


@pytest.fixture(scope="module")
def worker_tree(tmp_path_factory):
    return build_tree("worker", tmp_path_factory.mktemp("image") / "srv")


def image_python(tree: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """`python -S` (no site hooks: the checkout's editable install is not found) with the installed libraries and the
    image's tree on the path, run in the tree."""
    paths = [str(tree), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(
        PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)),
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PKB_DATA_DIR=str(tree.parent / "data"),
        DJANGO_SECRET_KEY="image-test",
        PKB_ACTORS_NO_SETUP="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=str(tree), env=env, capture_output=True, text=True, timeout=timeout
    )


def test_both_targets_ship_the_same_tree_and_the_web_has_no_cuda_base():
    all_stages = stages()
    assert {"source", "web", "worker"} <= set(all_stages)
    text = (ROOT / "Dockerfile").read_text()
    bases = dict((m.group(2), m.group(1)) for m in re.finditer(r"^FROM\s+(\S+)\s+AS\s+(\S+)", text, re.M))
    assert "CUDA" in bases["worker"] and "CUDA" not in bases["web"] and "cuda" not in bases["web"].lower()
    for target in ("web", "worker"):
        assert [c for c in all_stages[target] if c.startswith("COPY")] == ["COPY --from=source /src/ /srv/pkb-arena/"]
        assert 'pip install -e ".[site]"' in " ".join(all_stages[target])


def test_every_package_the_project_installs_is_in_the_image(worker_tree):
    """pyproject's packages (pip install -e . in the image) are all copied: pkb_client/ was once left out."""
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    for pattern in include:
        package = pattern.rstrip("*")
        assert (worker_tree / package / "__init__.py").is_file(), f"{package} is installed but not in the image"
    assert not list(worker_tree.rglob("__pycache__")) and not (worker_tree / "tests").exists()


def test_the_workers_and_the_judge_import_in_the_image(worker_tree):
    script = (
        "import importlib, json, sys\n"
        "assert not any('editable' in repr(f).lower() for f in sys.meta_path)\n"
        f"mods = {list(ENTRY_MODULES)!r}\n"
        "import leaderboard.jobs.worker_boot\n"
        "print(json.dumps({m: importlib.import_module(m).__file__ for m in mods + ['pkb_client.cli']}))\n"
    )
    done = image_python(worker_tree, "-c", script)
    assert done.returncode == 0, done.stderr[-4000:]
    files = json.loads(done.stdout.strip().splitlines()[-1])
    for module, file in files.items():
        assert Path(file).resolve().is_relative_to(worker_tree.resolve()), f"{module} came from {file}"


def test_the_judge_cli_runs_in_the_image(worker_tree):
    done = image_python(worker_tree, "-m", "evaluator.cli", "--help")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "usage" in done.stdout.lower() and "eval" in done.stdout


def test_a_tree_without_a_package_fails_here(worker_tree, tmp_path):
    """The check can fail: the same tree without pkb_client/ cannot run the judge's CLI (the image's old state)."""
    broken = tmp_path / "srv"
    shutil.copytree(worker_tree, broken, ignore=shutil.ignore_patterns("pkb_client"))
    done = image_python(broken, "-m", "evaluator.cli", "--help")
    assert done.returncode != 0 and "pkb_client" in done.stderr
