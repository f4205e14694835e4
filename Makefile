# Two commands do all the set-up on a fresh machine: `make serve` and `make test` (see README.md).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The CPU build of torch lies on this machine's disk; GPU hosts bring their own torch.
TORCH ?= torch==2.13.0

.PHONY: install serve test test-fast selfcheck clean

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

# The edit loop (a few minutes): the contract and the layers, the timing rules, the judge's units and the site's
# models, services and upload parser; no rank process, no browser. `make test` (and CI) still run everything.
FAST_TESTS := tests/test_layers.py tests/test_one_decision.py tests/test_names.py \
	tests/evaluator/test_timing_rules.py tests/evaluator/test_timing_torch_free.py tests/evaluator/test_stats.py \
	tests/evaluator/test_pairs.py tests/evaluator/test_compare.py tests/evaluator/test_messages.py \
	tests/evaluator/test_outputs.py tests/evaluator/test_nulls.py tests/evaluator/test_dtype_rule.py \
	tests/evaluator/test_backends.py tests/redteam/test_secret_seeds.py \
	tests/evaluator/test_contract.py tests/test_client_alone.py \
	tests/site/test_models.py tests/site/test_uploads.py tests/site/services
test-fast: install
	bash scripts/test.sh -q -x $(FAST_TESTS)

selfcheck: install
	$(BIN)/pkb selfcheck --device cpu --world-size 2

clean:
	rm -rf $(VENV) var test-output
