# kafka-logdoctor: the two quick-start commands, `make demo` and `make test`.
# Each builds a project-local environment (.venv) from scratch with pinned versions.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
# Every input of the environment is in the checksum: a changed lock, pyproject.toml, install script or
# _speedups.c rebuilds the environment (and the .so). Two levels: `make demo` needs only what logdoctor runs
# with (requirements-run-lock.txt); `make env` and every test target add the test tools (requirements-lock.txt).
EXT_C  := src/logdoctor/formats/_speedups.c
ENV_IN := pyproject.toml requirements-lock.txt requirements-run-lock.txt scripts/install-env.sh $(EXT_C)
SUM    := $(shell cat $(ENV_IN) 2>/dev/null | cksum | cut -d' ' -f1)
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
STAMP  := $(VENV)/.installed-$(SUM)
# the installer: uv (pinned in scripts/install-env.sh, installed into .tools/uv), or pip
INSTALLER ?= uv

.PHONY: demo test test-fast docs fuzz asan-check lint bench clean env layouts

env: $(STAMP)

$(RUN_STAMP): $(ENV_IN)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (Python 3.11+ is required)"; exit 64; }
	PYTHON=$(PYTHON) INSTALLER=$(INSTALLER) bash scripts/install-env.sh create $(VENV) requirements-run-lock.txt
	touch $@

$(STAMP): $(RUN_STAMP)
	PYTHON=$(PYTHON) INSTALLER=$(INSTALLER) bash scripts/install-env.sh add $(VENV) requirements-lock.txt
	touch $@

# The main job on the embedded default: generate a sample and run logdoctor on it. The run lock's libraries
# are installed without bytecode: the demo writes that of the modules it imports (into .venv), whatever
# PYTHONDONTWRITEBYTECODE says, instead of the install compiling every module of every library first.
demo: $(RUN_STAMP)
	PYTHONDONTWRITEBYTECODE= PYSPARK_PYTHON=$(abspath $(PY)) $(VENV)/bin/logdoctor demo

# pytest-xdist for make test and make test-fast: PYTEST_WORKERS processes (2: the 2-core machine of
# BENCHMARKS.md; each worker that reaches a Spark test starts its own JVM, 1-2 GiB), each given whole
# test modules, the longest first (tests/xdist_modules.py); PYTEST_WORKERS=0 runs in this one process.
# make test runs SUITE_WORKERS of them (3 on the 2 cores: most of its time is spent waiting on brokers,
# Spark and other JVMs, 1.2-1.3 cores busy on average with 2 workers; docs/tests.md); make test-fast and
# make asan-check, all CPU, PYTEST_WORKERS.
PYTEST_WORKERS ?= 2
SUITE_WORKERS ?= 3
XDIST := -n $(PYTEST_WORKERS) --dist loadfile
# pytest with bytecode written whatever PYTHONDONTWRITEBYTECODE says: pytest keeps each test module's
# assertion-rewritten code in tests/**/__pycache__ only when bytecode may be written, and without it
# every worker (and every pytest a test starts) rewrites and compiles all ~200 test modules again
# (~4 s of CPU per process).
PYTEST := PYTHONDONTWRITEBYTECODE= PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest

# The documentation site (docs/, mkdocs.yml; its home page is README.md) built with --strict: a broken
# link or anchor, in README.md or any page, fails it. Into .site/ (git-ignored); make test runs it.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet

# The whole test suite (docs site, ruff, pytest). CI runs exactly this. The oracles and tools the tests
# need (the real Kafka brokers of brokers/*/pom.xml from Maven Central, checked against brokers/jars.lock;
# Apicurio Registry of registry/pom.xml, checked against registry/jars.lock;
# kafkajs from npm, the AWS CLI in .tools/awscli, Debian's chromium and strace; Debezium's connector plugins
# of connect/pom.xml and Debian's PostgreSQL 15 and MariaDB 10.11 for the CDC tests; Kafka Streams of
# streams/pom.xml, checked against streams/jars.lock, for the streams-group tests) are installed on first
# use.
# --durations: the slowest test phases listed at the end, where the suite's minutes go (BENCHMARKS.md).
# The environment (then the docs) and the tools are installed side by side, in groups that share nothing
# (each step a no-op when its tool is there): the kafkajs oracle (npm, its codecs compiled), the Maven
# resolves one after the other (one local repository, .tools/m2), Debian's packages one after the other (one
# dpkg lock; Chromium optional) and the AWS CLI; a group's output is printed whole when it ends.
TEST_TOOLS := tools-kafkajs tools-maven tools-debian tools-awscli
.PHONY: $(TEST_TOOLS)
tools-kafkajs:
	bash scripts/ensure-kafkajs.sh
tools-maven:
	bash scripts/ensure-kafka.sh
	bash scripts/ensure-apicurio.sh
	bash scripts/ensure-debezium.sh
	bash scripts/ensure-kafka-streams.sh
tools-debian:
	-bash scripts/ensure-chromium.sh
	bash scripts/ensure-strace.sh
	bash scripts/ensure-databases.sh
tools-awscli:
	PYTHON=$(PYTHON) bash scripts/ensure-awscli.sh
test:
	$(MAKE) --no-print-directory -j5 --output-sync=target docs $(TEST_TOOLS)
	$(VENV)/bin/ruff check src tests benchmarks
	$(PYTEST) -q -n $(SUITE_WORKERS) --dist loadfile --durations=40

# The suite without the tests marked slow (crash matrices, every real segment damaged, the Spark
# oracle over every real record, browser rendering, the long matrices' cases but one and the real log dirs
# but realworld.FAST_LOG_DIRS) nor those that start Spark (marked spark) or real Kafka brokers (marked kafka:
# `pytest tests/brokers` runs those alone), nor those over the tier's time budget (tests/fast_tier_budget.txt,
# written by scripts/fast-tier-budget.py), and each property test with a
# quarter of its examples (tests/tiers.py), in parallel as make test: what a developer runs between changes.
test-fast: $(STAMP) docs
	bash scripts/ensure-kafkajs.sh
	bash scripts/ensure-kafka.sh
	PYTHON=$(PYTHON) bash scripts/ensure-awscli.sh
	$(VENV)/bin/ruff check src tests benchmarks
	LOGDOCTOR_TEST_TIER=fast $(PYTEST) -q $(XDIST) -m "not slow and not spark and not kafka"

# The long fuzz run (docs/reliability.md): FUZZ_EXAMPLES mutated real files per parser test, a
# twentieth of that many mutated log dirs through scan --deep; and the typed decoders' property tests, about
# 4-5 x FUZZ_EXAMPLES payloads per format (tests/typed/typed_fuzz.py). CI runs the default counts.
FUZZ_EXAMPLES ?= 30000
TYPED_FUZZ := tests/typed/test_avro_property.py tests/typed/test_protobuf_property.py tests/typed/test_json_hostile.py
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/fuzz -p no:cacheprovider
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q $(TYPED_FUZZ) -k any_bytes -p no:cacheprovider

# The C extension under ASan + UBSan (docs/reliability.md): built with the sanitizers in a temporary
# copy of src/ (the .so of this checkout is left alone), then tests/formats and tests/fuzz (FUZZ_EXAMPLES,
# 300 by default) and ASAN_TYPED (the typed tables' frame scan and payload spans) run against it, in
# PYTEST_WORKERS processes as make test (each loads the sanitizers); any sanitizer report fails. CI runs it
# after `make test`.
ASAN_TYPED := tests/typed/test_registry_framing.py tests/typed/test_typed_resolver.py
asan-check: $(STAMP)
	bash scripts/ensure-kafkajs.sh
	bash scripts/asan-check.sh $(abspath $(PY)) $(XDIST) tests/formats tests/fuzz $(ASAN_TYPED)

# Every benchmark of BENCHMARKS.md with its default (full) size; data goes to /tmp/logdoctor-bench.
bench: $(STAMP)
	$(PY) benchmarks/bench_records.py --size-mb 1024
	$(PY) benchmarks/bench_logdir.py
	$(PY) benchmarks/bench_scan.py --repeat 3
	$(PY) benchmarks/bench_rebuild.py --repeat 5
	$(PY) benchmarks/bench_dump.py --mb 100 --repeat 3
	$(PY) benchmarks/bench_replay.py --records 1000000 --repeat 3
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark.py --records 600000
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_dataframe.py --records 600000 --repeat 3
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark_floor.py --rows 2400000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_census.py --brokers 100 1000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_remote_tier.py --records 400000 --repeat 2
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_tables.py --records 200000 --repeat 2
	$(PY) benchmarks/bench_disk_speed.py --gb 1 --partitions 50000 --repeat 3

# The internal-record layout tables, from the Kafka JSON definitions in ../shared and inside the installed
# Kafka jars (.tools/kafka: 4.3.1, 4.4.0), read in place.
layouts: $(STAMP)
	bash scripts/ensure-kafka.sh
	$(PY) scripts/gen_kafka_layouts.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .site
