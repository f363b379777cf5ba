# Every target bootstraps .venv on first use: a fresh clone needs only python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help venv generate check-generated test lint format typecheck check demo clean phoenix-venv integration bench bench-cli bench-perfetto bench-check test-reliability

help:
	@echo "make test             run the test suite (bootstraps .venv)"
	@echo "make demo             run the instrumented example job (see README)"
	@echo "make test-reliability the fault, load and fuzz suite, slow cases included"
	@echo "make generate         render schema/ into the generated modules and docs"
	@echo "make check-generated  fail with a diff when a generated file is stale"
	@echo "make typecheck        mypy --strict on src, tests, examples and bench"
	@echo "make check            lint, format check, mypy --strict, generated check, tests"
	@echo "make bench            measure instrumentation costs against their baselines (BENCH_ARGS=--quick: ~20 s)"
	@echo "make bench-cli        time the trace commands at 10^6 spans against hand-written DuckDB queries"
	@echo "make bench-perfetto   convert --to perfetto against Chrome JSON at 10^6 spans: bytes, time, memory"
	@echo "make bench-check      run the benchmarks, exit 1 if a target is missed (by hand; never in CI)"
	@echo "make integration      round-trip spans through Arize Phoenix (OTLP gRPC + HTTP)"

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,sdk,cli]' --config-settings editable_mode=compat
	touch $(STAMP)

generate: $(STAMP)
	$(VENV)/bin/nemo-lens generate

check-generated: $(STAMP)
	$(VENV)/bin/nemo-lens generate --check

# One pytest worker per CPU (pytest-xdist); PYTEST_WORKERS=0 runs in this process.
PYTEST_WORKERS ?= auto

test: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS)

test-reliability: $(STAMP)
	NEMO_LENS_SLOW_TESTS=1 $(PY) -m pytest tests/reliability

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

typecheck: $(STAMP)
	$(PY) -m mypy --strict src tests examples bench

check: lint typecheck check-generated test

# DEMO_ARGS passes options to the job, e.g. make demo DEMO_ARGS="--iterations 1000".
demo: $(STAMP)
	$(PY) examples/train_demo.py $(DEMO_ARGS)

BENCH_ARGS ?=

bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

# The trace commands against hand-written DuckDB queries (BENCH_CLI_ARGS=--ten-million: minutes).
BENCH_CLI_ARGS ?=

bench-cli: $(STAMP)
	$(PY) -m bench.cli $(BENCH_CLI_ARGS)

# BENCH_PERFETTO_ARGS=--ten-million adds 10^7 spans (about 4 GB of JSON lines; half an hour).
bench-perfetto: $(STAMP)
	$(PY) -m bench.perfetto $(BENCH_PERFETTO_ARGS)

bench-check: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)
	$(PY) -m bench.check

phoenix-venv:
	bash scripts/phoenix-venv.sh

integration: $(STAMP) phoenix-venv
	NEMO_LENS_REQUIRE_PHOENIX=1 $(PY) -m pytest tests/integration

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache build *.egg-info src/*.egg-info
