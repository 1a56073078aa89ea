# The project's front door. `make demo` and `make test` are what the README promises;
# both set up everything they need first (idempotent: a second run installs nothing).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup dist demo test check test-ui browser postgres debian-packages airflow lab-up lab-down clean

setup: $(VENV)/.installed $(VENV)/.jars $(VENV)/.broker-archive $(VENV)/.spark-archive

# Python deps: uv installs the lab's exact set (constraints.txt) within the package's ranges
# in ~30 s (pip takes minutes). pyspark comes as an sdist only: its wheel is built once per host
# (kafka_dr/lab/wheelhouse.py) rather than by every install. Bytecode is compiled at install, as
# pip does: uv leaves it to each import, and where PYTHONDONTWRITEBYTECODE is set every process
# would compile Airflow, GX and Spark's Python modules again (docs/testing.md).
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check uv
	wheels=$$(PYTHONPATH=plugins $(BIN)/python -m kafka_dr.lab.wheelhouse constraints.txt) && \
	  $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python --find-links "$$wheels" -e ".[dev]" -c constraints.txt
	touch $@

# Kafka broker + MirrorMaker 2 jars from Maven Central, cached in ~/.cache/kafka-dr.
$(VENV)/.jars: $(VENV)/.installed plugins/kafka_dr/lab/pom.xml
	$(BIN)/python -c "from kafka_dr.lab.jars import ensure_jars; print('kafka jars:', ensure_jars())"
	touch $@

# A lab broker's class archive (~/.cache/kafka-dr): brokers map their classes instead of
# loading them from the jars; a lab starts and restarts its brokers with less CPU.
$(VENV)/.broker-archive: $(VENV)/.jars
	$(BIN)/python -m kafka_dr.lab.broker_archive
	touch $@

# The Spark driver's class archive (~/.cache/kafka-dr): a driver maps its start-up classes
# instead of loading them from the jars; a restarted replication job flows again sooner.
$(VENV)/.spark-archive: $(VENV)/.installed
	$(BIN)/python -m kafka_dr.spark.class_archive
	touch $@

# The wheel and sdist a deployment installs (docs/install.md), with the build tools of the venv.
dist: $(VENV)/.installed
	$(BIN)/python -m build --no-isolation --outdir dist .

demo: setup
	$(BIN)/kafka-dr demo

# The whole suite in parallel workers, a test file each at a time (its module's lab stays in one
# worker), the longest files first (tests/conftest.py orders them); each worker has its own ports
# and folders. Most of the suite waits on brokers, JVMs and services (about half of 2 cores busy
# with two workers), so three workers share the 2 cores.
TEST_WORKERS ?= 3
# The installs run side by side (apt downloads while uv and Maven do), each target's output kept whole.
test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target setup debian-packages
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Between commits: ruff (lint and format), the import rules, the documented commands' arguments
# and every unit test; no lab, about a minute.
check: setup
	$(BIN)/pytest tests/unit -n 2 -q -p no:cacheprovider

# The operator-UI browser test drives Debian's chromium through its chromedriver; nothing
# is downloaded by the test itself. Installs them unless present (needs root or sudo).
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then echo "chromium: $$(chromium --version 2>/dev/null | head -1)"; \
	else SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null && chromium --version; fi

# What the suite needs of Debian (chromium + chromedriver, PostgreSQL, Prometheus + promtool and
# Alertmanager) in one apt transaction: whatever is missing (needs root or sudo).
debian-packages:
	@need=""; { command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || need="chromium chromium-driver"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need="$$need postgresql"; \
	{ command -v promtool >/dev/null && command -v prometheus-alertmanager >/dev/null; } || need="$$need prometheus prometheus-alertmanager"; \
	command -v redis-server >/dev/null || need="$$need redis-server"; \
	if [ -n "$$need" ]; then SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$need >/dev/null; fi; \
	echo "chromium: $$(chromium --version 2>/dev/null | head -1)"; echo "postgresql: $$(ls -d /usr/lib/postgresql/*/bin | tail -1)"; \
	echo "prometheus: $$(prometheus --version 2>/dev/null | head -1)"; echo "redis: $$(redis-server --version | cut -d' ' -f3)"

test-ui: setup browser postgres
	$(BIN)/pytest tests/e2e/test_operator_ui.py

# Airflow's metadata database and its Celery broker: Debian's PostgreSQL, run by the lab as a
# cluster of its own (`kafka-dr airflow up`; its programs live in
# /usr/lib/postgresql/<version>/bin, not on PATH), and Debian's redis-server on a Unix socket.
# Installs them unless present (needs root or sudo).
postgres:
	@need=""; ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need="postgresql"; \
	command -v redis-server >/dev/null || need="$$need redis-server"; \
	if [ -n "$$need" ]; then SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$need >/dev/null; fi; \
	echo "postgresql: $$(ls -d /usr/lib/postgresql/*/bin | tail -1)"; echo "redis: $$(redis-server --version | cut -d' ' -f3)"

# The lab's Airflow on PostgreSQL (CeleryExecutor, Redis), for the lab `make demo` left running.
airflow: setup postgres
	$(BIN)/kafka-dr airflow up

lab-up: setup
	$(BIN)/kafka-dr lab up

lab-down:
	$(BIN)/kafka-dr airflow down
	$(BIN)/kafka-dr lab down --wipe

clean: lab-down
	rm -rf $(VENV) .lab-test
