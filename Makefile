# Two entry points: `make demo` (set up, analyse a bundled real run) and `make test` (set up, run
# every test). Both create .venv on first use; PY=python3.11 or newer.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE ?= samples/gpu_hang

.PHONY: setup setup-test demo test test-fast typecheck lint clean

# analysis, dashboard and CLI: no torch needed
$(BIN)/ncclscope: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(BIN)/ncclscope

# tests: CPU torch (gloo jobs), hypothesis, selenium, mypy
$(VENV)/.test-deps: $(BIN)/ncclscope
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(VENV)/.test-deps

setup: $(BIN)/ncclscope

setup-test: $(VENV)/.test-deps

demo: setup
	$(BIN)/ncclscope analyze $(SAMPLE)

# mypy checks the package as installed: a tree of links maps analyzer/ to ncclscope/ and dashboard/
# to ncclscope/dashboard/
typecheck: setup-test
	rm -rf build/typecheck && mkdir -p build/typecheck/ncclscope
	for f in analyzer/*; do ln -s "$(CURDIR)/$$f" build/typecheck/ncclscope/; done
	ln -s "$(CURDIR)/dashboard" build/typecheck/ncclscope/dashboard
	$(BIN)/mypy

test: setup-test typecheck
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider

test-fast: setup-test
	$(BIN)/python -m pytest -q -m "not slow and not browser" -p no:cacheprovider

lint: setup-test
	$(BIN)/pip install -q ruff
	$(BIN)/ruff check analyzer dashboard tests
	$(MAKE) typecheck

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
