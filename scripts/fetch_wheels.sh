#!/usr/bin/env bash
# Wheels for the site on a GPU host that has no network (issue 34): everything `pip install '.[site]'` needs beyond
# torch (which the host brings, with numpy and Triton), for CPython 3.12 on manylinux x86_64, into .sbx/wheels
# (gitignored), plus Debian's bubblewrap .deb in .sbx/. Prints each wheel's size and the total: a device call carries
# at most 64 MiB with the working tree (benchmarks/gpu_site_run.sh installs them there with --no-index --no-deps).
#
#   bash scripts/fetch_wheels.sh            (network: PyPI and Debian's archive)
#
# Left out, and why (each is only needed for what the embedded run does not do):
#   psycopg, psycopg-binary   PostgreSQL's driver: the run uses SQLite (DATABASE_URL unset), nothing imports it;
#   torch, numpy, triton      the host's own (carried copies would shadow the host's CUDA build);
#   rich                      the host has it (pkb submit's progress bar only, and --json prints none).
# plotly stays: the embedded server runs collectstatic at start, whose finder (leaderboard/staticfiles.py) copies
# plotly.min.js out of the plotly package; without it the server does not start. Its Python code is never imported on
# a request (leaderboard/scoring/plots.py builds plain dicts), but the package must be there.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.sbx/wheels
PYTHON=${PYTHON:-python3}
rm -rf "$DEST"
mkdir -p "$DEST"

# The site extra of pyproject.toml, read from it (one list to keep), less what is left out above.
mapfile -t REQUIREMENTS < <("$PYTHON" - <<'EOF'
import re, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["site"]
skip = re.compile(r"^(psycopg)\b")
for requirement in extra:
    if not skip.match(requirement):
        print(requirement)
EOF
)
echo "site requirements: ${REQUIREMENTS[*]}"

PLATFORMS=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
           manylinux_2_5_x86_64 manylinux1_x86_64 any; do
  PLATFORMS+=(--platform "$tag")
done
# The versions the project's venv runs here (and its tests pass with), where it has them: the host runs the same.
CONSTRAINTS=()
if [ -x .venv/bin/python ]; then
  .venv/bin/python -m pip freeze 2>/dev/null | grep -E '^[A-Za-z0-9_.-]+==' >"$DEST/../constraints.txt" || true
  CONSTRAINTS=(-c "$DEST/../constraints.txt")
fi
"$PYTHON" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${PLATFORMS[@]}" \
  "${CONSTRAINTS[@]}" -d "$DEST" "${REQUIREMENTS[@]}" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)

# What the host already has and must keep as its own (see above): removed if a dependency pulled it in.
for name in torch numpy triton rich psycopg psycopg_binary; do
  rm -f "$DEST/${name}"-[0-9]*.whl
done

# One version of each distribution: two make `pip install --no-deps *.whl` fail on the host.
dupes=$(ls "$DEST" | sed -E 's/-[0-9][^-]*-.*//' | tr 'A-Z-' 'a-z_' | sort | uniq -d)
if [ -n "$dupes" ]; then
  echo "two versions of: $dupes" >&2
  exit 1
fi

if ! ls .sbx/bubblewrap_*.deb >/dev/null 2>&1; then  # apt-get update first where the lists are missing
  (cd .sbx && { apt-get download bubblewrap >/dev/null 2>&1 || { apt-get update -qq && apt-get download bubblewrap; }; })
fi

echo
ls -l "$DEST" | awk 'NR > 1 {printf "%8.2f MiB  %s\n", $5 / 1048576, $9}' | sort -rn
echo
echo "wheels: $(ls "$DEST" | wc -l) files, $(du -sb "$DEST" | awk '{printf "%.1f MiB", $1 / 1048576}')"
echo "bubblewrap: $(ls .sbx/bubblewrap_*.deb) $(du -b .sbx/bubblewrap_*.deb | awk '{printf "%.2f MiB", $1 / 1048576}')"
echo "the working tree that travels: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | awk '{printf "%.1f MiB", $1 / 1048576}') tracked"
echo "carry: .sbx ($(du -sb .sbx | awk '{printf "%.1f MiB", $1 / 1048576}')); a device call carries at most 64 MiB in all"
