# gavel — `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS ?= providers,annotation,dev

# Settings (GAVEL_RELEASE, API keys) may come from .env; values already in the environment win.
ifneq (,$(wildcard .env))
include .env
export
endif

.PHONY: help install data audit results figures test lint clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install gavel with its extras (every other target needs it)

data: $(STAMP) ## Find the release (GAVEL_RELEASE) or clone it into data/external/gavel
	$(PY) -m gavel data

audit: $(STAMP) ## Print every defect of the release, with counts
	$(PY) -m gavel audit

results: $(STAMP) ## Recompute data/results/ and docs/REPRODUCTION.md from the release
	$(PY) -m gavel results

figures: $(STAMP) ## Regenerate the figures (for now: the data audit; figures land with issue #4)
	$(PY) -m gavel audit

test: $(STAMP) ## Run the test suite (fixtures, and the release when GAVEL_RELEASE is set)
	$(PY) -m pytest -q

lint: $(STAMP) ## Lint the library and tests with ruff
	$(VENV)/bin/ruff check gavel tests benchmarks

clean: ## Remove caches and build outputs (keeps .venv)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
