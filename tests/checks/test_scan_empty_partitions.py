"""A quick scan reports an empty partition folder from the log dir's one listing (checks.partition
_empty_quick: no Partition, PartitionState or Segment made) exactly as the full check of the folder does:
the same reports and findings, the listing taken away or not, in C or in Python."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logdoctor.checks import partition as partition_check
from logdoctor.checks import scanner
from logdoctor.checks.access import BrokerUser
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats import folders


def _log_dir(root: Path) -> Path:
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    names = [f"orders-{i}" for i in range(6)] + ["__consumer_offsets-0", "__consumer_offsets-1", "audit-0"]
    for n in names:
        (root / n).mkdir()
    (root / "orders-5" / "00000000000000000000.log").write_bytes(b"")  # not empty: the full check
    (root / "orders-4" / "leftover.tmp").write_bytes(b"")
    (root / "orders-3" / "sub").mkdir()
    os.chmod(root / "audit-0", 0o700)  # the broker user below cannot enter it
    os.symlink(root / "orders-0", root / "orders-9")  # no partition: SYMLINK_IN_LOG_DIR
    entries = {"orders-0": 5, "orders-1": 7, "__consumer_offsets-0": 3, "gone-0": 1}
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        lines = [f"{n.rsplit('-', 1)[0]} {n.rsplit('-', 1)[1]} {o}" for n, o in entries.items()]
        (root / name).write_text(f"0\n{len(lines)}\n" + "".join(x + "\n" for x in lines))
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return root


def _scan(d: Path, user: BrokerUser | None) -> scanner.ScanReport:
    return scan([d], ScanOptions(depth=Depth.QUICK, now_ms=1_700_000_000_000, broker_user=user), jobs=1)


def _same(a: scanner.ScanReport, b: scanner.ScanReport) -> None:
    assert a.partitions == b.partitions
    assert [f.to_json() for f in a.findings] == [f.to_json() for f in b.findings]  # the log dirs' too


@pytest.mark.parametrize("uid", [None, 4242], ids=["owner", "other-user"])
@pytest.mark.parametrize("lister", ["c", "python"])
def test_empty_folders_are_reported_as_their_full_check_reports_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uid: int | None, lister: str
) -> None:
    d = _log_dir(tmp_path / "logs")
    user = None if uid is None else BrokerUser(uid, frozenset({uid}), "kafka")
    if lister == "python":
        monkeypatch.setattr(scanner, "list_folders", folders.list_folders_py)
    states = []
    real_state = partition_check.PartitionState

    def counted(task, part, segments):  # type: ignore[no-untyped-def]
        states.append(task.name)
        return real_state(task, part, segments)

    monkeypatch.setattr(partition_check, "PartitionState", counted)
    listed = _scan(d, user)
    full_check = sorted(states)
    # the listing never taken: every folder gets the full check
    monkeypatch.setattr(scanner._Listing, "begin", classmethod(lambda cls, ld: None))
    states.clear()
    unlisted = _scan(d, user)
    assert len(states) == len(unlisted.partitions) == 9
    _same(listed, unlisted)
    if uid is None:  # the owner (root here, or the test's user) may enter every folder
        assert full_check == ["orders-3", "orders-4", "orders-5"]
    else:  # another user lacks rwx on every folder: each a PERMISSION_DENIED, from the full check
        assert full_check == sorted(states)
        assert any(f.code == "PERMISSION_DENIED" for f in listed.findings)
    by = {p.path.rsplit("/", 1)[1]: p for p in listed.partitions}
    assert (by["orders-1"].log_start_offset, by["orders-1"].local_log_start_offset) == (7, 7)
    assert by["__consumer_offsets-0"].tiering_evidence.startswith("__consumer_offsets is an internal topic")


def test_the_default_and_deep_scans_list_nothing_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _log_dir(tmp_path / "logs")
    began = []
    monkeypatch.setattr(scanner._Listing, "begin", classmethod(lambda cls, ld: began.append(ld)))
    for depth in (Depth.DEFAULT, Depth.DEEP):
        scan([d], ScanOptions(depth=depth, now_ms=1_700_000_000_000), jobs=1)
    assert began == []
