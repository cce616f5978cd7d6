# The whole set-up on a fresh machine: `make demo` and `make test` build .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint test-integration test-gpu test-all docs bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: the CPU build on this disk; an unpinned torch pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,serve,docs]'
	# test-only reference for graph walks; its metadata pins numpy < 2, yet it runs beside numpy 2
	$(BIN)/pip install --quiet --no-deps node2vec==0.5.0
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bertology demo

# Tiers (markers in pyproject.toml): `test` = unit, parity, property and known-answer tests, one
# worker per core (each worker one thread, so the cores are not oversubscribed); `test-integration` =
# whole jobs, subprocesses, torchrun and the browser, one at a time (some run on the clock);
# `test-gpu` = what needs a CUDA GPU (skipped without one); `test-all` = everything, slow runs included.
test: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n auto

test-integration: $(STAMP)
	$(BIN)/python -m pytest -q -m 'integration and not slow'

test-gpu: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

# the documentation site (mkdocs.yml) into site/; a warning, a broken link or anchor fails the build
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# pycodestyle and pyflakes rules ([tool.ruff] in pyproject.toml) and the formatter's layout
lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

bench: $(STAMP)
	$(BIN)/python bench/encoder.py

clean:
	rm -rf $(VENV) build site src/*.egg-info
