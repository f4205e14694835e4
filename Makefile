# Two commands do all the set-up on a fresh machine: `make serve` and `make test` (see README.md).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The CPU build of torch lies on this machine's disk; GPU hosts bring their own torch.
TORCH ?= torch==2.13.0

.PHONY: install serve test test-fast lint selfcheck clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --no-compile "$(TORCH)"
	$(BIN)/pip install -q --no-compile -e ".[site,test]"
	# Byte-compiled here, on every core, not left to first imports: rank processes run with PYTHONDONTWRITEBYTECODE
	# (and this machine kind sets it for every process), so no import ever writes a .pyc and each rank would compile
	# torch again. -q -q: compileall lists nothing; a file that does not compile (torch ships one) is not our failure.
	$(BIN)/python -m compileall -q -q -j 0 $(VENV)/lib evaluator problems leaderboard pkb_client >/dev/null || true
	touch $(STAMP)

install: $(STAMP)

serve: install
	bash scripts/sandbox_tools.sh
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_problems
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py runserver_with_worker 127.0.0.1:8000

test: install
	bash scripts/sandbox_tools.sh
	bash scripts/test.sh

# The edit loop: every test with none of the markers ranks, server, build and slow (pytest.ini; tests/lanes.py gives
# them by path and fixture). PKB_UNIT_LANE=1 makes a test in it that starts a rank worker, the judge, a gloo world, a
# server, a browser or a compiler fail. Only PostgreSQL is needed; nothing is installed. It runs on every core
# (pytest-xdist, one test database a worker): none of its tests measures time. `make test` (and CI) still run
# everything, these tests included.
test-fast: install
	bash scripts/services.sh --no-installs
	PKB_UNIT_LANE=1 $(BIN)/python -m pytest -q -p no:cacheprovider -n auto \
		-m "not ranks and not server and not build and not slow" tests

# ruff (lint, then the format check) and mypy, each configured in pyproject.toml; a few seconds with warm caches.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

selfcheck: install
	$(BIN)/pkb selfcheck --device cpu --world-size 2

clean:
	rm -rf $(VENV) var test-output
