# kafka-logdoctor: the two quick-start commands, `make demo` and `make test`.
# Each builds a project-local environment (.venv) from scratch with pinned versions.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
# The C extension's source is in the checksum: a changed _speedups.c rebuilds the environment (and the .so).
EXT_C  := src/logdoctor/formats/_speedups.c
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements-lock.txt $(EXT_C) 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: demo test test-fast fuzz asan-check lint bench clean env

env: $(STAMP)

$(STAMP): pyproject.toml requirements-lock.txt $(EXT_C)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (Python 3.11+ is required)"; exit 64; }
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-lock.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	# bytecode for src/ as pip writes it for every installed library: with PYTHONDONTWRITEBYTECODE set,
	# an editable install would otherwise compile every module at every run (~0.1 s per command)
	$(PY) -m compileall -q src
	touch $@

# The main job on the embedded default: generate a sample and run logdoctor on it.
demo: $(STAMP)
	PYSPARK_PYTHON=$(abspath $(PY)) $(VENV)/bin/logdoctor demo

# pytest-xdist for make test and make test-fast: PYTEST_WORKERS processes (2: the 2-core machine of
# BENCHMARKS.md; each worker that reaches a Spark test starts its own JVM, 1-2 GiB), each given whole
# test modules, the longest first (tests/xdist_modules.py); PYTEST_WORKERS=0 runs in this one process.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile

# The whole test suite (ruff + pytest). CI runs exactly this. The oracles and tools the tests need
# (kafkajs from npm, the AWS CLI in .tools/awscli, Debian's chromium) are installed on first use.
test: $(STAMP)
	bash scripts/ensure-kafkajs.sh
	PYTHON=$(PYTHON) bash scripts/ensure-awscli.sh
	-bash scripts/ensure-chromium.sh
	$(VENV)/bin/ruff check src tests benchmarks
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q $(XDIST)

# The suite without the tests marked slow (crash matrices, every real segment damaged, the Spark
# oracle over every real record, browser rendering) nor those that start Spark (marked spark), in
# parallel as make test: what a developer runs between changes.
test-fast: $(STAMP)
	bash scripts/ensure-kafkajs.sh
	PYTHON=$(PYTHON) bash scripts/ensure-awscli.sh
	$(VENV)/bin/ruff check src tests benchmarks
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q $(XDIST) -m "not slow and not spark"

# The long fuzz run (README "Reliability"): FUZZ_EXAMPLES mutated real files per parser test, a
# twentieth of that many mutated log dirs through scan --deep. CI runs the default 300.
FUZZ_EXAMPLES ?= 30000
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/fuzz -p no:cacheprovider

# The C extension under ASan + UBSan (README "Reliability"): built with the sanitizers in a temporary
# copy of src/ (the .so of this checkout is left alone), then tests/formats and tests/fuzz (FUZZ_EXAMPLES,
# 300 by default) run against it; any sanitizer report fails. CI runs it after `make test`.
asan-check: $(STAMP)
	bash scripts/ensure-kafkajs.sh
	bash scripts/asan-check.sh $(abspath $(PY))

# Every benchmark of BENCHMARKS.md with its default (full) size; data goes to /tmp/logdoctor-bench.
bench: $(STAMP)
	$(PY) benchmarks/bench_records.py --size-mb 1024
	$(PY) benchmarks/bench_logdir.py
	$(PY) benchmarks/bench_scan.py --repeat 3
	$(PY) benchmarks/bench_rebuild.py --repeat 5
	$(PY) benchmarks/bench_dump.py --mb 100 --repeat 3
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark.py --records 600000
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_dataframe.py --records 600000 --repeat 3
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark_floor.py --rows 2400000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_census.py --brokers 100 1000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_remote_tier.py --records 400000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_tables.py --records 200000 --repeat 2
	$(PY) benchmarks/bench_disk_speed.py --gb 1 --partitions 50000 --repeat 3

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
