#!/usr/bin/env bash
# The whole test suite. Services the production-configuration tests use (PostgreSQL, RabbitMQ, Redis) are started
# if they are down, the same way the machine starts them; Chromium comes from Debian for the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
bash scripts/services.sh
mkdir -p test-output
set +e
$BIN/python -m pytest "$@"
rc=$?
set -e
# pytest exits 5 when it collected no test: that is a failure of the suite, not a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
