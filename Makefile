# AgentCore Claude Kit — the README's commands. Every target installs what it needs through `setup`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK := node_modules/.bin/cdk
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PATH := $(CURDIR)/$(BIN):$(PATH)
STAGE ?= dev
PYTEST_ARGS ?=
# The suite runs in PYTEST_WORKERS processes (pytest-xdist), whole test files to a worker (module fixtures and a
# file's order stay as written); most of its time is spent waiting on subprocesses and loopback servers, so two
# workers on two cores take about half the time of one. 0 runs it in this process (a debugger, `-x` on the first
# failure in order).
PYTEST_WORKERS ?= 2
PYTEST_SPLIT = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: setup demo webhook-demo test test-fast synth bootstrap diff preflight deploy destroy lint bench clean distclean

## setup: create .venv (Python deps incl. dev tools) and node_modules (pinned CDK CLI); no-op when current.
## Also installs bubblewrap + socat (the agent's OS sandbox) when missing, on Debian/Ubuntu as root or with sudo.
setup: $(VENV)/.installed node_modules/.installed sandbox-tools

.PHONY: sandbox-tools
sandbox-tools:
	@if command -v bwrap >/dev/null && command -v socat >/dev/null; then exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "setup: bubblewrap and socat are missing (the agent's OS sandbox needs them; its tests fail without)."; \
	  echo "       install them with your package manager, e.g. 'dnf install bubblewrap socat' or 'apk add bubblewrap socat'."; \
	elif [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && apt-get install -y -qq bubblewrap socat >/dev/null; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
	  sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap socat >/dev/null; \
	else \
	  echo "setup: bubblewrap and socat are missing: run 'sudo apt-get install -y bubblewrap socat'"; \
	fi

$(VENV)/.installed: pyproject.toml requirements/dev.txt client/pyproject.toml
	@if [ -x $(BIN)/python ] && ! $(BIN)/python scripts/check_python.py --quiet; then \
	  echo "setup: .venv was built with an unsupported Python ($$($(BIN)/python -V 2>&1)); rebuilding it"; \
	  rm -rf $(VENV); \
	fi
	@test -x $(BIN)/python || { $(PYTHON) scripts/check_python.py && $(PYTHON) -m venv $(VENV); }
	@echo "setup: installing the Python packages into .venv (the first run downloads about 1.4 GB: a minute or more)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip "setuptools==80.9.0" "wheel==0.48.0"
	@# one line per package as pip takes it (a cold install is minutes of downloads, not silence); pipefail keeps
	@# pip's failure the recipe's
	@set -o pipefail; total=$$(grep -cE '^[A-Za-z0-9]' requirements/dev.txt); \
	  $(BIN)/python -m pip install --disable-pip-version-check --progress-bar off -r requirements/dev.txt \
	  | awk -v total="$$total" '/^Collecting /{n++; printf "setup: [%d/~%d] %s\n", n, total, $$2; fflush()} \
	    /^Installing collected/{print "setup: installing what was collected"; fflush()}'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e ./client  # builds with flit_core (isolated)
	@touch $@

node_modules/.installed: package.json package-lock.json
	@echo "setup: installing the pinned CDK CLI into node_modules"
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## demo: synth the stack, then run the agent locally (offline) and show a two-turn, resumable session
demo: setup
	$(BIN)/python scripts/demo.py

## webhook-demo: a signed issue comment `/agent fix …` through the real receiver, worker, runtime (fake CLI) and
## reporter, offline on loopback: the receiver's answer, the progress comment, the diff, the draft pull request
webhook-demo: setup
	$(BIN)/python scripts/webhook_demo.py

## test: the whole suite (unit, functional over HTTP, CDK synth + cdk-nag + cfn-lint, e2e with the real CLI)
test: setup
	$(BIN)/python -m pytest $(PYTEST_SPLIT) $(PYTEST_ARGS)

test-fast: setup
	$(BIN)/python -m pytest $(PYTEST_SPLIT) -m "not infra and not e2e" $(PYTEST_ARGS)

## synth: cdk synth (offline, no Docker needed), with cdk-nag; prints what cdk deploy would create and the time
synth: setup
	@start=$$(date +%s%N); $(CDK) synth --quiet -c stage=$(STAGE) && \
	  $(BIN)/python scripts/resource_summary.py cdk.out && \
	  echo "synth took $$(( ($$(date +%s%N) - start) / 1000000 )) ms"

## bootstrap: cdk bootstrap of the stage's account/region (once per account and region; needs AWS credentials)
bootstrap: setup
	$(CDK) bootstrap -c stage=$(STAGE)

## diff: what `make deploy` would change in the deployed stack (needs AWS credentials)
diff: setup
	$(CDK) diff -c stage=$(STAGE)

## preflight: `agentkit doctor` — checks the account before a deploy (credentials, region, bootstrap, model
## access, Powertools layers, Transaction Search, quotas); exits non-zero if something blocks the deploy
preflight: setup
	PYTHONPATH=$(CURDIR)/client$${PYTHONPATH:+:$$PYTHONPATH} $(BIN)/python -m agentkit.doctor --stage $(STAGE)

## deploy: cdk deploy (needs AWS credentials and a bootstrapped account/region)
deploy: setup
	$(CDK) deploy -c stage=$(STAGE) --require-approval broadening

destroy: setup
	$(CDK) destroy -c stage=$(STAGE)

## lint: ruff, mypy, cfn-lint on the synthesized templates, hadolint on the Dockerfile, zizmor on .github/
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(CDK) synth --quiet -c stage=$(STAGE) >/dev/null
	$(BIN)/cfn-lint cdk.out/*.template.json
	$(BIN)/hadolint Dockerfile
	$(BIN)/zizmor --offline .github/

## bench: the benchmarks (print measured figures and ratios)
bench: setup
	$(BIN)/python benchmarks/warm_turn.py
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/resume.py
	$(BIN)/python benchmarks/real_cli.py
	$(BIN)/python benchmarks/http_edge.py
	$(BIN)/python benchmarks/cold_start.py
	$(BIN)/python benchmarks/load.py
	$(BIN)/python benchmarks/faults.py
	$(BIN)/python benchmarks/sandbox.py

## clean: remove build output and local state; distclean: also the installed .venv and node_modules
clean:
	rm -rf cdk.out .agentkit .pytest_cache .ruff_cache .mypy_cache

distclean: clean
	rm -rf $(VENV) node_modules
