#!/usr/bin/env bash
# The whole test suite. Services the production-configuration tests use (PostgreSQL, RabbitMQ, Redis) are started
# if they are down, the same way the machine starts them; Chromium comes from Debian for the browser tests.
#
# Without arguments: every test, in two phases: the tests side by side over PKB_TEST_PROCESSES pytest-xdist workers
# (default: cores + 1, as most of a judge test waits on processes), then the tests marked `alone` (tests/conftest.py)
# one at a time with nothing beside them. With arguments: pytest with exactly those, in one process (the edit loop;
# add -n N to spread them).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
bash scripts/services.sh
mkdir -p test-output

run() {
    set +e
    $BIN/python -m pytest "$@"
    local rc=$?
    set -e
    # pytest exits 5 when it collected no test: that is a failure of the suite, not a pass.
    if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: $*" >&2; return 1; fi
    return "$rc"
}

if [ "$#" -gt 0 ]; then
    run "$@"
    exit
fi
processes="${PKB_TEST_PROCESSES:-$(( $(nproc) + 1 ))}"
rc=0
run -n "$processes" -m "not alone" || rc=$?
run -m alone || rc=$?
exit "$rc"
