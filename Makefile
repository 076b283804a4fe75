# One entry point for users and CI. Every target that needs the environment builds it first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# Python's own default: keep the bytecode of what it imports (and pytest its rewritten test
# modules), which an environment that sets PYTHONDONTWRITEBYTECODE turns off. Without it every
# test process and every `twin` the tests start compiles the sources again: collecting the
# tests alone took 15 s instead of 5.5.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup browser lab-tools demo test bench lint docs app clean

$(STAMP): requirements/dev.lock pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), f"Python >= 3.11 needed, found {sys.version}"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The backtesters that read twin replay's exports (hftbacktest, NautilusTrader) pin numpy and
# pandas below dev's, so they live in an environment of their own (requirements/backtest.lock);
# tests/backtest runs them there on the twin's files.
BT_VENV := .venv-backtest
BT_STAMP := $(BT_VENV)/.installed-stamp
$(BT_STAMP): requirements/backtest.lock
	test -x $(BT_VENV)/bin/python || $(PYTHON) -m venv $(BT_VENV)
	$(BT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/backtest.lock
	touch $(BT_STAMP)

# Then the compiled engine's kernels, when this version of the sources has none cached yet, so
# the first `twin run` does not spend 20-60 s compiling (engine_ext/jit_cache.py).
setup: $(STAMP) $(BT_STAMP)
	@if $(PY) -c 'from engine_ext.jit_cache import is_cold; raise SystemExit(not is_cold())'; then \
		echo "compiling the simulator's kernels (once for this version of the sources)..."; \
		$(VENV)/bin/twin run tier1_peering_cpg --duration 0.01 --json >/dev/null; \
	fi

# Debian's Chromium drives the browser tests (Playwright never downloads its own browser here).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# Debian packages the tests and the lab need: sockperf (a system the project did not write,
# measured by `twin testbed lab`), etcd-server (the consensus cluster of `twin testbed cluster`),
# iproute2 (namespaces for veth and the cluster's bridge), openssl (TLS test certificates).
lab-tools:
	@if ! command -v sockperf >/dev/null || ! command -v etcd >/dev/null || ! command -v ip >/dev/null || ! command -v openssl >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq sockperf etcd-server iproute2 openssl >/dev/null; \
	fi

demo: setup
	$(VENV)/bin/twin demo

# Two at a time (pytest-xdist, one worker per core of a 2-core CI machine; an idle worker takes
# tests queued for the other), then alone the tests marked `exclusive`, which time real servers
# on this host; both parts always run.
TEST_WORKERS ?= 2
test: setup browser lab-tools
	@status=0; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not exclusive" || status=$$?; \
	$(PY) -m pytest -q -m exclusive || status=$$?; \
	exit $$status

bench: setup
	$(PY) -m benchmarks.run

# ruff, mypy and the layering contract (tools/layers.py: imports run one way, no cycles).
lint: setup
	$(VENV)/bin/ruff check twin engine_ext calibration app tests benchmarks tools
	$(VENV)/bin/ruff format --check twin engine_ext calibration app tests benchmarks tools
	$(VENV)/bin/mypy twin engine_ext calibration
	$(PY) tools/layers.py

# The figure tables in docs/*.md, regenerated from the committed results files.
docs: setup
	$(PY) tools/gendocs.py

# The explorer listens on 127.0.0.1 only; TWIN_APP_ADDRESS=0.0.0.0 make app serves other machines.
app: setup
	$(PY) -m app.serve --server.address $${TWIN_APP_ADDRESS:-127.0.0.1}

clean:
	rm -rf $(VENV) $(BT_VENV) .pytest_cache .mypy_cache .ruff_cache
