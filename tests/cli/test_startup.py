"""What `logdoctor` imports before any work (guarded by listing modules, not by timing): ``--help``
imports no command module, and ``dump`` of a small file none of the record, index or Spark code.
Timings are in BENCHMARKS.md ("CLI start")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import realworld
from imported import imported_by
from logdoctor.cli.main import _register, app
from logdoctor.cli.registry import COMMANDS
from logdoctor.formats.checkpoint import OffsetCheckpoint, write_offset_checkpoint

HEAVY = ("numpy", "pyarrow", "pyspark", "plotly", "pandas", "lz4", "zstandard", "cramjam", "crc32c")


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_help_imports_no_command_and_nothing_heavy() -> None:
    modules = imported_by("--help")
    assert _heavy(modules) == []
    ours = sorted(m for m in modules if m.startswith("logdoctor."))
    assert ours == [
        "logdoctor.cli",
        "logdoctor.cli.app",
        "logdoctor.cli.coercion",  # the group's options, coerced without pydantic
        "logdoctor.cli.common",
        "logdoctor.cli.helptext",
        "logdoctor.cli.main",
        "logdoctor.cli.registry",
    ]


def test_a_command_imports_only_its_own_module(tmp_path: Path) -> None:
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint.write_bytes(write_offset_checkpoint(OffsetCheckpoint(0, [("orders", 3, 42)])))
    modules = imported_by("dump", str(checkpoint))
    assert _heavy(modules) == []
    commands = {f"logdoctor.cli.{c.module}" for c in COMMANDS}
    # files alone: no command module at all (logdoctor.cli.dump.fast runs the dump without typer)
    assert {m for m in modules if m in commands} == set()
    assert "logdoctor.cli.dump" in modules and "typer" not in modules
    # nor the checks' findings and catalog: only a dump that checks an index makes a finding
    assert not {m for m in modules if m.startswith("logdoctor.checks")}
    # an option with a value: the typer command, and only its module
    modules = imported_by("dump", "--max-bytes", "100", str(checkpoint))
    assert {m for m in modules if m in commands} == {"logdoctor.cli.dump.command"}
    assert not {"logdoctor.checks.verify_index", "logdoctor.formats.records"} & modules
    # ...and the record code when a .log is dumped, so the test above can tell the difference
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    assert "logdoctor.formats.records" in imported_by("dump", str(tmp_path / "00000000000000000000.log"))


@pytest.mark.parametrize("entry", COMMANDS, ids=lambda c: c.name)
def test_each_summary_is_the_first_line_of_the_commands_help(entry) -> None:
    _register()
    info = next(i for i in app.registered_commands if i.name == entry.name)
    assert info.callback is not None and info.callback.__doc__ is not None
    assert info.callback.__doc__.strip().splitlines()[0] == entry.summary


def test_help_lists_every_command_with_its_summary() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    for entry in COMMANDS:
        assert f"│ {entry.name} " in done.stdout
        assert entry.summary in done.stdout


def test_scan_of_small_partitions_imports_nothing_heavy_but_its_codecs(tmp_path: Path) -> None:
    """numpy (formats.lazy_numpy), rich and pydantic (cli.coercion) are imported on first use: a
    `scan --deep --json` of small partitions uses none of them."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(tmp_path / "fleet", [TopicSpec("orders", partitions=3)])
    modules = imported_by("scan", "--deep", "--json", "-j", "1", str(log_dir))
    assert "logdoctor.checks.deep" in modules
    assert not {m.split(".")[0] for m in modules} & {"numpy", "rich", "pydantic"}


def test_crc32c_extension_is_loaded_without_the_package_metadata(tmp_path: Path) -> None:
    """Issue 35: the crc32c package's ``__init__`` imports importlib.metadata (email, zipfile, csv...)
    only for its ``__version__``; `scan` and `repair` load its extension alone (formats.crc), and the
    CRC-32C they compute is the package's own (the standard check value, and a real batch's CRC)."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(tmp_path / "fleet", [TopicSpec("orders", partitions=1)])
    for argv in (("scan", "--deep", "--json", "-j", "1"), ("repair", "--json", "-j", "1")):
        modules = imported_by(*argv, str(log_dir))
        assert "crc32c._crc32c" in modules
        assert not {"importlib.metadata", "email", "crc32c"} & modules, argv
        # nor the remote tier audit's (the store's listing, inventory reports: csv, gzip) without remote
        # log metadata
        audit = {"checks.remote_store", "checks.remote_audit", "logdir.store_listing"}
        assert not {f"logdoctor.{m}" for m in audit} & modules, argv
    check = (
        "from logdoctor.formats.crc import crc32c\n"
        "import crc32c as package\n"  # a later import of the package takes the same extension
        "assert crc32c(b'123456789') == package.crc32c(b'123456789') == 0xE3069283\n"
        "import logdoctor.formats.crc as c, crc32c._crc32c as ext\n"
        "assert c.CRC32C_EXTENSION is ext\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True)


def test_repair_of_indexes_past_32_entries_imports_no_numpy(tmp_path: Path) -> None:
    """`repair --apply` rebuilding indexes of more than 32 entries (the old plain-Python limit of the
    index checks) writes them and checks them in the scan after without numpy (formats.index's writers,
    checks.indexes.whole_index_ok), and its scans import no numpy ahead of a big walk either."""
    from logdoctor.formats.index import OFFSET_ENTRY_SIZE
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    spec = TopicSpec("orders", records_per_partition=600, value_size=1000, segment_bytes=300_000)
    log_dir, _ = generate_log_dir(tmp_path / "fleet", [spec])
    part = log_dir / "orders-0"
    indexes = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")}
    assert max(len(b) for n, b in indexes.items() if n.endswith(".index")) > 32 * OFFSET_ENTRY_SIZE
    for name in indexes:
        (part / name).unlink()
    # os.environ, not this process's environment: readline (imported with pdb by pytest) exports COLUMNS
    # and LINES to it, and a width in the environment is rich's to honour
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    backup = str(tmp_path / "backup")
    modules = imported_by("repair", "--apply", "--backup-dir", backup, str(log_dir), env=env)
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.name in indexes} == indexes  # rebuilt
    assert "logdoctor.repair.rules.indexes" in modules
    assert "numpy" not in modules
    # its report, written to a pipe, is written without rich (cli.lines; test_lines.py: the same bytes)
    assert not {m for m in modules if m.split(".")[0] == "rich"}


def test_the_early_walks_start_before_the_checks_the_model_the_catalog_and_pathlib_load() -> None:
    """Issue 35: a `scan --deep` starts its early walks (checks.early_walk, checks.walk_ahead) once the
    modules that choose the files and the C walk have loaded; the checks' state and record decoders, the
    log dir model, the findings catalog, the lock, the atomic writes and pathlib load afterwards, beside
    the walks (``logdir``'s package imports them lazily; the walks spend their time in one C call a file,
    without the GIL)."""
    code = (
        "import json, sys\n"
        "import logdoctor.cli.main, logdoctor.cli.registry, logdoctor.cli.scan_fast\n"
        "import logdoctor.checks.early_walk, logdoctor.checks.walk_ahead as w\n"
        "assert w.walker() is not None\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(json.loads(done.stdout))
    later = {"logdoctor.logdir.model", "logdoctor.logdir.lock", "logdoctor.logdir.atomic", "pathlib"}
    later |= {"logdoctor.checks.catalog", "logdoctor.checks.findings", "logdoctor.checks.context"}
    later |= {"logdoctor.checks.state", "logdoctor.checks.undecodable", "logdoctor.formats.native"}
    later |= {"logdoctor.formats.batch_v2", "logdoctor.formats.record_types", "concurrent.futures"}
    assert not later & modules
    assert {"logdoctor.checks.walk_ahead", "logdoctor.formats._speedups", "logdoctor.logdir.files"} <= modules


# Issue 35: each kind of check's modules load only where a log dir or partition needs them
NEEDED_ONLY_WHERE_MET = {
    "logdoctor.logdir.remote_metadata": "__remote_log_metadata partitions (../shared/tiered)",
    "logdoctor.logdir.metadata_image": "a KRaft __cluster_metadata-0",
    "logdoctor.checks.metadata_log": "a KRaft __cluster_metadata-0",
    "logdoctor.checks.divergence": "replicas of several brokers (../shared/forensics)",
    "logdoctor.logdir.divergence": "replicas of several brokers (../shared/forensics)",
    "logdoctor.checks.consumer_groups": "a __consumer_offsets partition",
    "logdoctor.checks.transaction_state": "a __transaction_state partition",
}


def test_a_plain_log_dir_imports_no_check_it_does_not_need(tmp_path: Path) -> None:
    """`scan --deep` and a dry-run `repair` of a log dir of plain topic partitions import none of the
    modules of checks that only other log dirs need (NEEDED_ONLY_WHERE_MET: what needs each)."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(tmp_path / "fleet", [TopicSpec("orders", partitions=3)])
    assert (log_dir / "orders-0" / "partition.metadata").is_file()
    # both without typer (cli.fast; typer imports uuid): 3 partitions are checked in this process
    for argv in (("scan", "--deep", "--json"), ("repair", "--json", "-j", "1")):
        modules = imported_by(*argv, str(log_dir))
        assert "logdoctor.checks.scanner" in modules, argv  # the scan ran
        assert sorted(set(NEEDED_ONLY_WHERE_MET) & modules) == [], argv
        # partition.metadata's topic id checked as bytes: no uuid module (it imports platform)
        assert "logdoctor.formats.partition_metadata" in modules
        assert not {"uuid", "platform", "typer"} & modules, argv
        assert "logdoctor.logdir.outputs" not in modules, argv  # no output file to check against the inputs
        # a dry run hashes no backup and cuts no log: no OpenSSL binding, no removed-records writer
        assert not {"hashlib", "_hashlib", "logdoctor.repair.removed_records"} & modules, argv


def test_the_log_dirs_that_need_a_check_import_it(tmp_path: Path) -> None:
    """...and the real log dirs that need them load them (their findings: tests/checks over the same
    data, tests/checks/test_transaction_state.py's coordinator beside forensics' billing-0, and
    tests/cli/test_scan_fast.py's comparison of every real log dir)."""
    forensics = realworld.require_forensics()
    brokers = [str(forensics / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)]
    coordinator = realworld.writable_copy(forensics / "broker-1" / "kafka-logs", tmp_path / "kafka-logs")
    (coordinator / "__transaction_state-0").mkdir()
    kraft = realworld.require() / "kraft-3.6-jeong-rae"
    offsets = realworld.REALWORLD / "zk-2.8-seanorth"
    tiered = realworld.require_tiered() / "kafka-local" / "kafka-logs"
    scans = {
        "logdoctor.checks.divergence": brokers,
        "logdoctor.logdir.divergence": brokers,
        "logdoctor.checks.transaction_state": [str(coordinator)],
        "logdoctor.logdir.metadata_image": [str(kraft)],
        "logdoctor.checks.metadata_log": [str(kraft)],
        "logdoctor.checks.consumer_groups": [str(offsets)],
        "logdoctor.logdir.remote_metadata": [str(tiered)],
    }
    assert set(scans) == set(NEEDED_ONLY_WHERE_MET)
    for module, dirs in scans.items():
        assert module in imported_by("scan", "--deep", "--json", "-j", "1", *dirs), (module, dirs)
    # a real __consumer_offsets without control batches (no transactional commit) is decoded without the
    # control records' module or the uuid module (formats.internal.protocol encodes UUIDs only)
    modules = imported_by("scan", "--deep", "--json", str(offsets))
    assert "logdoctor.formats.internal.consumer_offsets" in modules
    assert not {"logdoctor.formats.control", "uuid", "typer"} & modules
    assert "logdoctor.checks.transaction_state" not in modules  # no __transaction_state there
    # one real broker of plain ZooKeeper-era partitions alone needs none of them
    plain = imported_by("scan", "--deep", "--json", "-j", "1", brokers[1])
    assert set(NEEDED_ONLY_WHERE_MET) & plain == set()
