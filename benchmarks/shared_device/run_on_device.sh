#!/usr/bin/env bash
# The shared-device evidence on a lent one-GPU host (issue 41), from the repository root; one step per argument:
#
#   bash benchmarks/shared_device/run_on_device.sh host facts kernels       (the standalone launcher)
#   bash benchmarks/shared_device/run_on_device.sh judge selfcheck          (through the judge, in the box)
#
# host: the GPU, cgroup mounts, bubblewrap (carried in .sbx as scripts/fetch_wheels.sh leaves it);
# facts / kernels: benchmarks/shared_device/launch.py at W in $WORLDS (default 2 8 4);
# build: the CUDA files' extensions at once, for the launcher;
# references: launch.py references at W in $REF_WORLDS (default 8): each reference staged on the GPU against the same
#   reference on host copies, one world for all problems (finds the staging's faults without the judge);
# judge: `pkb eval --shared-device --require-sandbox` of every kernel and wrong twin, $PAR files at once, each file at
#   every W of $WORLDS in turn (its build, cached by the judge, then serves the other world sizes);
# selfcheck: `pkb selfcheck --shared-device` of all references at W in $SC_WORLDS (default 8), in three parts at once.
# Everything lands in $WORK as it comes (logs, JSON lines); after each step the JSON lines, host.log and a tarball of
# the whole of $WORK are copied to $OUT (a device call returns at most 8 files). NVLink multicast stays off throughout.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1 TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/d2_ext}
: "${OUT:=/tmp/shared_device_out}" "${WORK:=/tmp/d2_work}" "${WORLDS:=2 8 4}" "${SC_WORLDS:=8}" "${DEADLINE:=$(($(date +%s) + 540))}"
mkdir -p "$OUT" "$WORK"
PY=${PYTHON:-$(command -v python3)}
DIR=benchmarks/shared_device
KERNELS=${KERNELS-$(ls $DIR/[0-9]*_*.py | sort -V)}   # either may be given (a subset), or empty
WRONG=${WRONG-$(ls $DIR/wrong/[0-9]*_*.py | sort -V)}
left() { echo $((DEADLINE - $(date +%s))); }  # DEADLINE: epoch seconds, shared by concurrent runs

if [ -z "${PKB_BWRAP:-}" ] && ! command -v bwrap >/dev/null && ls .sbx/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .sbx/bubblewrap_*.deb /tmp/bw && export PKB_BWRAP=/tmp/bw/usr/bin/bwrap
fi
if [ -d .sbx/wheels ] && ! "$PY" -c 'import django' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/d2_site .sbx/wheels/*.whl \
    >/dev/null 2>&1 && export PYTHONPATH=/tmp/d2_site${PYTHONPATH:+:$PYTHONPATH}
fi

save() {
  cp "$WORK"/*.jsonl "$WORK"/host.log "$OUT"/ 2>/dev/null
  tar czf "$OUT/results.tgz" -C "$WORK" . 2>/dev/null
}

judge_one() {  # W FILE: one pkb eval in a shared world, in the box; one JSON line in $WORK/judge.jsonl
  local W=$1 f=$2 id began rc tmp
  id=$(basename "$f" | cut -d_ -f1); began=$SECONDS; tmp="$WORK/judge_${W}_$(basename "$(dirname "$f")")_$(basename "$f" .py)"
  local l=$((DEADLINE - $(date +%s)))
  [ "$l" -lt 45 ] && { echo "W=$W $f: not run (out of time)"; return; }
  timeout $((l < 250 ? l - 10 : 240)) "$PY" -m evaluator.cli eval "$id" "$f" --device cuda --world-size "$W" --shared-device \
    --require-sandbox --trials 2 --json "$tmp.json" >"$tmp.log" 2>&1
  rc=$?
  "$PY" - "$f" "$W" "$rc" "$((SECONDS - began))" "$tmp" "$WORK" <<'PYEOF'
import json, sys, pathlib
f, W, rc, wall, tmp, work = sys.argv[1:]
try:
    doc = json.load(open(f"{tmp}.json"))
except Exception as exc:
    doc = {"verdict": f"no result ({exc.__class__.__name__}), rc={rc}",
           "message": pathlib.Path(f"{tmp}.log").read_text()[-600:]}
env = doc.get("environment") or {}
line = {"file": f, "W": int(W), "verdict": doc.get("verdict"), "wall_s": int(wall), "flags": doc.get("flags"),
        "shared_device": env.get("shared_device"), "sandbox": env.get("sandbox"),
        "message": (doc.get("message") or "")[:400]}
open(f"{work}/judge.jsonl", "a").write(json.dumps(line) + "\n")
print(f"W={W} {f}: {line['verdict']} ({wall} s) {line['message'][:100]}")
PYEOF
}
export -f judge_one
export WORK DEADLINE PY WORLDS

for step in "$@"; do
  echo "=== $step ($(left) s left)"
  case $step in
    host)
      { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
        "$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
        echo "--- cgroup mounts"; grep cgroup /proc/mounts; echo "--- /proc/self/cgroup"; cat /proc/self/cgroup
        echo "--- cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
        echo "--- bwrap: ${PKB_BWRAP:-$(command -v bwrap)}"
        "${PKB_BWRAP:-bwrap}" --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true \
          && echo "bwrap --unshare-all: ok" || echo "bwrap --unshare-all: rc=$?"
        echo "--- /dev/shm: $(df -h /dev/shm | tail -n 1)"; nproc; free -g | head -n 2
      } 2>&1 | tee "$WORK/host.log" ;;
    facts)
      timeout "$(left)" "$PY" $DIR/launch.py facts --worlds $WORLDS --nccl --out "$WORK" 2>&1 | tee "$WORK/facts.log" ;;
    kernels)
      timeout "$(left)" "$PY" $DIR/launch.py kernels --worlds $WORLDS --stall 120 --out "$WORK" $KERNELS $WRONG \
        2>&1 | tee "$WORK/kernels.log" | grep -v '^\s' ;;
    references)
      timeout "$(left)" "$PY" $DIR/launch.py references --worlds ${REF_WORLDS:-8} --problems "${REF_PROBLEMS:-1-87}" \
        --stall 120 --out "$WORK" 2>&1 | tee "$WORK/references.log" | grep '^{' ;;
    judge)  # $PAR files at once; each file at every W of $WORLDS in turn, in the box
      for f in $KERNELS $WRONG; do echo "$f"; done |
        xargs -P "${PAR:-3}" -n 1 bash -c 'for W in $WORLDS; do judge_one "$W" "$1"; done' _ 2>&1 |
        tee -a "$WORK/judge.log" ;;
    build)  # the standalone launcher's CUDA builds, all at once (the launcher then loads them)
      for f in $DIR/*_cuda.py $DIR/wrong/*_cuda.py; do
        PYTHONPATH=evaluator/pkb_utils${PYTHONPATH:+:$PYTHONPATH} "$PY" -c "import runpy; runpy.run_path('$f')" \
          >"$WORK/build_$(basename "$(dirname "$f")")_$(basename "$f").log" 2>&1 &
      done; wait; echo "built: $(ls -d "$TORCH_EXTENSIONS_DIR"/*/ | wc -l) extension folders" ;;
    selfcheck)  # every reference in a shared world, the problems split over $SC_PAR selfchecks at once
      for W in $SC_WORLDS; do
        for range in ${SC_RANGES:-1-29 30-58 59-87}; do
          timeout "$(left)" "$PY" -m evaluator.cli selfcheck --device cuda --world-size "$W" --shared-device \
            --no-nulls --trials "${SC_TRIALS:-1}" --problems "$range" --json "$WORK/selfcheck_w${W}_$range.json" \
            >"$WORK/selfcheck_w${W}_$range.log" 2>&1 &
        done; wait
        tail -n 25 "$WORK"/selfcheck_w"$W"_*.log
      done ;;
    *) echo "unknown step $step" ;;
  esac
  save
done
ls -la "$OUT"
