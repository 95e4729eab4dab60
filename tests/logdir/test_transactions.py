"""What a consumer would have read (issue 45): every transaction's outcome from its markers, and what each
isolation level returns, against Kafka's facts (../shared/semantics and ../shared/forensics, written by
Kafka's own classes; their README.md) and against Kafka's consumer recomputed from kafka-python's decoding
(kp_oracle.consumer_view). Read with the code each Spark task runs (plan_slices, read_slice): no Spark."""

from __future__ import annotations

import collections
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import cli_runs
import kp_oracle
import realworld
from logdoctor.formats.control import EndTxnMarker, control_record_spec
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.consumer_view import summary_lines, transaction_summary
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices, plan_transactions
from logdoctor.logdir.transactions import partition_transactions
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = [pytest.mark.realworld]


def rows(path: Path | str, **options: str) -> list[dict]:
    opts = parse_read_options(options)
    out = []
    for sl in plan_slices(discover(str(path)), opts):
        for rb in read_slice(sl, opts):
            out.extend(rb.select(["offset", "is_control", "transaction_result"]).to_pylist())
    return out


def ptx() -> Path:
    return realworld.require_semantics() / "kafka-logs" / "ptx-0"


def logs(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.log"))


def test_ptx_read_committed_is_kafkas_230_and_read_uncommitted_its_372_labelled() -> None:
    labels, committed, lso = kp_oracle.consumer_view(logs(ptx()))
    assert (len(committed), len(labels), lso) == (230, 372, 364)  # the README's facts, from kafka-python
    got = rows(ptx())  # the default
    assert [r["offset"] for r in got] == committed
    assert {r["transaction_result"] for r in got} == {None, "committed"}
    everything = rows(ptx(), **{"kafka.isolation.level": "read_uncommitted"})
    assert {r["offset"]: r["transaction_result"] for r in everything} == labels
    assert collections.Counter(labels.values()) == {None: 180, "aborted": 130, "committed": 50, "open": 12}


def test_the_transactions_and_lso_are_the_readmes() -> None:
    (ref,) = discover(str(ptx()))
    t = partition_transactions(ref)
    assert [
        (x.producer_id, x.producer_epoch, x.first_offset, x.marker_offset, x.result) for x in t.transactions
    ] == [
        (8101, 0, 60, 75, "committed"),
        (8102, 4, 76, 201, "aborted"),
        (8101, 0, 282, 317, "committed"),
        (8103, 0, 318, 323, "aborted"),
        (8104, 7, 364, None, "open"),
    ]
    assert (t.first_unstable_offset, t.log_end_offset, t.high_watermark) == (364, 376, 376)


def test_billing_hanging_transaction_leaves_everything_above_341_out() -> None:
    billing = realworld.require_forensics() / "broker-1" / "kafka-logs" / "billing-0"
    labels, committed, lso = kp_oracle.consumer_view(logs(billing))
    assert lso == 341 and len(labels) - len(committed) == 540  # the README: 540 data records above the LSO
    assert [r["offset"] for r in rows(billing)] == committed
    opts = parse_read_options({})
    refs = discover(str(billing))
    (entry,) = transaction_summary(refs, plan_transactions(refs, opts), opts)
    assert entry["last_stable_offset"] == 341
    assert entry["records_left_out"] == 540
    assert entry["left_out"]["open"] == 25 and entry["left_out"]["aborted"] == 0
    (open_txn,) = entry["open_transactions"]
    assert (open_txn["producer_id"], open_txn["producer_epoch"], open_txn["first_offset"]) == (7002, 5, 341)
    assert open_txn["finding"] == "TRANSACTION_HANGING"  # late, as the README says the broker judges it
    assert any("TRANSACTION_HANGING" in line for line in summary_lines([entry]))


def _copy(tmp_path: Path) -> Path:
    return realworld.writable_copy(ptx(), tmp_path / "kafka-logs" / "ptx-0")


@pytest.mark.parametrize("damage", ["deleted", "emptied", "garbled", "lying"])
def test_a_missing_or_damaged_txnindex_changes_nothing(tmp_path: Path, damage: str) -> None:
    folder = _copy(tmp_path)
    before = rows(ptx(), **{"kafka.isolation.level": "read_uncommitted"})
    for idx in folder.glob("*.txnindex"):
        if damage == "deleted":
            idx.unlink()
        elif damage == "emptied":
            idx.write_bytes(b"")
        elif damage == "garbled":
            idx.write_bytes(b"\xff" * 7)
        else:  # an entry that says the committed transaction at 60..75 was aborted
            idx.write_bytes(struct.pack(">hqqqq", 0, 8101, 60, 75, 76))
    assert rows(folder, **{"kafka.isolation.level": "read_uncommitted"}) == before
    assert [r["offset"] for r in rows(folder)] == kp_oracle.consumer_view(logs(ptx()))[1]


def test_a_marker_in_a_later_segment_still_decides(tmp_path: Path) -> None:
    """Segment 0 split at offset 126 (a batch boundary, position 8788): producer 8102's aborted transaction
    starts in 00..0.log and its ABORT marker is in 00..126.log."""
    folder = _copy(tmp_path)
    first = folder / "00000000000000000000.log"
    data = first.read_bytes()
    assert int.from_bytes(data[8788:8796], "big") == 126
    first.write_bytes(data[:8788])
    (folder / "00000000000000000126.log").write_bytes(data[8788:])
    for suffix in (".index", ".timeindex", ".txnindex"):
        (folder / f"00000000000000000000{suffix}").unlink(missing_ok=True)
    labels, committed, _ = kp_oracle.consumer_view(logs(folder))
    assert labels[76] == "aborted"
    assert [r["offset"] for r in rows(folder)] == committed
    got = rows(folder, **{"kafka.isolation.level": "read_uncommitted"})
    assert {r["offset"]: r["transaction_result"] for r in got} == labels


def test_a_marker_past_the_ending_offset_still_decides() -> None:
    labels, _, _ = kp_oracle.consumer_view(logs(ptx()))
    got = rows(ptx(), endingOffsets="150", **{"kafka.isolation.level": "read_uncommitted"})
    assert {r["offset"]: r["transaction_result"] for r in got} == {o: v for o, v in labels.items() if o < 150}
    assert [r["offset"] for r in rows(ptx(), endingOffsets="150")] == [o for o in range(76) if o != 75]


def test_a_transaction_version_2_marker_with_a_bumped_epoch_ends_the_transaction(tmp_path: Path) -> None:
    """KIP-890: the coordinator bumps the epoch at the end of every transaction and writes the marker with
    the bumped epoch (data at epoch 4, ABORT at 5, then COMMIT at 6 of the next one)."""
    folder = tmp_path / "kafka-logs" / "tv2-0"
    folder.mkdir(parents=True)

    def data(base: int, n: int, epoch: int) -> bytes:
        recs = [
            RecordSpec(value=b"v%d" % (base + i), key=b"k", timestamp=1_700_000_000_000 + base + i)
            for i in range(n)
        ]
        return build_record_batch(
            recs,
            base_offset=base,
            producer_id=42,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )

    def marker(base: int, committed: bool, epoch: int) -> bytes:
        spec = control_record_spec(
            EndTxnMarker(committed=committed, coordinator_epoch=3), timestamp=1_700_000_000_000 + base
        )
        return build_record_batch(
            [spec],
            base_offset=base,
            producer_id=42,
            producer_epoch=epoch,
            is_transactional=True,
            is_control=True,
        )

    log = data(0, 5, 4) + marker(5, False, 5) + data(6, 3, 5) + marker(9, True, 6) + data(10, 2, 6)
    (folder / "00000000000000000000.log").write_bytes(log)
    labels, committed, lso = kp_oracle.consumer_view(logs(folder))
    assert (committed, lso) == ([6, 7, 8], 10)
    got = rows(folder, **{"kafka.isolation.level": "read_uncommitted"})
    assert {r["offset"]: r["transaction_result"] for r in got} == labels
    assert [labels[o] for o in (0, 6, 10)] == ["aborted", "committed", "open"]
    assert [r["offset"] for r in rows(folder)] == committed


def test_upto_high_watermark_leaves_out_what_a_consumer_could_not_fetch(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder.parent / "replication-offset-checkpoint").write_text("0\n1\nptx 0 300\n")
    labels, committed, _ = kp_oracle.consumer_view(logs(ptx()))
    assert [r["offset"] for r in rows(folder, upTo="high-watermark")] == [o for o in committed if o < 300]
    assert [r["offset"] for r in rows(folder)] == committed  # the default keeps them (a lagging checkpoint)
    everything = rows(folder, upTo="high-watermark", **{"kafka.isolation.level": "read_uncommitted"})
    assert [r["offset"] for r in everything] == [o for o in sorted(labels) if o < 300]
    opts = parse_read_options({})
    refs = discover(str(folder.parent))
    (entry,) = [
        e for e in transaction_summary(refs, plan_transactions(refs, opts), opts) if e["topic"] == "ptx"
    ]
    assert entry["high_watermark"] == 300
    assert entry["records_above_high_watermark"] == sum(1 for o in labels if o >= 300)
    assert any("--upto high-watermark" in line for line in summary_lines([entry]))


def test_bad_isolation_level_is_refused() -> None:
    from logdoctor.logdir.slices import PlanningError

    with pytest.raises(PlanningError, match="read_committed"):
        parse_read_options({"kafka.isolation.level": "serializable"})
    assert (
        parse_read_options({"kafka.isolation.level": "READ_UNCOMMITTED"}).isolation_level
        == "read_uncommitted"
    )


def _logdoctor(*args: str) -> str:
    """``logdoctor ARGS``'s stdout, run in this process (tests/cli_runs.py)."""
    res = cli_runs.logdoctor(*args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_dump_json_and_text_say_each_records_outcome() -> None:
    labels, _, _ = kp_oracle.consumer_view(logs(ptx()))
    got: dict[int, str | None] = {}
    for log in logs(ptx()):
        for line in _logdoctor("dump", str(log), "--deep", "--json").splitlines():
            ev = json.loads(line)
            if ev.get("type") == "record" and (ev.get("decoded") or {}).get("type") != "control":
                got[ev["offset"]] = ev["transaction_result"]
    assert got == labels
    text = _logdoctor("dump", str(logs(ptx())[0]))
    assert "txn(aborted)" in text and "txn(committed)+control" in text


def test_markers_in_the_remote_tier_decide(tmp_path: Path) -> None:
    """ptx-0 tiered by hand in Kafka's LocalTieredStorage layout: segment 0 split at offset 126 into two
    remote segments (producer 8102's aborted transaction starts in the first, its ABORT marker is in the
    second), segment 202 left local. Every output reads the remote tier first: the same answers."""
    logdir = realworld.writable_copy(ptx().parent, tmp_path / "kafka-logs")
    remote = tmp_path / "remote" / "kafka-tiered-storage" / "ptx-0-O2qKgRJ9ygc0FhpkvqukMA"
    remote.mkdir(parents=True)
    data = (logdir / "ptx-0" / "00000000000000000000.log").read_bytes()
    (remote / f"{0:020d}-AAAAAAAAAAAAAAAAAAAAAA.log").write_bytes(data[:8788])
    (remote / f"{126:020d}-BBBBBBBBBBBBBBBBBBBBBB.log").write_bytes(data[8788:])
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        (logdir / "ptx-0" / f"00000000000000000000{suffix}").unlink()
    labels, committed, _ = kp_oracle.consumer_view(logs(ptx()))
    options = {"remoteStorage": str(tmp_path / "remote"), "topics": "ptx"}

    def read(**more: str) -> list[dict]:
        from logdoctor.logdir.slices import read_plan

        opts = parse_read_options(options | more)
        plan = read_plan([str(logdir)], opts)
        assert [s.remote is not None for r in plan.refs for s in r.segments] == [True, True, False]
        out = []
        for sl in plan_slices(plan.refs, opts):
            for rb in read_slice(sl, opts):
                out.extend(rb.select(["offset", "transaction_result"]).to_pylist())
        return out

    assert [r["offset"] for r in read()] == committed
    got = read(**{"kafka.isolation.level": "read_uncommitted"})
    assert {r["offset"]: r["transaction_result"] for r in got} == labels


def test_a_txnindex_the_markers_contradict_is_found_and_repaired_as_printed(tmp_path: Path) -> None:
    """The scan names a .txnindex that lists the committed transaction 60..75 as aborted and lacks the
    aborted 76..201 (INDEX_CORRUPT); the fix it prints, run as printed, rebuilds Kafka's own bytes."""
    import shlex

    folder = _copy(tmp_path)
    index = folder / "00000000000000000000.txnindex"
    original = index.read_bytes()
    index.write_bytes(struct.pack(">hqqqq", 0, 8101, 60, 75, 76))
    out = cli_runs.logdoctor("scan", str(folder.parent), "--json")  # the repair below runs as printed
    (f,) = [f for f in json.loads(out.stdout)["findings"] if f["code"] == "INDEX_CORRUPT"]
    assert f["path"] == str(index) and "COMMIT marker" in f["message"] and "76" in f["message"]
    command = f["fix"].split("`")[1]
    assert command.startswith("logdoctor repair ")
    args = [sys.executable, "-m", "logdoctor", *shlex.split(command)[1:]]
    dry = subprocess.run(args, capture_output=True, text=True, check=False)
    assert "Dry run: nothing was written" in dry.stdout and index.read_bytes() != original
    done = subprocess.run([*args, "--apply"], capture_output=True, text=True, check=False)
    # its exit code is the scan's after the repair: the copy's checkpoint warnings (not selected) stay
    assert done.returncode in (0, 1) and "applied: 1 of 1 step(s) run" in done.stdout, done.stdout
    assert index.read_bytes() == original
