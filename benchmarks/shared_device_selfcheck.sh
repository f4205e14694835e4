#!/usr/bin/env bash
# The references of every problem judged against themselves in a shared-device world on a one-GPU host (issue 41):
# every rank of both groups on one GPU, gloo with CUDA tensors staged through host memory, correctness only.
#
#   bash benchmarks/shared_device_selfcheck.sh            W = 8
#   bash benchmarks/shared_device_selfcheck.sh 8 4 2      one run per world size, in that order
#
# Environment: PROBLEMS (ids, e.g. 1-29 or 1,2,13; default every implemented problem), TRIALS (default 2), NULLS=1
# to judge the null answers too (skipped by default: they cost a W-rank start each), OUT (default
# benchmarks/results): one JSON report per W, shared_device_selfcheck_w<W>.json (pkb selfcheck's own, one row per
# problem with its verdict, message and seconds), and its log beside it. One shared judge per GPU at a time: each
# rank's memory bound assumes the GPU holds 2W rank processes (docs/site.md, "Shared-device worlds").
# Exits 1 if any problem at any W was not ok (the rows say which and why), 2 for a bad argument.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
status=0
for W in "${@:-8}"; do
  args=(-m evaluator.cli selfcheck --device cuda --world-size "$W" --shared-device --trials "${TRIALS:-2}"
        --json "$OUT/shared_device_selfcheck_w$W.json")
  [ -n "${PROBLEMS:-}" ] && args+=(--problems "$PROBLEMS")
  [ "${NULLS:-0}" = 1 ] || args+=(--no-nulls)
  echo "=== shared-device selfcheck W=$W: $PY ${args[*]}"
  began=$SECONDS
  "$PY" "${args[@]}" 2>&1 | tee "$OUT/shared_device_selfcheck_w$W.log"
  rc=${PIPESTATUS[0]}
  echo "=== W=$W: exit $rc in $((SECONDS - began)) s"
  [ "$rc" -eq 2 ] && exit 2
  [ "$rc" -eq 0 ] || status=1
done
exit "$status"
