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

.PHONY: help install system-deps data audit results figures executed-notebooks reproduce test lint clean

# Figure notebooks, executed by papermill into notebooks/executed/ (git-ignored). A notebook re-runs only
# when it, the result tables or the plotting code changed. Not figures: the item explorer (needs the release)
# and the LLM stage notebook.
FIGURE_NOTEBOOKS := $(filter-out notebooks/07_item_explorer.ipynb notebooks/08_llm_stage.ipynb,$(sort $(wildcard notebooks/[0-9]*.ipynb)))
EXECUTED := $(patsubst notebooks/%.ipynb,notebooks/executed/%.ipynb,$(FIGURE_NOTEBOOKS))
RESULT_TABLES := $(wildcard data/results/*.csv)

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install gavel with its extras (every other target needs it)

system-deps: ## Debian packages for the SLURM tests (slurm-wlm, munge); needs root
	@command -v slurmctld >/dev/null 2>&1 || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; }

data: $(STAMP) ## Find the release (GAVEL_RELEASE) or clone it into data/external/gavel
	$(PY) -m gavel data

audit: $(STAMP) ## Print every defect of the release, with counts
	$(PY) -m gavel audit

results: $(STAMP) ## Recompute data/results/ and docs/REPRODUCTION.md from the release
	$(PY) -m gavel results

figures: $(STAMP) ## Regenerate every figure (PNG + PDF in figures/) from data/results/, no release needed
	@$(MAKE) --no-print-directory -j2 executed-notebooks
	@echo "figures up to date in figures/"

executed-notebooks: $(EXECUTED)

notebooks/executed/%.ipynb: notebooks/%.ipynb $(RESULT_TABLES) gavel/figures.py gavel/results.py | $(STAMP)
	@mkdir -p notebooks/executed
	$(VENV)/bin/papermill --log-level WARNING --no-progress-bar -k python3 $< $@.tmp.ipynb
	@mv $@.tmp.ipynb $@

reproduce: data results figures ## Everything from the release: data, results, figures

test: $(STAMP) ## Run the test suite and the notebooks (nbval); the release tests need GAVEL_RELEASE
	$(PY) -m pytest -q tests notebooks --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg

lint: $(STAMP) ## Lint the library and tests with ruff
	$(VENV)/bin/ruff check gavel tests benchmarks

clean: ## Remove caches and build outputs (keeps .venv)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
