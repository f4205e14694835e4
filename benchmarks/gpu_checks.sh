#!/usr/bin/env bash
# The GPU checks of the sandbox, compile-once and whole-device work, on a lent GPU host (one H200):
#   bash benchmarks/gpu_checks.sh OUTDIR [STEP...]     steps: env sandbox escape smoke compat build68 box boxcost
# bubblewrap is not on that image: carry Debian's .deb in .sbx/ (apt-get download bubblewrap) and it is unpacked
# under /tmp. Each step's output goes to OUTDIR/STEP.log; a summary line per step to stdout.
set -uo pipefail
OUT=${1:?OUTDIR}; shift
STEPS=${*:-env sandbox escape smoke compat build68 box boxcost}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if ! command -v bwrap >/dev/null && ls .sbx/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .sbx/bubblewrap_*.deb /tmp/bw && export PKB_BWRAP=/tmp/bw/usr/bin/bwrap
fi
PY=${PY:-python3}
run() {  # name, command...
  local name=$1; shift
  local began=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc in $((SECONDS - began)) s: $(tail -n 1 "$OUT/$name.log")"
}
for step in $STEPS; do
  case $step in
    env) run env sh -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; $PY -V; \
$PY -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)'; uname -r; \
ldd \${PKB_BWRAP:-\$(command -v bwrap)} | grep -c 'not found'; mount | grep cgroup; cat /proc/self/cgroup; \
$PY -c 'from evaluator.process import sandbox; import json; print(json.dumps(sandbox.host_support()))'" ;;
    sandbox) run sandbox $PY -m evaluator eval 1 benchmarks/candidates/p01_allreduce_triton.py -W 1 --device cuda \
        --require-sandbox --json "$OUT/p01_triton_sandboxed.json" ;;
    escape) run escape $PY -m pytest -q -p no:django -p no:cacheprovider tests/redteam/test_host_escape.py \
        tests/redteam/test_escape.py -k "not filling" ;;
    smoke) run smoke $PY -m pytest -q -s -p no:django -p no:cacheprovider tests/evaluator/test_gpu_smoke.py \
        -k "whole_device or builds_once or backends" ;;
    compat) run compat $PY -m pytest -q -p no:django -p no:cacheprovider tests/evaluator/compat ;;
    box) run box $PY -m pytest -q -p no:django -p no:cacheprovider tests/redteam/test_box.py \
        tests/redteam/test_host_escape.py ;;
    boxcost) run boxcost $PY benchmarks/box_cost.py -W 1 --device cuda --jobs 4 --setups 10 \
        --candidate benchmarks/candidates/p01_allreduce_triton.py --json "$OUT/box_cost_cuda.json" ;;
    build68) run build68 $PY -m evaluator eval 68 benchmarks/candidates/p68_table_copy_torch.py -W 1 --device cuda \
        --require-sandbox --trials 2 --no-timing --json "$OUT/p68_copy.json" ;;
  esac
done
