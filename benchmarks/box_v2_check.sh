#!/usr/bin/env bash
# The box's red-team tests on a cgroup v2 host (a lent GPU host; issue 45), under 8 minutes, from the repository root:
#
#   bash benchmarks/box_v2_check.sh            (carry .sbx: scripts/fetch_wheels.sh's site wheels and bubblewrap .deb,
#                                               plus .sbx/test-wheels: pytest, pluggy, iniconfig, pytest-django,
#                                               pytest-timeout for CPython 3.12)
#
# The box tests need no site: pytest-django stays off (the host has no database driver).
# Runs tests/redteam/test_box_cleanup.py, test_box_limits.py and test_box_layers.py (each branch of cgroups.py that
# differs between v1 and v2 is read back there) and test_judge_boundary.py (the judge's reading, waiting and clean-up
# around a box; $TESTS overrides the list), then benchmarks/box_v2_check.py on the last GPU (the device view:
# that GPU's node alone, by UUID, and no other GPU when the candidate asks). Writes under $OUT: host.txt (kernel,
# cgroup mounts and controllers, bwrap, GPUs), tests.log, junit.xml, devices.json, and prints the summary.
set -uo pipefail
# The deep-tree test calls the site's workspace clean-up, which reads settings: the embedded default (SQLite) does.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-leaderboard.settings}
cd "$(dirname "$0")/.."
: "${OUT:=var/box_v2_check}"
mkdir -p "$OUT"
say() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=$PWD/.venv/bin/python
  elif [ -x /opt/torch/.venv/bin/python ]; then PYTHON=/opt/torch/.venv/bin/python
  else PYTHON=$(command -v python3); fi
fi
if ! "$PYTHON" -c 'import django, pytest, pytest_timeout, pytest_django' 2>/dev/null; then
  SITE=/tmp/box_v2_site
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    .sbx/wheels/*.whl .sbx/test-wheels/*.whl >"$OUT/setup.log" 2>&1
  say "wheels into $SITE: rc=$?"
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
fi
if [ -z "${PKB_BWRAP:-}" ] && ! command -v bwrap >/dev/null; then
  dpkg -x .sbx/bubblewrap_*.deb /tmp/bw && export PKB_BWRAP=/tmp/bw/usr/bin/bwrap
  # The tests' command lines run bwrap by name too (setpriv is util-linux's, on the host).
  export PATH=/tmp/bw/usr/bin:$PATH
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

{
  echo "kernel: $(uname -r)"
  echo "python: $("$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
  echo "bwrap: $(${PKB_BWRAP:-bwrap} --version 2>&1)"
  echo "cgroup mounts:"; grep cgroup /proc/self/mounts
  echo "v2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
  echo "v2 subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
  echo "pid_max: $(cat /proc/sys/kernel/pid_max), threads-max: $(cat /proc/sys/kernel/threads-max)"
  echo "cpus: $(nproc)"
  echo "gpus:"; nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader 2>&1
  echo "driver records:"; grep -H "Device Minor\|GPU UUID\|Bus Location" /proc/driver/nvidia/gpus/*/information 2>&1
  echo "device nodes: $(ls /dev | grep nvidia | tr '\n' ' ')"
} >"$OUT/host.txt" 2>&1
say "host: $(head -1 "$OUT/host.txt"), $(grep -c cgroup2 "$OUT/host.txt") cgroup2 mount(s)"

began=$SECONDS
: "${TESTS:=tests/redteam/test_box_cleanup.py tests/redteam/test_box_limits.py tests/redteam/test_box_layers.py \
tests/redteam/test_judge_boundary.py}"
# shellcheck disable=SC2086 # TESTS is a list of paths
timeout 420 "$PYTHON" -m pytest -p no:django -p no:cacheprovider -q -o addopts="" --timeout=150 --durations=30 -rA \
  --junitxml="$OUT/junit.xml" $TESTS >"$OUT/tests.log" 2>&1
rc=$?
say "box tests: rc=$rc in $((SECONDS - began)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(PASSED|FAILED|SKIPPED|ERROR)" "$OUT/tests.log" | tee -a "$OUT/summary.txt"

if command -v nvidia-smi >/dev/null; then
  last=$(( $(nvidia-smi -L | wc -l) - 1 ))
  began=$SECONDS
  timeout 100 "$PYTHON" benchmarks/box_v2_check.py "$last" >"$OUT/devices.json" 2>"$OUT/devices.err"
  say "device view on GPU $last: rc=$? in $((SECONDS - began)) s: $(grep -A8 '"checks"' "$OUT/devices.json" | tr -d '\n ')"
fi
