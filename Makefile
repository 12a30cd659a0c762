# Two entry points: `make demo` (set up, analyse a bundled real run) and `make test` (set up, run
# every test). Both create .venv on first use; PY=python3.11 or newer.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE ?= samples/gpu_hang

.PHONY: setup demo test test-fast lint clean

$(BIN)/ncclscope: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(BIN)/ncclscope

setup: $(BIN)/ncclscope

demo: setup
	$(BIN)/ncclscope analyze $(SAMPLE)

test: setup
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow and not browser" -p no:cacheprovider

lint: setup
	$(BIN)/pip install -q ruff mypy
	$(BIN)/ruff check analyzer dashboard tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
