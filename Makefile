# Tidemark — the two everyday commands are `make run` and `make test`.
# Every target is idempotent and cheap when everything is already installed.

PYTHON     ?= python3
VENV       := .venv
PY         := $(VENV)/bin/python
NODE_DIR   := .node
# The Node clients the tests drive (mongosh, the Node driver, mongodb-memory-server-core), pinned by a
# committed lockfile: a fresh machine installs exactly these versions with `npm ci`, so a package published
# upstream in the meantime (or a registry that has a new release's parent but not yet its dependency)
# cannot change or break the install.
NPM_SPEC   := tests/clients/npm
NPM_STAMP  := $(NODE_DIR)/.installed
RUN_STAMP  := $(VENV)/.tidemark-run
STAMP      := $(VENV)/.tidemark-dev
PORT       ?= 27017
BIND_IP    ?= 127.0.0.1
DBPATH     ?= ./data
PYTEST_ARGS ?=
BENCH_ARGS ?=
# `make conformance`: pymongo's own test suite; MODES is any of sync,async,auth,testcommands, and
# pymongoarrow (pymongoarrow's suite: NumPy, pandas, Arrow, Polars readers) and motor (Motor's suite:
# the asyncio and Tornado driver), neither in the default.
MODES      ?= sync,async,auth,testcommands
CONFORMANCE_ARGS ?=
# `make run` hides connection accepted/ended lines unless QUIET=0; METRICS_PORT=9216 serves /metrics.
QUIET      ?= 1
METRICS_PORT ?=
# Extra tidemark flags for `make run`, e.g. ARGS="--auth" or ARGS="--logpath tidemark.log --logappend".
ARGS       ?=
RUN_FLAGS  := $(if $(filter 1 yes true,$(QUIET)),--quiet) $(if $(METRICS_PORT),--metricsPort $(METRICS_PORT))

.PHONY: run test test-fast lint bench conformance install npm clean distclean help

help:
	@echo "make run    - install (if needed) and start Tidemark on $(BIND_IP):$(PORT) with $(DBPATH)"
	@echo "              (QUIET=0 shows connection lines, METRICS_PORT=9216 serves Prometheus metrics,"
	@echo "              ARGS=\"--auth\" passes extra tidemark flags)"
	@echo "make npm    - install mongosh, the Node driver and mongodb-memory-server-core into .node/"
	@echo "              (use .node/node_modules/.bin/mongosh without running the tests)"
	@echo "make test   - install everything (venv, npm packages) and run the test suite (~14 min on 2 cores, +5 min first install)"
	@echo "make test-fast - the same without the tests marked slow (pytest -m 'not slow')"
	@echo "make lint   - ruff, import-linter contracts, mypy ($(MYPY_PACKAGES), the rest of server/), hadolint on docker/Dockerfile"
	@echo "make bench  - run the benchmark (BENCH_ARGS=...)"
	@echo "make conformance - pymongo's own test suite against fresh servers, compared with"
	@echo "              tests/conformance/known_differences.toml (MODES=sync,async,auth,testcommands;"
	@echo "              CONFORMANCE_ARGS='--files test/test_cursor.py'); long: an hour or more;"
	@echo "              MODES=pymongoarrow runs pymongoarrow's suite instead (about a minute),"
	@echo "              MODES=motor Motor's (asyncio and Tornado; about 8 minutes)"
	@echo "make clean  - remove caches and build output (keeps .venv, .node and data)"

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-install when the dependency list changes. Never install the standalone PyPI `bson` package:
# it replaces pymongo's bson module and breaks pymongo.
# `make run` needs only the server's own dependencies; test/lint/bench need the extras too.
$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,lint,bench]'
	@touch $@ $(RUN_STAMP)

install: $(STAMP)

# npm retries single fetches itself; the loop covers a registry that fails a whole install once.
$(NPM_STAMP): $(NPM_SPEC)/package.json $(NPM_SPEC)/package-lock.json
	@mkdir -p $(NODE_DIR)
	cp $(NPM_SPEC)/package.json $(NPM_SPEC)/package-lock.json $(NODE_DIR)/
	@for attempt in 1 2 3; do \
	  npm ci --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error && exit 0; \
	  echo "npm ci failed (attempt $$attempt of 3)"; sleep 15; \
	done; exit 1
	@touch $@

npm: $(NPM_STAMP)

run: $(RUN_STAMP)
	@mkdir -p $(DBPATH)
	@$(if $(filter 1 yes true,$(QUIET)),echo "tidemark: connection lines are hidden; 'make run QUIET=0' shows them")
	$(VENV)/bin/tidemark --port $(PORT) --bind_ip $(BIND_IP) --dbpath $(DBPATH) $(RUN_FLAGS) $(ARGS)

test: $(STAMP) npm
	$(PY) -m pytest $(PYTEST_ARGS) tests/

# The quick tier: everything but the tests marked slow (crash/recovery, large data, long fuzzing).
test-fast: $(STAMP) npm
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS) tests/

# What `make lint` type-checks with mypy (import names); how strictly is per package in pyproject.toml
# [tool.mypy]. tidemark.protocol, tidemark.storage and tidemark.timeseries have no errors at --strict; the
# rest of server/ (MYPY_SERVER_* below) none at its own override's strictness.
MYPY_PACKAGES := tidemark.protocol tidemark.storage tidemark.timeseries
# The rest of server/: the package's own modules and every subpackage but timeseries (found here, so a
# new module or subpackage is checked from the start).
MYPY_SERVER_MODULES := tidemark $(patsubst server/%.py,tidemark.%,$(filter-out server/__init__.py,$(wildcard server/*.py)))
MYPY_SERVER_PACKAGES := $(addprefix tidemark.,$(filter-out timeseries,$(patsubst server/%/__init__.py,%,$(wildcard server/*/__init__.py))))
# mypy and import-linter don't follow the editable install's import hook (server/ is installed as
# `tidemark`), so they read a tree staged under the import names: hard links, rebuilt by every `make lint`,
# with paths in mypy's messages mapped back to the repository's folders.
LINT_TREE  := .lint

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	@rm -rf $(LINT_TREE) && mkdir -p $(LINT_TREE) && cp -al server $(LINT_TREE)/tidemark \
		&& cp -al protocol storage $(LINT_TREE)/tidemark/
	cd $(LINT_TREE) && PYTHONPATH=. ../$(VENV)/bin/lint-imports --config ../pyproject.toml
	@cd $(LINT_TREE) && out=$$(../$(VENV)/bin/mypy --config-file ../pyproject.toml --cache-dir ../.mypy_cache \
		$(addprefix -p ,$(MYPY_PACKAGES) $(MYPY_SERVER_PACKAGES)) \
		$(addprefix -m ,$(MYPY_SERVER_MODULES))); rc=$$?; printf '%s\n' "$$out" \
		| sed -e 's#^tidemark/protocol/#protocol/#' -e 's#^tidemark/storage/#storage/#' -e 's#^tidemark/#server/#'; \
		exit $$rc
	$(VENV)/bin/hadolint docker/Dockerfile

bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

# Downloads pymongo's sdist (the installed version) into .conformance/ once, with its own venv there
# (pymongoarrow's and Motor's likewise, each with a venv of its own).
conformance: $(RUN_STAMP)
	$(PY) -m bench.conformance --modes $(MODES) $(CONFORMANCE_ARGS)

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .import_linter_cache .mypy_cache $(LINT_TREE)
	find . -path ./$(VENV) -prune -o -path ./$(NODE_DIR) -prune -o -name __pycache__ -type d -print \
		| xargs rm -rf

distclean: clean
	rm -rf $(VENV) $(NODE_DIR) .conformance
