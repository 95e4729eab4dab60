"""How a parallel run hands out the suite (``make test``: pytest-xdist, ``-n 3 --dist loadfile``).

A worker is given whole test modules: a module runs on one worker, in its own order, so its
module-scoped fixtures (generated fleets, Spark clusters, servers) are built once and its tests share
them as they do in one process. The modules of a :data:`SERIAL_GROUPS` group go to one worker, one
after the other: what must not run at the same time as each other. Of the modules left, the longest is
handed out first (:data:`LONGEST`, then by number of tests), so no long module starts
last while the other worker has nothing left to do.

The order changes only which worker runs a module and when, never what a test does or checks.
"""

from __future__ import annotations

from collections import OrderedDict

from xdist.scheduler import LoadScopeScheduling

# The Spark standalone clusters start 3 JVMs and 2 executors each: two at once, beside each worker's
# own Spark session, would crowd the 24 GiB machine.
SERIAL_GROUPS = {
    "tests/spark/test_cluster.py": "spark-standalone",
    "tests/spark/test_tables_cluster.py": "spark-standalone",
}

# The longest work units, longest first; a unit not named here comes after them: first those of
# :data:`SPARK_DIR` (each test a Spark job or a CLI run that starts its own JVM: seconds to a minute a
# test, so a module of one or two such tests is long), then the rest; in each, the one with the most tests
# first (pytest-xdist's own order). The figures: setup + call + teardown summed per module, of a whole
# `make test` (the Spark modules, test_move_partition, test_dump_remote, test_inventory_census) and of a
# `make test-fast` at load 6-13 (the others: BENCHMARKS.md, "Test suite and demo"). A module of few long tests
# left unnamed would be handed out last, after every module of many short ones, and run alone at the end
# while the other worker has nothing left to do (test_xdist_terminal.py did: 174 s; a Spark module added
# without a figure here is handed out before the unnamed others for the same reason).
LONGEST: list[str] = [
    # 320 s in the fresh-clone .ci/run of 97b05d8, the longest module: a cluster of 3 static controllers on
    # 3.9.1, one grown to 3 dynamic voters, one of 1 controller, each rebuilt and restarted
    # (alone beside main's at load 14-19: 259 s main, 205 s since the Kafka JVMs' class archives, made in the
    # run; 117 s with them made before)
    "tests/brokers/test_broker_quorum_rebuild.py",
    "tests/spark/test_tables_commit.py",  # 476 s; ~420 s since 2 kills fewer (alone, load 18-20: 777 -> 687)
    "tests/spark/test_object_storage.py",  # 372 s; ~300 s since v0/v1 decoding (alone, load 9-16: 632 -> 510)
    # a broker, Apicurio Registry started twice, and three exports' Spark JVMs (Parquet, Delta, Iceberg)
    "tests/producers/test_real_serializers.py",  # 300 s, 13 tests at load 14-17 (133 s, 11 tests before)
    # 289 s at load with 8 SIGKILLed CLI runs (each its own JVM); 5 since: 519 -> 326 s alone at load 18-20
    "tests/spark/test_typed_commit_kill.py",  # ~180 s (289 s x 326/519)
    "spark-standalone",  # 242 s: test_cluster.py 152 s, then test_tables_cluster.py 90 s (~45 s: 1 test)
    "tests/spark/test_every_record_once.py",  # 156 s; ~131 s since 42 cells (alone, load 27-32: 763 -> 641 s)
    # a broker, a database, a Connect worker (started 3 times), 4 CLI exports' Spark JVMs (tests/cdc_real);
    # "before": with Connect's reflective plugin scan, 54-60 s of each worker start at load (connect_cluster)
    "tests/cdc_real/test_debezium_mariadb.py",  # 152 s alone at load 18-24 (322 s at load 12 before)
    "tests/cdc_real/test_debezium_postgres.py",  # 149 s alone at load 16-19, 32 s of CPU (363 s, 66 s before)
    "tests/procedures/test_restore.py",  # 144 s, 57 tests (CLI in-process but the kills since issue 76)
    # the real-broker modules (tests/brokers): their brokers start once per module; setup + call + teardown
    # of a 2-worker run of tests/brokers alone at load 1-5 (docs/tests.md, "Real Kafka brokers")
    "tests/brokers/test_broker_files.py",  # 123 s
    "tests/brokers/test_broker_harness.py",  # 99 s
    "tests/brokers/test_broker_unclean_election.py",  # 96 s
    # a broker, Apicurio Registry, a database, a Connect worker (Avro converter), one CLI export's Spark JVM
    "tests/cdc_real/test_debezium_avro.py",  # 116 s alone at load 25-29, 26 s of CPU (169 s, 36 s before)
    "tests/typed/test_protobuf_property.py",  # 120 s at load 10 (make test-fast: 30 s)
    "tests/procedures/test_move_partition.py",  # 111 s (make test-fast: 11 s; CLI in-process but the kill)
    "tests/spark/test_tables_commit_failures.py",  # 110 s at load, 12 tests
    "tests/repair/test_external_kill.py",  # make test: 298 s (ci5); all 6 alone, load 10-13: 810 -> 278 s
    "tests/repair/test_crash_and_refusals.py",  # make test: 100 s (ci5); alone at load 12-14: 536 -> 337 s
    "tests/repair/test_write_matrix.py",  # 103 s, 36 tests; alone at load 11: 298 -> 180 s
    "tests/cli/test_dump_remote.py",  # 92 s (make test-fast: 21 s)
    # alone at load 11-16: 1268 -> 919 s, its calls 899 -> 370 s (small_census_confs: its inventory censuses)
    "tests/spark/test_inventory_census.py",  # 91 s
    "tests/cli/test_dump_fast.py",  # 88 s, 42 tests (make test-fast at load 3-4: 26 s, 17 s since ed2137d)
    "tests/cli/test_scan_fast.py",  # make test-fast at load 3-4: 31 s, 44 tests (21 s since ed2137d)
    "tests/cli/test_repair_fast.py",  # test-fast at load 10: 136 s, 46 tests (load 7: 46 s since a17d2a9)
    "tests/repair/test_repair_special_files.py",  # 88 s, 25 tests
    "tests/test_run_env.py",  # 148 s alone, load 11 (187): run-lock venv (uv), a broker, an export JVM
    "tests/procedures/test_restore_rebuild.py",  # 85 s, 40 tests
    "tests/brokers/test_broker_move_partition.py",  # 80 s
    "tests/brokers/test_broker_replay.py",  # 75 s
    "tests/brokers/test_broker_tiered_retention.py",  # 72 s: a 4.3.1 and a 4.4.0 node, each restarted
    "tests/brokers/test_broker_cordon_stray.py",  # 71 s alone: 2 JBOD brokers + controller, 2 restarts
    "tests/brokers/test_broker_replay_groups.py",  # 70 s + ~45 s: a 2-broker target started late (issue 87)
    "tests/brokers/test_broker_replay_spark.py",  # 151 s alone at load 16, its Spark session included
    "tests/brokers/test_broker_replay_partitioner.py",  # 88 s alone at load 4: a source and a target cluster
    "tests/brokers/test_broker_open_transaction_restart.py",  # 116 s alone at load 8-12: a node restarted
    "tests/brokers/test_broker_tv2.py",  # 55-73 s alone at load 6-9: a 4.4.0 node, 4 producers, an export
    "tests/brokers/test_broker_sync_replica.py",  # 64 s
    "tests/repair/test_grouped_index_rebuild.py",  # 65 s at load 5-9, 4 tests (2 kill matrices)
    "tests/repair/test_recorded_state.py",  # 57 s, 9 tests
    "tests/procedures/test_sync_replica.py",  # 55 s, 10 tests
    "tests/brokers/test_broker_era_index.py",  # 54 s: a 1.0.2 and a 2.2.2 broker, each killed and restarted
    "tests/checks/test_sparse_logs.py",  # 54 s, 5 tests
    "tests/cli/test_seek_agreement.py",  # 53 s, 28 tests
    "tests/test_xdist_terminal.py",  # 15 s, 2 tests (a pytest of 3 processes each): once 174 s
    "tests/logdir/test_storage_and_ranged.py",  # 42 s, 6 tests
    "tests/formats/test_records_realworld.py",  # 41 s, 81 tests
    "tests/cli/test_failures_end_cleanly.py",  # 40 s, 35 tests
    "tests/brokers/test_broker_corrupt_index.py",  # 49 s
    "tests/brokers/test_broker_era_scan.py",  # 40 s alone: a 1.0.2 and a 2.2.2 broker, 2 restarts
    "tests/repair/test_rebuild_threads.py",  # 39 s, 8 tests
    "tests/repair/test_grouped_steps.py",  # 38 s, 4 tests
    "tests/checks/test_whole_index_ok.py",  # make test-fast at load 10: 33 s, 7 tests (600 examples)
    "tests/repair/test_repair_realworld.py",  # 35 s, 11 tests
    "tests/cli/test_dump.py",  # 34 s, 77 tests
    "tests/checks/test_forensics.py",  # 27 s, 4 tests
    "tests/brokers/test_broker_streams_groups.py",  # 24-34 s alone at load 6-7: one 4.4.0 node, Kafka Streams
    "tests/brokers/test_broker_retention.py",  # 31 s
    "tests/brokers/test_broker_replay_cli.py",  # 31 s; 109 s alone at load 2-8 (issue 87 items 9-11: 16 s)
    "tests/brokers/test_broker_transactions_and_groups.py",  # 30 s
    "tests/test_ci_rule.py",  # 26 s, 3 tests
    "tests/spark/test_export_bombs.py",  # 25 s, 5 tests
    "tests/repair/test_hostile_runs.py",  # 24 s, 7 tests
    "tests/brokers/test_broker_tiered_restore.py",  # 22 s
    "tests/checks/test_hostile_dirs.py",  # 22 s, 22 tests
    "tests/formats/test_kafkajs_oracle.py",  # 22 s, 104 tests
    "tests/checks/test_scan_damage.py",  # 19 s, 34 tests
    "tests/logdir/test_model_generated.py",  # 18 s, 10 tests
    "tests/brokers/test_broker_layouts_44.py",  # 16 s
    "tests/fuzz/test_fuzz_files.py",  # 16 s, 4 tests
    "tests/checks/test_deep_parallel.py",  # 16 s, 37 tests
    "tests/formats/test_internal_protocol.py",  # 15 s, 185 tests
    "tests/checks/test_scan_undecodable.py",  # 13 s, 7 tests
    "tests/spark/test_restore_s3.py",  # 12 s, 2 tests
    "tests/checks/test_scan_realworld.py",  # 12 s, 81 tests
    "tests/cli/test_dump_options.py",  # 12 s, 15 tests
    "tests/repair/test_repair_tiered.py",  # 11 s, 13 tests
    "tests/spark/test_batch_columns.py",  # 11 s, 2 tests
    "tests/formats/test_batch_v2.py",  # 10 s, 38 tests
]


SPARK_DIR = "tests/spark/"


def _rank(scope: str, tests: int) -> tuple[int, int, int]:
    try:
        return LONGEST.index(scope), 0, 0
    except ValueError:
        return len(LONGEST), 0 if scope.startswith(SPARK_DIR) else 1, -tests


class _LongestFirst(OrderedDict):
    """The scheduler's queue of work units (scope -> {nodeid: done}); a unit is taken with
    ``popitem(last=False)`` (the only way LoadScopeScheduling takes one): here the longest one left."""

    def popitem(self, last: bool = True):
        if last:
            return super().popitem(last=True)
        scope = min(self, key=lambda s: _rank(s, len(self[s])))
        return scope, self.pop(scope)


class ModuleScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with a module (or a :data:`SERIAL_GROUPS` group) as the scope
    and the longest unit first."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.workqueue = _LongestFirst()

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return SERIAL_GROUPS.get(module, module)
