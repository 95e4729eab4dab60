"""The producer-state table (tests/formats/producer_state_cases.py) judged by Kafka 4.4.0's own
``ProducerStateManager`` and ``ProducerAppendInfo`` (tests/producer_state_oracle.py: the driver runs each log
as ``LogSegment.recover`` does and as a starting broker loads it), then through logdoctor's
:class:`~logdoctor.formats.producer_state.ProducerState` with the matching origin, every field compared, and
through the project's three callers: recovery (``rebuild_indexes``), the scan's producer state
(``checks.transactions.open_transactions``) and the readers' walk (``logdir.transactions``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from producer_state_cases import CASES, T0, Case

import kafka_cluster
import producer_state_oracle as oracle
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.errors import FormatError
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.producer_state import Origin, ProducerState, ProducerStateError, crc_ok
from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.names import LOG_START_OFFSET_CHECKPOINT
from logdoctor.logdir.transactions import ABORTED, COMMITTED, OPEN, partition_transactions

pytestmark = pytest.mark.kafka

BY_NAME = {c.name: c for c in CASES}
MODE = {Origin.RECOVER: "recover", Origin.LOAD: "load"}
#: the exceptions of Kafka's record classes where a record cannot be read: logdoctor's own FormatError
RECORD_ERRORS = ("InvalidRecordException", "CorruptRecordException")


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    libs = kafka_cluster.kafka_libs("4.4.0")
    return libs, oracle.compile_driver(libs, tmp_path_factory.mktemp("producer-state-driver"))


def _run(driver: tuple[Path, Path], cases: list[Case], work: Path) -> dict[str, dict]:
    out = oracle.run(*driver, [c.oracle_input() for c in cases], work)
    assert set(out) == {c.name for c in cases}
    for name, r in out.items():  # the driver's own walk agrees with Kafka's methods
        assert r["recover"]["walk_differs"] == [] and r["load"]["walk_differs"] == [], name
    return out


@pytest.fixture(scope="module")
def kafka(driver: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _run(driver, CASES, tmp_path_factory.mktemp("cases"))


@pytest.fixture(scope="module")
def kafka_without_refused(
    driver: tuple[Path, Path], kafka: dict[str, dict], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Case, dict]]:
    """Each case as Kafka's recover takes it once the batches it stops or raises at are left out of the
    log (again until none is left): the log READ's rules read (a batch whose CRC fails, an unreadable or
    unknown control record, a non-transactional batch inside an open transaction change no transaction
    there), with Kafka's outcome on it."""
    out: dict[str, tuple[Case, dict]] = {}
    pending, results = list(CASES), kafka
    while pending:
        again = []
        for case in pending:
            rec = results[case.name]["recover"]
            refused = rec["raised"] or rec["stopped"]
            if refused is None:
                out[case.name] = (case, rec)
            else:
                kept = [b for b in iter_batches(case.log) if b.base_offset != refused["offset"]]
                log = b"".join(case.log[b.position : b.position + b.size] for b in kept)
                again.append(dataclasses.replace(case, log=log))
        pending = again
        if pending:
            results = _run(driver, pending, tmp_path_factory.mktemp("without-refused"))
    return out


def _state(case: Case) -> ProducerState:
    if case.loaded_snapshot is None:
        return ProducerState()
    snap = parse_producer_snapshot(case.loaded_snapshot)
    return ProducerState.from_snapshot(snap, now_ms=case.now_ms, expiration_ms=case.expiration_ms)


def _ours(case: Case, origin: Origin) -> dict:
    """The case through ProducerState as Kafka's driver reports it: RECOVER's caller stops at the first
    batch whose CRC fails (LogSegment.recover's ensureValid) and where a record cannot be read (recover
    catches InvalidRecordException); an exception ProducerState raises is where Kafka raises."""
    state = _state(case)
    batches, completed, stopped, raised = 0, [], None, None
    for batch in iter_batches(case.log):
        if origin is Origin.RECOVER and not crc_ok(batch):
            stopped = batch.base_offset
            break
        try:
            done = state.append(batch, origin)
        except ProducerStateError as exc:
            raised = (exc.kafka_exception, batch.base_offset)
            break
        except FormatError:
            if origin is Origin.RECOVER:
                stopped = batch.base_offset
            else:
                raised = ("record", batch.base_offset)
            break
        if done is not None:
            lso = state.complete(done)
            txn = {"producer_id": done.producer_id, "first_offset": done.first_offset,
                   "last_offset": done.last_offset, "aborted": done.aborted}  # fmt: skip
            completed.append({**txn, "lso": lso} if origin is Origin.RECOVER else txn)
        batches += 1
    producers = {
        str(pid): {
            "producer_epoch": e.producer_epoch,
            "last_sequence": e.last_sequence,
            "last_offset": e.last_offset,
            "last_timestamp": e.last_timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_first_offset": e.current_txn_first_offset,
        }
        for pid, e in sorted(state.producers.items())
    }
    return {"batches": batches, "stopped": stopped, "raised": raised, "completed": completed,
            "producers": producers, "first_unstable_offset": state.first_unstable_offset}  # fmt: skip


def _kafka(result: dict, origin: Origin) -> dict:
    k = result[MODE[origin]]
    raised = k["raised"] and (k["raised"]["exception"], k["raised"]["offset"])
    if raised and raised[0] in RECORD_ERRORS:
        raised = ("record", raised[1])
    return {
        "batches": k["batches"],
        "stopped": k.get("stopped") and k["stopped"]["offset"],
        "raised": raised or None,
        "completed": k["completed"],
        "producers": {p: k["producers"][p] for p in sorted(k["producers"], key=int)},
        "first_unstable_offset": k["first_unstable_offset"],
    }


@pytest.mark.parametrize("origin", [Origin.RECOVER, Origin.LOAD], ids=["recover", "load"])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_producer_state_is_kafkas(kafka: dict[str, dict], name: str, origin: Origin) -> None:
    expected, got = _kafka(kafka[name], origin), _ours(BY_NAME[name], origin)
    if origin is Origin.LOAD and expected["raised"]:
        # the load fails there; Kafka applies nothing of the segment (loadProducersFromRecords updates
        # after its whole read), so only where and why are compared
        expected = {k: expected[k] for k in ("batches", "raised")}
        got = {k: got[k] for k in ("batches", "raised")}
    assert got == expected


@pytest.mark.parametrize("name", list(BY_NAME))
def test_recovery_is_kafkas(kafka: dict[str, dict], name: str) -> None:
    """rebuild_indexes (LogSegment.recover): the txn index's entries with their LSO, the transactions left
    open, the bytes kept; where Kafka's recover raises (the load fails), recovery stops with an error at
    that batch that names Kafka's exception."""
    case, k = BY_NAME[name], kafka[name]["recover"]
    snap = _state(case)
    rebuilt = rebuild_indexes(case.log, case.base_offset, open_transactions=dict(snap.current))
    got = [[t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset] for t in rebuilt.aborted_txns]
    assert got == k["aborted_index"]
    opened = {int(p): e["current_txn_first_offset"] for p, e in k["producers"].items()}
    assert rebuilt.open_transactions == {p: f for p, f in opened.items() if f is not None}
    if k["raised"]:  # the load fails there: recovery names Kafka's exception at that batch
        failed = next(b for b in iter_batches(case.log) if b.base_offset == k["raised"]["offset"])
        assert rebuilt.error is not None and rebuilt.error.position == failed.position
        assert getattr(rebuilt.error, "kafka_exception", None) == k["raised"]["exception"]
    else:
        assert (rebuilt.valid_bytes, rebuilt.error is not None) == (
            k["valid_bytes"],
            k["stopped"] is not None,
        )


def _log_dir(root: Path, case: Case) -> Path:
    folder = root / "kafka-logs" / "t-0"
    folder.mkdir(parents=True)
    (folder / f"{case.base_offset:020d}.log").write_bytes(case.log)
    if case.snapshot is not None:
        (folder / f"{case.base_offset:020d}.snapshot").write_bytes(case.snapshot)
    if case.log_start_offset:
        (folder.parent / LOG_START_OFFSET_CHECKPOINT).write_text(f"0\n1\nt 0 {case.log_start_offset}\n")
    return folder.parent


@pytest.mark.parametrize("name", list(BY_NAME))
def test_scan_producer_state_is_the_brokers(kafka: dict[str, dict], name: str, tmp_path: Path) -> None:
    """The scan's producer state (checks.transactions, kept with ScanOptions.keep_producers): each
    producer's epoch, last timestamp and open transaction as Kafka 4.4.0 opens the same partition folder
    after an unclean shutdown (the driver's ``open``: UnifiedLog.create, whose LogLoader recovers every
    segment, then rebuilds the producer state). Where Kafka fails to open the partition, the scan keeps no
    producer state for it (``open_transactions``: "cannot be known here"). One rule the scan leaves out on
    purpose: producer id expiry at load (``isProducerExpired``), which depends on the broker's clock at its
    next start (checks/transactions.py); the producers Kafka dropped as expired are the scan's, as loaded
    from the snapshot, and every other producer is Kafka's."""
    case, k = BY_NAME[name], kafka[name]["open"]
    options = ScanOptions(keep_producers=True, now_ms=case.now_ms or T0)
    (part,) = scan([_log_dir(tmp_path, case)], options, jobs=1).partitions
    got = {
        str(pid): [epoch, last, None if first < 0 else first]
        for pid, (epoch, last, first) in part.producers.items()
    }
    expected = {
        p: [e["producer_epoch"], e["last_timestamp"], e["current_txn_first_offset"]]
        for p, e in ({} if k["raised"] else k["producers"]).items()
    }
    if case.loaded_snapshot is not None and case.now_ms is not None and not k["raised"]:
        for e in parse_producer_snapshot(case.loaded_snapshot).entries:
            if e.current_txn_first_offset < 0 and case.now_ms - e.timestamp >= case.expiration_ms:
                assert str(e.producer_id) not in expected  # Kafka dropped it
                expected[str(e.producer_id)] = [e.producer_epoch, e.timestamp, None]
    assert got == expected


def _first_data(case: Case, pid: int, first: int, end: int) -> int | None:
    """The base offset of ``pid``'s first transactional data batch in the log in [first, end)."""
    offsets = [
        b.base_offset for b in iter_batches(case.log)
        if b.producer_id == pid and b.is_transactional and not b.is_control and first <= b.base_offset < end
    ]  # fmt: skip
    return min(offsets, default=None)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_readers_walk_is_kafkas(
    kafka_without_refused: dict[str, tuple[Case, dict]], name: str, tmp_path: Path
) -> None:
    """The readers' walk (READ): each transaction's first offset and result, and the transactions left
    open, are Kafka's (its recover's completed and open transactions). Where Kafka's recover stops or
    raises, READ reads on, as the module doc of logdoctor.formats.producer_state says: a batch whose CRC
    fails is left out where it would open or end a transaction, a control record of an unknown type or
    that cannot be read ends nothing, a non-transactional batch inside an open transaction changes none;
    so there READ is Kafka on the log without those batches (:func:`kafka_without_refused`)."""
    case = BY_NAME[name]
    (ref,) = discover(str(_log_dir(tmp_path, case)))
    txns = partition_transactions(ref, high_watermark=False).transactions
    got = sorted((t.producer_id, t.first_offset, t.result) for t in txns if t.result != OPEN)
    opened = sorted((t.producer_id, t.first_offset) for t in txns if t.result == OPEN)
    read, k = kafka_without_refused[name]
    # READ has no snapshot: a transaction the snapshot holds open starts, for it, at its first data
    # batch in the log (none there: nothing to decide, not listed)
    expected = []
    for t in k["completed"]:
        first = _first_data(read, t["producer_id"], t["first_offset"], t["last_offset"])
        if first is not None:
            expected.append((t["producer_id"], first, ABORTED if t["aborted"] else COMMITTED))
    assert got == sorted(expected)
    still = [(int(p), e["current_txn_first_offset"]) for p, e in k["producers"].items()]
    firsts = [(p, _first_data(read, p, f, 2**63)) for p, f in still if f is not None]
    assert opened == sorted((p, f) for p, f in firsts if f is not None)
