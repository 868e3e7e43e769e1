# The workbook's commands. `make lab` to learn, `make test` to check everything.
# Every target installs what it needs into .venv first; nothing is installed by hand.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Re-install only when the dependency lists or the package metadata changed. A learner's
# `make lab` installs what the notebooks need; the test targets add the test tools.
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test
# As root (containers, CI) Jupyter refuses to start without --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
# pytest's own options for the notebooks: lax nbval in this environment, narrow sanitize file;
# then every passing notebook run a second time on the same kernel, in JupyterLab, with every
# widget clicked (--nbval-lab; --nbval-rerun does the second run in nbval's kernel, no browser).
NBVAL_BASE := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
NBVAL  := $(NBVAL_BASE) --nbval-lab
# Two workers (one per core on the reference machine). --dist loadscope keeps each notebook's
# cells on one worker, in order, in one kernel; each worker starts its own JupyterLab and Chromium
# when its first notebook comes. --no-loadscope-reorder keeps conftest.py's longest-first order
# (xdist would otherwise sort the files by their number of tests, not by their time).
JOBS   ?= 2
PARALLEL := -n $(JOBS) --dist loadscope --no-loadscope-reorder
NB     ?= notebooks/*.ipynb
# The browser tests drive Debian's Chromium (no browser download).
CHROMIUM ?= /usr/bin/chromium

.PHONY: help install browser lab test quick check lint unit e2e nbval bench execute export site clean

help:
	@echo "make lab      open the workbook in JupyterLab (installs first)"
	@echo "make test     lint, unit tests, every notebook under nbval, then run again in JupyterLab with its widgets clicked"
	@echo "make quick    lint and the unit tests, without the notebooks (the inner loop)"
	@echo "make check NB=notebooks/NN_name.ipynb   one notebook: nbval, then its second run in JupyterLab"
	@echo "make bench    run every registered comparison at full size (ARGS='--quick' for small)"
	@echo "make execute  re-run notebooks in fresh kernels at full size and save them (NB=...)"
	@echo "make export   copy the notebooks' #| export cells into helpers/lessons/"
	@echo "make site     the saved notebooks as a searchable offline site in _site/ (open _site/index.html)"
	@echo "make clean    remove .venv"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 10) <= v <= (3, 13) else "Python 3.10-3.13 is needed for TensorFlow 2.21; found %d.%d. Set PYTHON=python3.11 (or similar)." % v)'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { echo "Could not create $(VENV): on Debian/Ubuntu run 'apt-get install python3-venv'."; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

$(TSTAMP): $(STAMP) requirements-test.txt
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $(TSTAMP)

install: $(TSTAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --ip=127.0.0.1 $(ROOT_FLAG) --ServerApp.root_dir=. \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

# Debian packages some tests use: Chromium for the end-to-end tests, tcmalloc and jemalloc for
# notebook 10's allocator comparison. As root with apt-get (CI, containers) install what is
# missing; elsewhere say how, and those tests skip with a message (in CI a missing one fails).
SYSTEM_LIBS := libtcmalloc-minimal4 libjemalloc2
browser:
	@missing=""; [ -x "$(CHROMIUM)" ] || missing="chromium"; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for p in $(SYSTEM_LIBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; fi; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing Debian packages for the tests:$$missing (apt-get)..."; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
	    || echo "WARNING: could not install$$missing: the tests that need them will not run."; \
	else \
	  echo "NOTE: missing$$missing and no root apt-get to install them: the tests that need them will be skipped."; \
	  echo "      Debian/Ubuntu: sudo apt-get install$$missing (or set CHROMIUM=/path/to/chromium)."; \
	fi

lint: $(TSTAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: $(TSTAMP)
	$(BIN)/python -m pytest tests --durations=10 --ignore=tests/browser

e2e: $(TSTAMP) browser
	WORKBOOK_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests/browser --durations=10

nbval: $(TSTAMP)
	WORKBOOK_SCALE=small $(BIN)/python -m pytest $(NBVAL_BASE) --nbval-rerun --durations=10 $(NB)

# The one test command (README, CI): lint, then unit, browser and notebook tests in one run.
test: lint browser
	WORKBOOK_SCALE=small WORKBOOK_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest $(PARALLEL) $(NBVAL) --durations=15 tests notebooks

# The inner loop: lint, then the unit tests (no notebook runs, no browser) on both cores.
quick: lint
	WORKBOOK_SCALE=small $(BIN)/python -m pytest $(PARALLEL) --durations=5 -m "not browser" tests

# One notebook fully: nbval, then its second run in JupyterLab with every widget clicked.
# NB names one notebook.
check: $(TSTAMP) browser
	@case "$(NB)" in *'*'*|*' '*|'') echo "make check needs one notebook: make check NB=notebooks/00_start_here.ipynb"; exit 2;; esac
	@test -f "$(NB)" || { echo "no such notebook: $(NB)"; exit 2; }
	WORKBOOK_SCALE=small WORKBOOK_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest $(NBVAL) $(NB)

bench: $(STAMP)
	$(BIN)/python -m helpers.bench $(ARGS)

execute: $(STAMP)
	WORKBOOK_SCALE=full $(BIN)/python -m helpers.nbtools execute $(NB)

# Lesson code lives in the notebooks; cells marked `#| export` are copied into helpers/lessons/
# for the bench, later notebooks and child programs. tests/test_export.py fails when stale.
export: $(STAMP)
	$(BIN)/python -m helpers.export

# The saved notebooks and the README as a static, searchable site (no execution; works offline).
site: $(TSTAMP)
	$(BIN)/python -m helpers.site

clean:
	rm -rf $(VENV)
