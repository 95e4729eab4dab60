from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import realworld
from logdoctor.logdir.names import (
    DirKind,
    FileState,
    PartitionDirName,
    PartitionFileKind,
    RootEntryKind,
    SegmentFileType,
    classify_partition_file,
    classify_root_entry,
    format_partition_dir,
    is_legal_topic,
    kraft_snapshot_file_name,
    parse_kraft_snapshot,
    parse_partition_dir,
    parse_segment_file,
    segment_file_name,
    topic_name_problem,
)

legal_topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=249
).filter(lambda t: t not in (".", ".."))
partitions = st.integers(min_value=0, max_value=2**31 - 1)


@given(legal_topics, partitions)
def test_partition_dir_round_trip(topic, partition):
    name = f"{topic}-{partition}"
    parsed = parse_partition_dir(name)
    assert parsed == PartitionDirName(topic, partition, DirKind.LOG, None)
    assert parsed.name == name


@given(legal_topics, partitions, st.sampled_from([DirKind.DELETE, DirKind.FUTURE, DirKind.STRAY]), st.uuids())
def test_suffixed_dir_round_trip(topic, partition, kind, uid):
    u = uid.hex  # Kafka: UUID.randomUUID with the dashes removed
    name = format_partition_dir(topic, partition, kind, u)
    assert name == f"{topic}-{partition}.{u}-{kind.value}"
    assert parse_partition_dir(name) == PartitionDirName(topic, partition, kind, u)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my.topic_with-dashes-12", ("my.topic_with-dashes", 12, DirKind.LOG)),
        ("a-b-c-0", ("a-b-c", 0, DirKind.LOG)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49, DirKind.LOG)),
        ("__cluster_metadata-0", ("__cluster_metadata", 0, DirKind.LOG)),
        ("t.x-3.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete", ("t.x", 3, DirKind.DELETE)),
        ("orders-7.abcdef0123456789abcdef0123456789-future", ("orders", 7, DirKind.FUTURE)),
        ("orders-7.abcdef0123456789abcdef0123456789-stray", ("orders", 7, DirKind.STRAY)),
    ],
)
def test_known_dirs(name, expected):
    p = parse_partition_dir(name)
    assert p is not None
    assert (p.topic, p.partition, p.kind) == expected


@pytest.mark.parametrize(
    "name",
    ["", "nodash", "topic-", "-3", "topic-x", "topic-1.2", "topic-1-delete", "t-01", "t-99999999999",
     "remote-log-index-cache", "t-1.-delete", "t-1.u u-future"],
)
def test_rejected_dirs(name):
    assert parse_partition_dir(name) is None
    kind = classify_root_entry(name, is_dir=True).kind
    assert kind in (RootEntryKind.UNKNOWN, RootEntryKind.REMOTE_LOG_INDEX_CACHE)


def test_root_entries():
    assert classify_root_entry("remote-log-index-cache", True).kind is RootEntryKind.REMOTE_LOG_INDEX_CACHE
    assert classify_root_entry(".lock", False).kind is RootEntryKind.LOCK
    assert classify_root_entry(".kafka_cleanshutdown", False).kind is RootEntryKind.CLEAN_SHUTDOWN
    assert classify_root_entry("meta.properties", False).kind is RootEntryKind.META_PROPERTIES
    assert classify_root_entry("bootstrap.checkpoint", False).kind is RootEntryKind.BOOTSTRAP_CHECKPOINT
    for n in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
              "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        assert classify_root_entry(n, False).kind is RootEntryKind.OFFSET_CHECKPOINT
        assert classify_root_entry(n + ".tmp", False).kind is RootEntryKind.TMP
    assert classify_root_entry("t-0", False).kind is RootEntryKind.UNKNOWN  # a file, not a folder
    assert classify_root_entry("notes.txt", False).kind is RootEntryKind.UNKNOWN
    e = classify_root_entry("t-0", True)
    assert e.kind is RootEntryKind.PARTITION and e.partition == PartitionDirName("t", 0, DirKind.LOG)


@given(
    st.integers(min_value=0, max_value=2**63 - 1),
    st.sampled_from(list(SegmentFileType)),
    st.sampled_from(list(FileState)),
)
def test_segment_file_round_trip(base, ftype, state):
    if ftype is SegmentFileType.SNAPSHOT and state not in (FileState.LIVE, FileState.DELETED):
        return
    name = segment_file_name(base, ftype, state)
    assert len(name.split(".")[0]) == 20
    parsed = parse_segment_file(name)
    assert parsed == (base, ftype.value + state.value)
    assert parsed.file_type is ftype and parsed.state is state
    base_offset, suffix = parsed
    assert suffix.endswith(state.value)  # the docs/API.md contract: a (base_offset, suffix) pair
    assert base_offset == base


@pytest.mark.parametrize(
    ("name", "kind", "base", "ftype", "state"),
    [
        ("00000000000000000000.log", PartitionFileKind.SEGMENT_FILE, 0, SegmentFileType.LOG, FileState.LIVE),
        ("00000000000000000000.log.swap", PartitionFileKind.SEGMENT_FILE, 0, SegmentFileType.LOG,
         FileState.SWAP),
        ("00000000000000001234.index.deleted", PartitionFileKind.SEGMENT_FILE, 1234, SegmentFileType.INDEX,
         FileState.DELETED),
        ("00000000000000001234.timeindex.cleaned", PartitionFileKind.SEGMENT_FILE, 1234,
         SegmentFileType.TIMEINDEX, FileState.CLEANED),
        ("00000000000000000007.txnindex", PartitionFileKind.SEGMENT_FILE, 7, SegmentFileType.TXNINDEX,
         FileState.LIVE),
        ("00000000000000000042.snapshot", PartitionFileKind.PRODUCER_SNAPSHOT, 42, SegmentFileType.SNAPSHOT,
         FileState.LIVE),
    ],
)
def test_partition_files(name, kind, base, ftype, state):
    pf = classify_partition_file(name)
    assert (pf.kind, pf.base_offset, pf.file_type, pf.state) == (kind, base, ftype, state)


@pytest.mark.parametrize(
    "name",
    ["0000000000000000000.log", "000000000000000000000.log", "00000000000000000000.logx", "x.log",
     "99999999999999999999.log", "00000000000000000000.snapshot.swap", "00000000000000000000.index.tmp",
     "core.1234", "00000000000000000000.log.bak"],
)
def test_unknown_partition_files(name):
    assert parse_segment_file(name) is None
    assert classify_partition_file(name).kind is PartitionFileKind.UNKNOWN


def test_fixed_partition_files_and_kraft_snapshots():
    kind = classify_partition_file("leader-epoch-checkpoint").kind
    assert kind is PartitionFileKind.LEADER_EPOCH_CHECKPOINT
    assert classify_partition_file("partition.metadata").kind is PartitionFileKind.PARTITION_METADATA
    assert classify_partition_file("partition.metadata.tmp").kind is PartitionFileKind.TMP
    assert classify_partition_file("quorum-state").kind is PartitionFileKind.QUORUM_STATE
    name = kraft_snapshot_file_name(619395, 2)
    assert name == "00000000000000619395-0000000002.checkpoint"
    pf = classify_partition_file(name)
    assert (pf.kind, pf.base_offset, pf.epoch, pf.state) == (PartitionFileKind.KRAFT_SNAPSHOT, 619395, 2,
                                                             FileState.LIVE)
    assert parse_kraft_snapshot(name + ".deleted")[1] is FileState.DELETED
    partial = "00000000000000619395-0000000002-8412345.checkpoint.part"  # Files.createTempFile
    assert classify_partition_file(partial).kind is PartitionFileKind.KRAFT_SNAPSHOT_PARTIAL


def test_topic_names():
    assert is_legal_topic("a.b_c-d")
    assert is_legal_topic("x" * 249)
    assert not is_legal_topic("x" * 250)
    for bad in ("", ".", "..", "a b", "a/b", "ü"):
        assert topic_name_problem(bad) is not None


@pytest.mark.realworld
def test_every_realworld_name_is_classified(realworld_dir):
    """Every folder a real broker wrote parses; every file of a partition folder is known."""
    seen_files = 0
    for d in realworld.log_dirs():
        for entry in d.iterdir():
            kind = classify_root_entry(entry.name, entry.is_dir()).kind
            assert kind is not RootEntryKind.UNKNOWN, entry
            if kind is RootEntryKind.PARTITION:
                for f in entry.iterdir():
                    seen_files += 1
                    assert classify_partition_file(f.name).kind is not PartitionFileKind.UNKNOWN, f
    assert seen_files > 1000



def _parse_partition_dir_by_regex(name: str) -> PartitionDirName | None:
    """parse_partition_dir as it was before its fast lanes (issue 49: every name through both regexes)."""
    import re

    from logdoctor.logdir.names import DirKind

    if not name or "-" not in name:
        return None
    kind, uuid = DirKind.LOG, None
    m = re.match(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$", name)
    if m is not None:
        kind = DirKind(m.group(4))
        stem, _, tail = name.rpartition(".")
        uuid = tail[: -len(kind.value) - 1]
    elif name.endswith(("-delete", "-future", "-stray")):
        return None
    else:
        stem = name
    topic, _, number = stem.rpartition("-")
    if not topic or not re.fullmatch(r"[0-9]+", number) or int(number) > 2**31 - 1:
        return None
    if kind is DirKind.LOG and f"{topic}-{int(number)}" != name:
        return None
    return PartitionDirName(topic, int(number), kind, uuid)


def test_partition_dir_parse_matches_the_regex_reading() -> None:
    """The suffix test before the pattern and the digit test without one take the same names (a last
    newline, where the pattern's ``$`` also matches; non-ASCII digits, which ``isdigit`` alone takes)."""
    import itertools

    pieces = ["t", "-", ".", "0", "7", "٣", "²", "\n", " ", "delete", "-stray", ".u-future", "-delete\n"]
    pieces.append("00")
    names = ["".join(c) for k in range(1, 5) for c in itertools.product(pieces, repeat=k)]
    names += ["a.b-3", "t-2147483647", "t-2147483648", "t-0.abc-delete\n", "x-1.y-z-stray", "-1", "t-"]
    assert [parse_partition_dir(n) for n in names] == [_parse_partition_dir_by_regex(n) for n in names]
