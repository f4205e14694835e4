#!/usr/bin/env bash
# The whole test suite. Services the production-configuration tests use (PostgreSQL, RabbitMQ, Redis) are started
# if they are down, the same way the machine starts them; Chromium comes from Debian for the browser tests.
#
#   bash scripts/test.sh            the whole suite, in two phases (below)
#   bash scripts/test.sh ARGS...    one pytest run with these arguments (a file, a directory, -k ...)
#
# The whole suite runs in two phases, so that no timing-sensitive test ever shares the cores:
#   1. the gates (`make lint`: ruff and mypy) and two pytest processes at once: the "units" lane (the site's
#      request-level tests, the problems' own tests, the build machinery's and the judge's correctness-only tests:
#      one core or short bursts, correctness only, no server, no broker; builds in a test's own cache, or the default
#      one under keys of the file's bytes) beside the "site" lane (the installs, the browser, the broker lifecycle,
#      the site's judge-driven tests: mostly waiting on pip, Chromium, brokers and compilers, so a core is idle for
#      much of it);
#   2. alone: the judge, the red team and the self-check, whose timed blocks, pauses and deadlines are measured.
# Each lane writes its JUnit report to test-output/junit-<lane>.xml; the units lane's output is printed when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
bash scripts/services.sh
mkdir -p test-output

# pytest exits 5 when it collected no test: that is a failure of the suite, not a pass.
run_pytest() {
  local rc=0
  "$BIN/python" -m pytest "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: $*" >&2; rc=1; fi
  return "$rc"
}

if [ "$#" -gt 0 ]; then
  run_pytest "$@"
  exit
fi

# Judge-driven tests that judge correctness only (no timing, no deadline they measure) run in the units lane too.
BUILDS=(tests/evaluator/test_prebuild.py tests/evaluator/test_builds.py tests/evaluator/test_cuda_helpers.py
        tests/evaluator/compat tests/evaluator/test_nulls.py tests/evaluator/test_gloo_compat.py
        tests/evaluator/test_cli_hidden.py tests/evaluator/test_shared_device.py)
UNITS=(tests/site/security tests/site/views tests/site/services tests/site/api tests/site/records
       tests/problems/test_p*.py "${BUILDS[@]}")
SITE=(tests/test_installs.py tests/site tests/feedback
      --ignore=tests/site/security --ignore=tests/site/views --ignore=tests/site/services --ignore=tests/site/api
      --ignore=tests/site/records)
TIMED=(tests --ignore=tests/test_installs.py --ignore=tests/site --ignore=tests/feedback
       --ignore-glob='tests/problems/test_p*.py' "${BUILDS[@]/#/--ignore=}")

# The gates (`make lint`: ruff, then mypy; the Makefile holds their one definition), beside phase 1: a few
# CPU-seconds, its output printed when phase 1 ends.
started=$SECONDS
make --no-print-directory lint >test-output/lint.log 2>&1 &
lint_pid=$!

# The two lanes of phase 1 use PostgreSQL test databases of their own.
PKB_TEST_DATABASE_NAME=${PKB_TEST_DATABASE_NAME:-test_pkb_arena}_units \
  run_pytest "${UNITS[@]}" --junitxml=test-output/junit-units.xml >test-output/lane-units.log 2>&1 &
units_pid=$!
site_rc=0
run_pytest "${SITE[@]}" --junitxml=test-output/junit-site.xml || site_rc=$?
units_rc=0
wait "$units_pid" || units_rc=$?
echo "=== the units lane (ran beside the site lane) ==="
cat test-output/lane-units.log
lint_rc=0
wait "$lint_pid" || lint_rc=$?
echo "=== the gates: ruff and mypy (make lint) ==="
cat test-output/lint.log
echo "=== phase 1: lint rc=$lint_rc, site lane rc=$site_rc, units lane rc=$units_rc, $((SECONDS - started)) s ==="

timed_rc=0
run_pytest "${TIMED[@]}" --junitxml=test-output/junit-timed.xml || timed_rc=$?
echo "=== phase 2 (alone): timed lane rc=$timed_rc; the whole suite $((SECONDS - started)) s ==="
[ "$lint_rc" -eq 0 ] && [ "$site_rc" -eq 0 ] && [ "$units_rc" -eq 0 ] && [ "$timed_rc" -eq 0 ]
