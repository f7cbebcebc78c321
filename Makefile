# Two commands on a fresh machine (README):  make serve   |   make test
# Each creates .venv and installs what it needs from pyproject.toml on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test lint format install install-test system-deps web-test-deps bench clean

$(BIN)/vramwise: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# editable: a path .pth, and the packages' bytecode written by the build (pyproject.toml, build_hooks.py)
	$(BIN)/pip install -q -e .
	@touch $@

install: $(BIN)/vramwise

$(VENV)/.test-installed: pyproject.toml $(BIN)/vramwise
	$(BIN)/pip install -q -e ".[test,slack,postgres,trace,otel]"
	@touch $@

install-test: $(VENV)/.test-installed

# System packages some tests use (Debian; needs root): headless Chromium + a CJK font for the browser
# test, a PostgreSQL server for the multi-replica store test, tmux for the terminal quiz test. Each test
# skips with a reason when missing.
SYSTEM_PKGS := chromium fonts-wqy-microhei postgresql tmux
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium fonts-wqy-microhei"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null) \
	      || echo "could not install:$$missing (the tests that need them will be skipped)"; \
	  else echo "missing:$$missing and not root (the tests that need them will be skipped)"; fi; \
	fi

# axe-core for the browser accessibility test (tests/test_web_accessibility_browser.py), in .node/; the
# test skips with a reason when npm or the package is missing
AXE_VERSION := 4.14.1
AXE := .node/node_modules/axe-core/axe.min.js
web-test-deps:
	@if [ ! -f $(AXE) ]; then \
	  if command -v npm >/dev/null; then \
	    npm install --prefix .node axe-core@$(AXE_VERSION) --no-audit --no-fund --no-save >/dev/null \
	      || echo "could not install axe-core (the accessibility test will be skipped)"; \
	  else echo "missing: npm for axe-core (the accessibility test will be skipped)"; fi; \
	fi

serve: install
	$(BIN)/vramwise serve --host $(HOST) --port $(PORT)

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: install-test system-deps web-test-deps lint
	$(BIN)/python -m pytest -q

format: install-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install-test
	$(BIN)/python benchmarks/estimator_speed.py
	$(BIN)/python benchmarks/planner_instructions.py
	$(BIN)/python benchmarks/planner_floor.py
	$(BIN)/python benchmarks/worker_instructions.py
	$(BIN)/python benchmarks/answer_latency.py
	$(BIN)/python benchmarks/answer_length.py
	$(BIN)/python -m benchmarks.accuracy.run
	$(BIN)/python benchmarks/load_chat.py
	$(BIN)/python benchmarks/slack_load.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache test-output
