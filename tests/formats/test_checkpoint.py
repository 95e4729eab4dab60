from __future__ import annotations

import random
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_cluster import JVM_OPTIONS, kafka_libs
from logdoctor.errors import FormatError, UnsupportedError
from logdoctor.formats import checkpoint as cp
from logdoctor.formats.checkpoint import LeaderEpochCheckpoint, OffsetCheckpoint

TOPIC = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True)
OFFSET_ENTRY = st.tuples(TOPIC, st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1))


def test_kafka_layout_with_trailing_newline():
    ckpt = cp.new_offset_checkpoint([("t", 0, 5), ("__consumer_offsets", 12, 0)])
    data = cp.write_offset_checkpoint(ckpt)
    assert data == b"0\n2\nt 0 5\n__consumer_offsets 12 0\n"
    assert cp.write_offset_checkpoint(cp.new_offset_checkpoint([])) == b"0\n0\n"
    epochs = cp.new_leader_epoch_checkpoint([(0, 0), (3, 52)])
    assert cp.write_leader_epoch_checkpoint(epochs) == b"0\n2\n0 0\n3 52\n"


@given(st.lists(OFFSET_ENTRY, max_size=30))
def test_offset_checkpoint_round_trip(entries):
    data = "".join(f"{line}\n" for line in ["0", str(len(entries)), *(f"{t} {p} {o}" for t, p, o in entries)])
    parsed = cp.parse_offset_checkpoint(data.encode())
    assert parsed.entries == entries  # order kept, duplicates kept
    assert cp.write_offset_checkpoint(parsed) == data.encode()


@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), max_size=30))
def test_leader_epoch_round_trip(entries):
    data = cp.write_leader_epoch_checkpoint(LeaderEpochCheckpoint(0, entries))
    assert cp.parse_leader_epoch_checkpoint(data) == LeaderEpochCheckpoint(0, entries)


def test_empty_and_version_only_files_read_as_no_entries():
    assert cp.parse_offset_checkpoint(b"").entries == []
    assert cp.write_offset_checkpoint(cp.parse_offset_checkpoint(b"")) == b""
    only_version = cp.parse_leader_epoch_checkpoint(b"0\n")
    assert only_version.entries == [] and cp.write_leader_epoch_checkpoint(only_version) == b"0\n"


def test_java_readline_and_split_rules():
    # \r\n and \r end lines; fields split on runs of whitespace; trailing whitespace is dropped
    parsed = cp.parse_offset_checkpoint(b"0\r\n1\rt \t 3   9  \n")
    assert parsed.entries == [("t", 3, 9)]
    # leading whitespace gives an empty first field: malformed, as in Kafka
    with pytest.raises(FormatError):
        cp.parse_offset_checkpoint(b"0\n1\n t 3 9\n")
    # no final newline is still a line
    assert cp.parse_leader_epoch_checkpoint(b"0\n1\n4 100").entries == [(4, 100)]


def test_malformed_line_is_reported_like_kafka_with_line_and_position():
    data = b"0\n2\nfoo 0 1\nbar x 2\n"
    with pytest.raises(FormatError) as err:
        cp.parse_offset_checkpoint(data, source="/d/replication-offset-checkpoint")
    assert err.value.position == 12 and err.value.source == "/d/replication-offset-checkpoint"
    assert "Malformed line in checkpoint file [/d/replication-offset-checkpoint]: bar x 2" in str(err.value)


def test_count_mismatch_strict_and_lenient():
    data = b"0\n3\nfoo 0 1\nbar 1 2\n"
    with pytest.raises(FormatError) as err:
        cp.parse_offset_checkpoint(data, source="rp")
    assert "Expected [3] entries in checkpoint file [rp], but found only [2]" in str(err.value)
    assert err.value.position == 2
    scan = cp.scan_offset_checkpoint(data, source="rp")
    assert scan.checkpoint.entries == [("foo", 0, 1), ("bar", 1, 2)]
    assert [(p.line, p.position) for p in scan.problems] == [(2, 2)]
    assert "Expected [3] entries" in scan.problems[0].message
    # the stale count survives a round trip
    assert cp.write_offset_checkpoint(scan.checkpoint) == data


def test_lenient_scan_skips_malformed_lines_and_reports_all():
    data = b"0\n3\nfoo 0 1\ngarbage\nbar 1 99999999999999999999\nbaz 2 3\n"
    scan = cp.scan_offset_checkpoint(data)
    assert scan.checkpoint.entries == [("foo", 0, 1), ("baz", 2, 3)]
    assert [p.line for p in scan.problems] == [4, 5, 2]  # two malformed lines, then the count (4 != 3)


def test_unknown_version_is_unsupported():
    with pytest.raises(UnsupportedError) as err:
        cp.parse_offset_checkpoint(b"1\n0\n", source="x")
    assert "Unrecognised version:1, expected version: 0" in str(err.value)


def test_not_utf8_names_byte_position():
    with pytest.raises(FormatError) as err:
        cp.parse_offset_checkpoint(b"0\n1\nt\xff 0 1\n", source="x")
    assert err.value.position == 5


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape_untyped(data):
    for parse in (cp.parse_offset_checkpoint, cp.parse_leader_epoch_checkpoint):
        try:
            parse(data, source="f")
        except FormatError as exc:
            assert exc.source == "f" and exc.position is not None and 0 <= exc.position <= len(data)
    try:
        scan = cp.scan_offset_checkpoint(data, source="f")
    except FormatError:
        return  # only undecodable text
    assert all(p.position is not None for p in scan.problems)


def test_offsets_mapping_later_duplicate_wins():
    ckpt = OffsetCheckpoint(0, [("a", 0, 1), ("a", 0, 7)])
    assert ckpt.offsets() == {("a", 0): 7}


#: Kafka 4.4.0's own leader-epoch cache loads each file named: its latest epoch and its entries
EPOCH_CACHE_JAVA = """
import java.io.File;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
public class EpochCache {
  public static void main(String[] files) throws Exception {
    for (String f : files) {
      LeaderEpochFileCache c = new LeaderEpochFileCache(new TopicPartition("t", 0),
          new LeaderEpochCheckpointFile(new File(f), new LogDirFailureChannel(1)), null);
      StringBuilder line = new StringBuilder(String.valueOf(c.latestEpoch().orElse(-1)));
      c.epochEntries().forEach(e -> line.append(" ").append(e.epoch()).append("@").append(e.startOffset()));
      System.out.println(line);
    }
  }
}
"""


def test_latest_epoch_and_loaded_cache_are_kafkas(tmp_path):
    """formats.checkpoint.loaded_epochs and latest_epoch against LeaderEpochFileCache loading the same files:
    in order, out of order (the last entry is not the largest epoch), an epoch twice, offsets going back."""
    rng = random.Random(86)
    cases = [[], [(0, 0), (3, 52)], [(5, 0), (3, 10)], [(3, 0), (2, 10), (5, 20)], [(1, 100), (2, 50)]]
    cases += [[(2, 5), (2, 9), (2, 1)], [(4, 7), (4, 7), (1, 7)]]
    cases += [[(rng.randrange(8), rng.randrange(60)) for _ in range(rng.randrange(1, 8))] for _ in range(60)]
    files = []
    for i, entries in enumerate(cases):
        files.append(tmp_path / f"leader-epoch-checkpoint-{i}")
        files[-1].write_bytes(cp.write_leader_epoch_checkpoint(cp.new_leader_epoch_checkpoint(entries)))
    src = tmp_path / "EpochCache.java"
    src.write_text(EPOCH_CACHE_JAVA)
    run = subprocess.run(
        ["java", *JVM_OPTIONS, "-cp", f"{kafka_libs('4.4.0')}/*", str(src), *map(str, files)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    kafka = run.stdout.splitlines()
    assert len(kafka) == len(cases), run.stderr
    for entries, line in zip(cases, kafka, strict=True):
        latest, *loaded = line.split()
        assert cp.latest_epoch(entries) == (None if latest == "-1" else int(latest)), (entries, line)
        assert [f"{e}@{s}" for e, s in cp.loaded_epochs(entries)] == loaded, (entries, line)
