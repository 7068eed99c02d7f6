# The README's commands. CI (.ci/run) calls `make test`, exactly as a user would.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Offline and quiet: no telemetry, no notices, no version check, no Node end-of-life banner.
export CDK_DISABLE_CLI_TELEMETRY := 1
export CDK_DISABLE_VERSION_CHECK := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export UV_PYTHON_DOWNLOADS := never

UV := $(shell command -v uv 2>/dev/null || echo python3 -m uv)
RUN := $(UV) run --frozen
CDK := node_modules/.bin/cdk
CHECKOV := $(UV) tool run --from checkov==3.3.30 checkov

.PHONY: help dev install lint typecheck synth checkov pytest test demo snapshot-update deploy destroy clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.venv/.installed: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.8"
	$(UV) sync --frozen
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: .venv/.installed node_modules/.installed ## install Python and npm dependencies from the lock files

dev: install ## install, plus the pre-commit hooks
	$(RUN) pre-commit install 2>/dev/null || true

lint: install ## ruff and mypy --strict on stacks/ and lambdas/
	$(RUN) ruff check .
	$(RUN) mypy stacks lambdas offline ops app.py

synth: install ## synthesize the template into cdk.out/ (offline)
	$(CDK) synth --quiet

checkov: synth ## Checkov on the synthesized template
	$(CHECKOV) -d cdk.out --config-file .checkov.yaml

pytest: install ## the test suite, on every core (one synthesized app per worker)
	$(RUN) pytest -n auto --dist loadfile

test: lint checkov pytest ## every check: lint, types, synth, cdk-nag, cfn-lint, Checkov, tests

DEMO_ARGS ?=

demo: synth ## the main job: deploy the app offline and push orders through it (DEMO_ARGS="--orders 500 --chaos")
	$(RUN) ff-demo $(DEMO_ARGS)

.PHONY: bench
bench: synth ## measure transitions, cost, cold starts, synth, throughput and the AWS ceiling; writes docs/performance.md
	$(RUN) python bench/run.py

snapshot-update: install ## accept the current template as the reviewed snapshot
	$(RUN) pytest tests/infra/test_snapshot.py --snapshot-update

.PHONY: diagram
diagram: install ## redraw docs/architecture.png (from a fresh synth) and docs/workflow.png (from the ASL); needs graphviz
	@command -v dot >/dev/null 2>&1 || { echo "make diagram needs graphviz's dot: apt-get install graphviz (Debian/Ubuntu) or brew install graphviz (macOS)" >&2; exit 1; }
	$(RUN) --group docs python docs/diagrams/architecture.py
	$(RUN) --group docs python docs/diagrams/workflow.py

deploy: install ## deploy to the AWS account of your current credentials (needs cdk bootstrap once)
	$(CDK) deploy

destroy: install ## delete the stack (retained tables, queues and key stay; see README)
	$(CDK) destroy

SMOKE_ARGS ?=

.PHONY: smoke
smoke: install ## check the deployed stack end to end: ff-ops smoke (STACK=<name>, SMOKE_ARGS="--timeout 600 --json")
	$(RUN) ff-ops smoke $(if $(STACK),--stack $(STACK)) $(SMOKE_ARGS)

clean: ## remove build outputs
	rm -rf cdk.out .pytest_cache .mypy_cache .ruff_cache
