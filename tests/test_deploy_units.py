"""The systemd units of deploy/systemd, as an operator installs them: each one, instantiated (``name@instance``), passes
``systemd-analyze verify`` with nothing to say (unknown keys and misplaced settings are warnings there, which systemd
would otherwise ignore in silence at start), and the GPU and build workers are pinned and unpinned as docs/site.md
says. The dramatiq executable is pointed at this environment's, which verify requires to exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
INSTANCES = {
    "pkb-web.service": None,
    "pkb-worker@.service": "gpu-h200x8",
    "pkb-gpu-worker@.service": "0-3",
    "pkb-build-worker@.service": "gpu-h200x1",
    "pkb-reaper@.service": "jobs",
}


def test_every_unit_is_listed_here():
    assert sorted(p.name for p in UNITS.glob("*.service")) == sorted(INSTANCES)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_the_unit_verifies_clean(name, tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing (Debian's systemd package)"
    text = (UNITS / name).read_text().replace("/opt/venv/bin/", str(Path(sys.executable).parent) + "/")
    instance = INSTANCES[name]
    unit = tmp_path / (name.replace("@.", f"@{instance}.") if instance else name)
    unit.write_text(text)
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=120)
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 0 and not said, "\n".join(said)


def _environment(name: str) -> dict:
    pairs = {}
    for line in (UNITS / name).read_text().splitlines():
        if line.startswith("Environment="):
            pairs.update(re.findall(r"(\w+)=(\S*)", line[len("Environment=") :]))
    return pairs


def test_the_gpu_worker_is_pinned_to_its_instance_and_the_build_worker_to_nothing():
    assert _environment("pkb-gpu-worker@.service")["PKB_GPUS"] == "%i"
    assert _environment("pkb-build-worker@.service")["PKB_GPUS"] == ""
    build = (UNITS / "pkb-build-worker@.service").read_text()
    assert "leaderboard.jobs.build_stage --queues build-%i" in build
