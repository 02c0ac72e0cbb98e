# The two commands: `make lab` and `make test`. Everything else here serves them.
# Each step leaves a stamp in .make/ so that re-running with nothing changed is quick.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
STAMP := .make
HOST ?= 127.0.0.1
PORT ?= 8888
# The CPU build of torch this repository is tested with (an unpinned torch pulls CUDA wheels).
TORCH_VERSION := 2.13.0
# Optional: replay a GPU recording in `make lab`, e.g. GPU_REPLAY=tests/data/gpu/2gpu-h100-nvlink.jsonl
GPU_REPLAY ?=

export PATH := $(BIN):$(PATH)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

TS_SOURCES := $(shell find extension -type f 2>/dev/null) package.json tsconfig.json
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test setup lint api-types test-python test-js test-ui test-wheel bench clean gpu-check gpu-check-import gpu-wheels

lab: setup $(STAMP)/bwrap $(STAMP)/gxx
	@echo "Starting JupyterLab with gpudojo on http://$(HOST):$(PORT)/lab (Ctrl-C stops it)"
	$(BIN)/jupyter lab --no-browser --ServerApp.ip=$(HOST) --ServerApp.port=$(PORT) $(ROOT_FLAG) \
		$(if $(GPU_REPLAY),--GPUDojo.gpu_replay_file=$(abspath $(GPU_REPLAY)),)

test: setup $(STAMP)/chromium $(STAMP)/slurm $(STAMP)/bwrap $(STAMP)/gxx
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-python
	$(MAKE) --no-print-directory test-js
	$(MAKE) --no-print-directory test-ui
	$(MAKE) --no-print-directory test-wheel
	@echo "make test: every suite passed"

setup: $(STAMP)/python $(STAMP)/labext-link

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Build tools first (jlpm comes with jupyterlab), then torch pinned, then the package.
$(STAMP)/tools: $(BIN)/python
	@mkdir -p $(STAMP)
	$(BIN)/pip install -q "jupyterlab>=4.6,<4.7" "hatchling>=1.25,<2" "hatch-jupyter-builder>=0.9,<0.11" "editables>=0.5"
	$(BIN)/pip install -q "torch==$(TORCH_VERSION)"
	@touch $@

$(STAMP)/node: $(STAMP)/tools package.json yarn.lock .yarnrc.yml
	$(BIN)/jlpm install
	@touch $@

$(STAMP)/labext: $(STAMP)/node $(TS_SOURCES)
	$(BIN)/jlpm build
	@touch $@

# Editable install: content/ and labs/ are read from this tree; the labextension built
# above is linked into the venv so that later rebuilds show up on reload.
$(STAMP)/python: $(STAMP)/labext pyproject.toml
	SKIP_JUPYTER_BUILDER=1 $(BIN)/pip install -q --no-build-isolation -e ".[test,course]"
	@touch $@

$(STAMP)/labext-link: $(STAMP)/python
	$(BIN)/jupyter-builder develop --overwrite . >/dev/null
	@touch $@

# Debian's chromium for the browser tests (never a browser downloaded by a test tool).
$(STAMP)/chromium:
	@mkdir -p $(STAMP)
	@if ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi
	@touch $@

# Debian's g++: CUDA C kernels run in the CPU emulator without a GPU (gpudojo.kernels.cpu_runner).
$(STAMP)/gxx:
	@mkdir -p $(STAMP)
	@if ! command -v g++ >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null; \
	fi
	@touch $@

# Debian's bubblewrap: a torchrun-nodes run keeps its rendezvous store in a network namespace
# of its own, and exercise checks run learner code in a sandbox (docs/SECURITY.md).
$(STAMP)/bwrap:
	@mkdir -p $(STAMP)
	@if ! command -v bwrap >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	fi
	@touch $@

# Debian's Slurm (controller, node daemon, client tools) and munge: the Slurm engine's tests
# start a one-host cluster of their own (tests/python/slurm_cluster.py), with their own
# config, key and sockets in a temporary folder; the packages' system services are not used.
$(STAMP)/slurm:
	@mkdir -p $(STAMP)
	@if ! command -v sbatch >/dev/null || ! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/munged ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; \
	fi
	@touch $@

# The API's TypeScript types are generated: openapi.json from the pydantic models, schema.ts
# from openapi.json (openapi-typescript). `make api-types` regenerates both; lint checks them.
OPENAPI_JSON := server/gpudojo/api/openapi.json
API_SCHEMA_TS := extension/src/api/schema.ts

api-types:  # needs the venv of `make setup`; not a dependency, so stale types cannot block it
	$(BIN)/python -m gpudojo.api.openapi $(OPENAPI_JSON)
	$(BIN)/jlpm openapi-typescript $(OPENAPI_JSON) -o $(API_SCHEMA_TS) --default-non-nullable false

lint: setup
	$(BIN)/ruff check server tests/python bench labs content/exercises
	$(BIN)/ruff format --check server tests/python bench labs content/exercises
	$(BIN)/python -m gpudojo.api.openapi --check $(OPENAPI_JSON)
	@$(BIN)/jlpm openapi-typescript $(OPENAPI_JSON) -o $(API_SCHEMA_TS) --default-non-nullable false --check >/dev/null 2>&1 || { \
		echo "$(API_SCHEMA_TS) is out of date with $(OPENAPI_JSON): run \`make api-types\` and commit it." >&2; exit 1; }
	$(BIN)/jlpm lint

test-python: setup $(STAMP)/bwrap $(STAMP)/gxx
	$(BIN)/python -m pytest -p no:cacheprovider --durations=40 tests/python

test-js: setup
	$(BIN)/jlpm test

test-ui: setup $(STAMP)/chromium $(STAMP)/slurm $(STAMP)/bwrap $(STAMP)/gxx
	$(BIN)/jlpm playwright test --config tests/ui/playwright.config.ts

# Build the wheel the way `pip install .` does (isolated, prebuilt labextension inside)
# and check it in a fresh venv that has no Node on its PATH.
test-wheel: setup
	bash tests/packaging/check_wheel.sh

bench: setup
	cd bench && $(BIN)/python bench_start.py && $(BIN)/python bench_devices.py && $(BIN)/python bench_telemetry.py && $(BIN)/python bench_compile.py && $(BIN)/python bench_runs.py

# --- GPU proof (bench/GPU_CHECK.md) ----------------------------------------------------------
# `make gpu-check` runs on the GPU machine without this Makefile's venv (python3 there has torch),
# so it does not depend on setup; here it uses the venv and rehearses (no GPU: CPU parts only).
GPU_CHECK_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
DIR ?= $(OUT)

gpu-check:
	@test -n "$(DIR)" || { echo "make gpu-check: give DIR=folder for the results (or set OUT)"; exit 2; }
	$(GPU_CHECK_PYTHON) bench/gpu_check.py --out "$(DIR)"

gpu-check-import: setup
	@test -n "$(DIR)" || { echo "make gpu-check-import: give DIR=folder that make gpu-check wrote"; exit 2; }
	$(BIN)/python bench/gpu_check_import.py "$(DIR)"

gpu-wheels: setup
	$(BIN)/python bench/gpu_check_wheels.py

clean:
	rm -rf $(STAMP) lib server/gpudojo/labextension tsconfig.tsbuildinfo dist test-results
