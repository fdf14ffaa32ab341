# olmtool developer entry points. `make demo` and `make test` work on a fresh machine:
# they create .venv and install olmtool with its test dependencies first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= auto

.PHONY: help install assets demo generate lint format test test-unit test-e2e clean

help:
	@echo "make demo       install, then generate and check the etcd operator's CRDs"
	@echo "make test       install, lint, check generated files, unit tests, then e2e tests"
	@echo "make test-unit  fast loop: unit tests only"
	@echo "make test-e2e   tests against a real kube-apiserver (builds it on first use)"
	@echo "make generate   regenerate operator/config/crd from the Python schemas"
	@echo "make assets     find or build kube-apiserver/etcd (cached in ~/.cache/olmtool)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

install: $(STAMP)

assets: install
	$(BIN)/python -m olmtool.cluster.assets

demo: install
	$(BIN)/olmtool crd generate
	$(BIN)/olmtool crd validate --strict operator/config/crd

generate: install
	$(BIN)/olmtool crd generate

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test-unit: install
	$(BIN)/pytest -m "not e2e" -n $(PYTEST_WORKERS) -q

test-e2e: install
	$(BIN)/pytest -m e2e -q

test: lint
	$(BIN)/olmtool crd generate --check
	$(MAKE) test-unit
	$(MAKE) test-e2e

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
