"""No tracked file names an absolute path of a development machine (a checkout under /work, something in a home under
/home or /root; the bare system directories /home and /root are no machine's): a reader of the repository has none
of them, so what a document needs of such a place is written here, in the repository, or names the in-repo file.
Two narrow exceptions, each a path that is not a development machine's: the image's own cache directory in the
deployment files, and the host secrets that the red team's candidates try to read from inside the box. Nor does a
relative path climb out of the repository (``../shared/...`` from its top): what lies beside a checkout is no reader's
either."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SELF = "tests/test_no_machine_paths.py"  # its rules name what they look for
# /work[/...], /home/... or /root/... as a path of its own: not the tail of a longer path (/proc/1/root/...), a URL's
# path (example.com/home/...) or a variable's ($HOME/work).
MACHINE_PATH = re.compile(r"(?<![\w.~$/-])(?:/work(?![\w.-])(?:/[\w./-]*)?|/(?:home|root)/[\w.-][\w./-]*)")
# (where the file lies, the path it may name): each exception names its file's directory and the exact path.
ALLOWED: tuple[tuple[str, str], ...] = (
    ("deploy/", "/root/.cache/pkb-arena"),  # the image's build cache, a container's path (docker-compose.yml)
    ("tests/redteam/", "/root/.bashrc"),  # a host secret the box must hide (the probes and test_box.py)
)


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


def machine_paths(rel: str, text: str) -> list[str]:
    found = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for match in MACHINE_PATH.finditer(line):
            path = match.group().rstrip(".")
            if any(rel.startswith(where) and path == allowed for where, allowed in ALLOWED):
                continue
            found.append(f"{rel}:{line_no}: {path}")
    return found


# A relative path that climbs (../name, ../../name): not the tail of a longer path, nor a shell expression's ($(x)/..).
CLIMBING_PATH = re.compile(r"(?<![\w./$)}-])((?:\.\./)+)([\w.-]+)")


def paths_outside(rel: str, text: str, root: Path = ROOT) -> list[str]:
    """Relative paths in the file at ``rel`` that lead out of the repository (``../shared/spec/`` from its top)."""
    found = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for match in CLIMBING_PATH.finditer(line):
            target = ((root / rel).parent / (match.group(1) + match.group(2))).resolve()
            if not target.is_relative_to(root.resolve()):
                found.append(f"{rel}:{line_no}: {match.group()}")
    return found


def test_no_tracked_file_names_a_development_machines_path():
    files = tracked_files()
    assert "docs/architecture.md" in files and len(files) > 100
    found = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file() or rel == SELF:
            continue  # deleted in the working tree, not yet committed; or this file
        found += machine_paths(rel, path.read_bytes().decode("utf-8", errors="replace"))
    assert not found, "absolute paths of a development machine (say it in the repository's words):\n" + "\n".join(found)


def test_the_scan_finds_machine_paths_and_keeps_the_narrow_exceptions():
    # Built from pieces so that this file does not name the paths it tests.
    work, home, root = "/" + "work", "/" + "home", "/" + "root"
    text = (
        f"spec: {work}/shared/spec/problems/p01.md\n"
        f"see {home}/alice/notes.md and {root}/.pyenv/versions\n"
        f"mounts ({root}, {work})\n"
        f"fine: /proc/1{root}/etc/passwd, https://example.com{home}/x, $HOME{work}, /var/pkb/work/job-1, "
        f"/workspace, /homes, no {home} or {root} in the view, root:x:0:0:root:{root}:/usr/sbin/nologin\n"
        f"{root}/.bashrc {root}/.cache/pkb-arena\n"
    )
    assert [entry.split(": ", 1)[1] for entry in machine_paths("docs/x.md", text)] == [
        f"{work}/shared/spec/problems/p01.md",
        f"{home}/alice/notes.md",
        f"{root}/.pyenv/versions",
        work,
        f"{root}/.bashrc",
        f"{root}/.cache/pkb-arena",
    ]
    assert [e.split(": ", 1)[1] for e in machine_paths("tests/redteam/test_box.py", text)] == [
        f"{work}/shared/spec/problems/p01.md",
        f"{home}/alice/notes.md",
        f"{root}/.pyenv/versions",
        work,
        f"{root}/.cache/pkb-arena",
    ]
    assert [e.split(": ", 1)[1] for e in machine_paths("deploy/docker-compose.yml", text)][-1] == f"{root}/.bashrc"


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for rel in tracked_files():
        path = ROOT / rel
        if path.is_file() and rel != SELF:
            found += paths_outside(rel, path.read_bytes().decode("utf-8", errors="replace"))
    assert not found, "relative paths out of the repository (say it in the repository's words):\n" + "\n".join(found)


def test_the_scan_finds_paths_that_climb_out_and_keeps_those_inside():
    text = 'written from ../shared/spec/, see ../README.md, cd "$(dirname "$0")/..", a/../b, ../../x\n'
    assert [e.split(": ", 1)[1] for e in paths_outside("README.md", text)] == ["../shared", "../README.md", "../../x"]
    # One level down, ../shared and ../README.md are the repository's own top.
    assert [e.split(": ", 1)[1] for e in paths_outside("docs/site.md", text)] == ["../../x"]
