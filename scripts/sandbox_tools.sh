#!/usr/bin/env bash
# The candidate sandbox's tools (evaluator/process/sandbox.py): bubblewrap for the private filesystem view, setpriv
# (util-linux) to drop to the candidate's uid. Installed from Debian's packages when this runs as root and they are
# missing; without root the sandbox cannot be complete anyway, and the judge says so on every result.
set -uo pipefail
if command -v bwrap >/dev/null && command -v setpriv >/dev/null; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "sandbox tools: bwrap/setpriv missing and not root: candidates will run unsandboxed (flagged, never ranked)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq bubblewrap util-linux >/dev/null 2>&1 \
  || (apt-get update -qq && apt-get install -y -qq bubblewrap util-linux >/dev/null) \
  || echo "sandbox tools: bubblewrap could not be installed; escape tests will fail" >&2
exit 0
