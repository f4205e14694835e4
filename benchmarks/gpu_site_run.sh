#!/usr/bin/env bash
# One whole submission through the site on a GPU host (issue 34), from the repository root:
#
#   bash benchmarks/gpu_site_run.sh [all|resume|collect|stop]        (default: all)
#   DRY=1 bash benchmarks/gpu_site_run.sh                             (this CPU machine: cpu-gloo, three small files)
#
# On the GPU host: installs the carried wheels (scripts/fetch_wheels.sh put them in .sbx/wheels) into a target
# folder on PYTHONPATH, over the host's own python (torch and Triton come from the host), unpacks the carried
# bubblewrap, keeps NVLink multicast off, and hands over to benchmarks/gpu_site_run.py (the steps, the summary).
# Everything comes back under $OUT: progress.log (also printed), summary.json, gpu_site_run.tar.gz, setup.log.
# A call that runs out of time leaves the server running in its own session: "resume" carries the run on.
set -uo pipefail
cd "$(dirname "$0")/.."

# --- the run's settings (each may be given in the environment) -----------------------------------------------------
: "${DRY:=0}"
: "${OUT:=var/gpu_site_run/out}"
: "${RUN_DIR:=/tmp/gpu_site_run}"                 # the database, servers' logs, build caches: outside the repo
: "${GPUS:=0}"                                     # PKB_GPUS of the worker: pinned to GPU 0
: "${STAGE_MODE:=cuda}"                            # PKB_BUILD_STAGE of the first pass (the second runs with off)
: "${PROFILE:=gpu-h200x1}"
: "${SUBMISSION_DIR:=benchmarks/gpu_submission}"
: "${NOBUILD_FILES:=attempt_1/1_allreduce_cuda.py attempt_1/19_blocked_fp8_quantize_cuda.py attempt_6/1_allreduce_cuda.py}"
: "${PASSES:=stage,nobuild}"
: "${WARM_SPARES:=0}"
: "${BUILD_WORKERS:=6}"                            # PKB_BUILD_WORKERS: builds at once (x PKB_BUILD_MAX_JOBS=2 compilers each)
: "${BUILD_ARCH:=}"                                # PKB_BUILD_ARCH; empty: the stage and the jobs inherit the host's
                                                   # TORCH_CUDA_ARCH_LIST (9.0a on the lent H200), one fingerprint
: "${DEADLINE_S:=560}"                             # this call's own budget (a device command has 600 s)
: "${PORT:=8765}"
: "${WHEELS:=.sbx/wheels}"
: "${PKB_SANDBOX:=required}"
: "${FRESH:=0}"
if [ "$DRY" = 1 ]; then  # the same orchestration on a machine without a GPU: the CPU profile, small files
  PROFILE=cpu-gloo GPUS= STAGE_MODE=all BUILD_ARCH= BUILD_WORKERS=1
  : "${DRY_FILES:=tests/evaluator/compat/candidates/lazy_cpp_extension.py tests/evaluator/compat/candidates/broken_build.py tests/evaluator/compat/candidates/ws1_shortcut.py}"
  RUN_DIR=${DRY_RUN_DIR:-/tmp/gpu_site_run_dry}
  SUBMISSION_DIR=$RUN_DIR/dry_submission
  NOBUILD_FILES="attempt_1/1_allreduce_cpp.py attempt_2/1_allreduce_cpp.py"
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export DRY OUT RUN_DIR GPUS STAGE_MODE PROFILE SUBMISSION_DIR NOBUILD_FILES PASSES WARM_SPARES BUILD_WORKERS BUILD_ARCH \
  DEADLINE_S PORT PKB_SANDBOX
mkdir -p "$OUT"
COMMAND=${1:-all}
say() { echo "[$(date +%H:%M:%S) setup] $*" | tee -a "$OUT/setup.log"; }

# --- python: the repository's venv here, the host's python (torch, Triton) plus the carried wheels there ------------
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=$PWD/.venv/bin/python
  elif [ -x /opt/torch/.venv/bin/python ]; then PYTHON=/opt/torch/.venv/bin/python
  else PYTHON=$(command -v python3); fi
fi
export PYTHON
if [ "$COMMAND" = all ] && [ "$FRESH" = 1 ] && [ -d "$RUN_DIR" ]; then
  "$PYTHON" benchmarks/gpu_site_run.py stop >/dev/null 2>&1  # an earlier run's server, by its recorded pid
  rm -rf "$RUN_DIR"
fi
mkdir -p "$RUN_DIR"
if ! "$PYTHON" -c 'import django' 2>/dev/null; then
  # --target, not a venv: the device notes' way on that image (a venv made from its venv's python needs ensurepip);
  # the folder on PYTHONPATH gives the same as --system-site-packages: the host's torch, the carried site packages.
  SITE=$RUN_DIR/site-packages
  if [ ! -f "$SITE/.installed" ]; then
    if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
      began=$SECONDS
      "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$WHEELS"/*.whl >>"$OUT/setup.log" 2>&1 && touch "$SITE/.installed"
      say "wheels from $WHEELS into $SITE: rc=$? in $((SECONDS - began)) s ($(ls "$WHEELS"/*.whl | wc -l) wheels)"
    else
      say "no django for $PYTHON and no wheels in $WHEELS: run scripts/fetch_wheels.sh here and carry .sbx"
    fi
  fi
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
fi
say "python $PYTHON: $("$PYTHON" -c 'import sys, django, torch; print(sys.version.split()[0], "django", django.__version__, "torch", torch.__version__)' 2>&1 | tail -n 1)"

# --- bubblewrap: carried as Debian's .deb where the host has none ---------------------------------------------------
if [ -z "${PKB_BWRAP:-}" ] && ! command -v bwrap >/dev/null; then
  if ls .sbx/bubblewrap_*.deb >/dev/null 2>&1; then
    dpkg -x .sbx/bubblewrap_*.deb /tmp/bw && export PKB_BWRAP=/tmp/bw/usr/bin/bwrap
    say "bubblewrap unpacked: $PKB_BWRAP ($(ldd "$PKB_BWRAP" 2>&1 | grep -c 'not found') libraries missing)"
  else
    say "no bwrap and no .sbx/bubblewrap_*.deb: the sandbox will be refused (PKB_SANDBOX=$PKB_SANDBOX)"
  fi
fi

# --- the dry run's submission: three small files for problem 1, one attempt each --------------------------------
if [ "$DRY" = 1 ] && [ ! -d "$SUBMISSION_DIR" ]; then
  n=0
  for f in $DRY_FILES; do
    n=$((n + 1)); mkdir -p "$SUBMISSION_DIR/attempt_$n"
    case $f in *ws1_shortcut*) backend=torch ;; *) backend=cpp ;; esac
    cp "$f" "$SUBMISSION_DIR/attempt_$n/1_allreduce_$backend.py"
  done
  NOBUILD_FILES="attempt_1/1_allreduce_cpp.py attempt_2/1_allreduce_cpp.py"
  say "dry submission: $(cd "$SUBMISSION_DIR" && find . -name '*.py' | sort | tr '\n' ' ')"
fi

say "run: $COMMAND, profile $PROFILE, GPUs '${GPUS}', stage $STAGE_MODE, passes $PASSES, sandbox $PKB_SANDBOX, run dir $RUN_DIR"
"$PYTHON" benchmarks/gpu_site_run.py "$COMMAND"
rc=$?
say "gpu_site_run.py $COMMAND: rc=$rc (0 done, 3 out of this call's time: run 'resume' next)"
exit $rc
