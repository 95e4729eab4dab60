"""The fast reading of an offset checkpoint as a broker writes it (issue 26: a broker of 50,000 partitions
has 50,000-line checkpoints) gives what the general line-by-line reading gives, for Kafka's own files
and for anything else, and hands every other file to the general reading."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import realworld
from logdoctor.errors import FormatError
from logdoctor.formats import checkpoint as cp

TOPIC = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True)
ENTRY = st.tuples(TOPIC, st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1))


def _general(data: bytes) -> cp.CheckpointScan:
    """The line-by-line reading (split_lines, java_split, parse_java_int), as before the fast path."""
    version, count, entries, problems, count_line = cp._scan(data, cp._parse_offset_entry, "f")
    return cp.CheckpointScan(cp.OffsetCheckpoint(version, entries, count, count_line), problems)


def _same(data: bytes) -> None:
    try:
        expected = _general(data)
    except FormatError as e:
        with pytest.raises(FormatError) as err:
            cp.scan_offset_checkpoint(data, source="f")
        assert (err.value.position, str(err.value)) == (e.position, str(e))
        return
    assert cp.scan_offset_checkpoint(data, source="f") == expected


# every way a file can differ from what the broker writes, each close to a written file
_EDITS = [
    lambda s: s.replace("\n", "\r\n"),
    lambda s: s.replace(" ", "\t", 1),
    lambda s: s.replace(" ", "  ", 1),
    lambda s: s[:-1],  # no line end after the last line
    lambda s: s + "\n",  # an empty last line
    lambda s: "1" + s[1:],  # another version
    lambda s: "00" + s[1:],
    lambda s: s.replace("\n", "\n+", 1),  # a signed count
    lambda s: s.replace("\n", "\n9", 1),  # a stale count
    lambda s: s.replace(" ", " 0", 1),  # a leading zero in the partition
    lambda s: s.replace(" ", " 9999999999", 1),  # a partition past Integer.MAX_VALUE
    lambda s: s + "t 0 99999999999999999999\n",  # an offset past Long.MAX_VALUE
    lambda s: s + "t 0 -1\n",
    lambda s: s + "t\u00e9 0 1\n",  # not ASCII
    lambda s: s + "t 0 1 2\n",
    lambda s: s + " 0 1\n",
    lambda s: s + "t\x00 0 1\n",
]


@given(st.lists(ENTRY, max_size=20), st.lists(st.integers(0, len(_EDITS) - 1), max_size=3))
def test_written_and_edited_files_read_as_the_general_reading_does(entries, edits):
    text = cp.write_offset_checkpoint(cp.new_offset_checkpoint(entries)).decode()
    for i in edits:
        text = _EDITS[i](text)
    _same(text.encode("utf-8"))


@given(st.binary(max_size=300))
def test_arbitrary_bytes_read_as_the_general_reading_does(data):
    _same(data)


@given(st.lists(ENTRY, max_size=20))
def test_a_written_file_takes_the_fast_reading(entries):
    data = cp.write_offset_checkpoint(cp.new_offset_checkpoint(entries))
    fast = cp._as_written(data)
    if all(0 <= o < 10**18 and p < 10**9 for _, p, o in entries):
        assert fast == entries
    else:  # negative and 19-digit offsets, 10-digit partitions: the general reading
        assert fast is None


@pytest.mark.parametrize(
    "path",
    realworld.params(p for p in realworld.files() if p.name.endswith("offset-checkpoint")),
)
def test_kafkas_own_checkpoints_take_the_fast_reading_with_the_same_entries(path):
    """Every offset checkpoint a broker wrote in ../shared/realworld (Kafka 2.1 to 4.2)."""
    data = path.read_bytes()
    expected = _general(data)
    assert expected.problems == []  # written by a broker: nothing to report
    # an empty file (no version line: what a broker leaves when it never wrote one) is the general reading's
    assert cp._as_written(data) == (expected.checkpoint.entries if data else None)
    assert cp.scan_offset_checkpoint(data, source=str(path)) == expected


def test_the_fast_reading_builds_no_line_objects(monkeypatch: pytest.MonkeyPatch):
    entries = [(f"t{i // 100}", i % 100, i) for i in range(5000)]
    data = cp.write_offset_checkpoint(cp.new_offset_checkpoint(entries))
    made = []
    real = cp.split_lines
    monkeypatch.setattr(cp, "split_lines", lambda *a, **kw: made.append(1) or real(*a, **kw))
    assert cp.scan_offset_checkpoint(data).checkpoint.entries == entries
    assert cp.line_positions(data)[:5] == [0, 2, 7, 14, 21]
    assert made == []


@given(st.binary(max_size=300))
def test_line_positions_are_split_lines_positions(data):
    try:
        expected = [ln.position for ln in cp.split_lines(data)]
    except FormatError as e:
        with pytest.raises(FormatError) as err:
            cp.line_positions(data)
        assert err.value.position == e.position
        return
    assert cp.line_positions(data) == expected


LINES = st.lists(st.sampled_from(["a", "bb", "", "t 0 1", "\u00e9"]), max_size=10)


@given(LINES, st.sampled_from(["\n", ""]))
def test_line_positions_of_text_lines(lines, end):
    data = "\n".join(lines).encode() + (end.encode() if lines else b"")
    assert cp.line_positions(data) == [ln.position for ln in cp.split_lines(data)]
