# Two commands do all the set-up on a fresh machine: `make serve` and `make test` (see README.md).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The CPU build of torch lies on this machine's disk; GPU hosts bring their own torch.
TORCH ?= torch==2.13.0

.PHONY: install serve test selfcheck clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e ".[site,test]"
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

selfcheck: install
	$(BIN)/pkb selfcheck --device cpu --world-size 2

clean:
	rm -rf $(VENV) var test-output
