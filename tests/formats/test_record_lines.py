"""``dump --deep``'s record lines written a batch at a time by the C extension (``formats.record_lines``,
``_speedups.record_lines``) against the record-by-record Python path (``cli.dump.text``), on batches built by
kafka-python (an independent encoder) and on those batches damaged byte by byte: the same text from both
paths, the C function leaving every batch it cannot print exactly (a record that does not decode, a header
key that is not printable ASCII) to the Python path. ``make asan-check`` runs this file, so the hostile
bytes go through the sanitized C function. What a real broker writes is compared, with Kafka's own
kafka-dump-log.sh too, by tests/brokers/test_broker_dump_lines.py."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from logdoctor.formats import native, record_lines
from logdoctor.formats.crc import crc32c

pytestmark = pytest.mark.skipif(not native.HAVE_SPEEDUPS, reason="the C extension is not built")

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000


def _batch(
    codec: int, records: list[tuple[int, int, bytes | None, bytes | None, list]], *, seq: int = -1
) -> bytes:
    """A v2 batch by kafka-python: records are (offset, timestamp, key, value, headers)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                  producer_id=7 if seq >= 0 else -1, producer_epoch=0 if seq >= 0 else -1,
                                  base_sequence=seq, batch_size=2**30)  # fmt: skip
    for offset, ts, key, value, headers in records:
        b.append(offset, ts, key, value, headers)
    return bytes(b.build())


def _fix_crc(data: bytearray, start: int = 0) -> None:
    data[start + 17 : start + 21] = crc32c(bytes(data[start + 21 :])).to_bytes(4, "big")


def _log_append_time(batch: bytes) -> bytes:
    data = bytearray(batch)
    data[22] |= 0x08
    _fix_crc(data)
    return bytes(data)


def _segment() -> list[bytes]:
    """Batches of every codec with what a record line shows: null, empty and long keys and values,
    header keys (printable ASCII, empty, Cyrillic, with a tab), sequences, timestamps before 1970, at
    the last millisecond shown as a date and past it, offsets that skip inside a batch."""
    out: list[bytes] = []
    offset = 0
    for n, codec in enumerate(CODECS.values()):
        recs = []
        for i in range(40):
            key = None if i % 5 == 0 else (b"" if i % 5 == 1 else b"k%d" % i)
            value = None if i % 7 == 0 else b"v" * (i * 13)
            headers = [("trace-id", b"x"), ("", None)] if i % 3 == 0 else []
            recs.append((offset + i, T0 + i * 997, key, value, headers))
        out.append(_batch(codec, recs, seq=n * 100))
        offset += 40
        # offsets that skip (a cleaned batch), timestamps around the ends of what a date shows
        stamps = [0, 999, 1000, -1, -2, -1000, 253402300799999, 253402300800000, 2**62, T0]
        recs = [(offset + 2 * i, ts, b"s", b"t", []) for i, ts in enumerate(stamps)]
        out.append(_batch(codec, recs))
        offset += 2 * len(stamps)
        for key in ("ключ", "tab\tkey", "esc\x1bkey", "del\x7f"):  # the Python path's (escaped) keys
            out.append(_batch(codec, [(offset, T0, b"h", b"h", [(key, b"v")])]))
            offset += 1
    out.append(_log_append_time(_batch(3, [(offset + i, T0 + i, b"a", b"b", []) for i in range(10)])))
    return out


def _dump(path: Path, *, c_lines: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str, int]:
    """Exit code, stdout and stderr of a text ``dump --deep`` of ``path`` in this process, and how many
    batches the C function printed."""
    from logdoctor.cli.dump import DumpOptions, run

    real = record_lines.record_lines
    taken = [0]

    def counted(batch, transaction_result=None):
        got = real(batch, transaction_result) if c_lines else None
        taken[0] += got is not None
        return got

    out, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(record_lines, "record_lines", counted)
        with redirect_stdout(out), redirect_stderr(err):
            code = run([str(path)], DumpOptions(deep=True), json_out=False)
    return code, out.getvalue(), err.getvalue(), taken[0]


def test_lines_are_the_python_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    batches = _segment()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    fast = _dump(path, c_lines=True, monkeypatch=monkeypatch)
    slow = _dump(path, c_lines=False, monkeypatch=monkeypatch)
    assert fast[:3] == slow[:3]
    assert fast[3] == len(batches) - 4 * len(CODECS)  # all but the batches of unprintable header keys
    text = fast[1]
    assert "headers [tab\\tkey]" in text and "headers [esc\\x1bkey]" in text and "headers [ключ]" in text
    assert "CreateTime 9999-12-31T23:59:59.999Z" in text and "CreateTime 253402300800000  " in text
    assert "CreateTime -  " in text and "CreateTime 1970-01-01T00:00:00.000Z" in text
    assert "LogAppendTime " in text and "LOG_NON_CONSECUTIVE_OFFSETS" in text


@pytest.mark.parametrize("codec", ["none", "lz4", "gzip"])
def test_damaged_batches_print_as_the_python_path_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str
) -> None:
    """Each byte of a batch's records section set to 0xff, then to 0x00 (its CRC fixed, so the records are
    read): the same output and exit code from both paths, whatever the damage does to the records."""
    recs = [
        (i, T0 + i, b"k%d" % i if i % 2 else None, b"v" * i, [("h", b"1")] if i % 3 == 0 else [])
        for i in range(6)
    ]
    good = _batch(CODECS[codec], recs, seq=5)
    path = tmp_path / "00000000000000000000.log"
    taken = 0
    for at in range(61, len(good)):
        for byte in (0xFF, 0x00):
            data = bytearray(good)
            data[at] = byte
            _fix_crc(data)
            path.write_bytes(bytes(data))
            fast = _dump(path, c_lines=True, monkeypatch=monkeypatch)
            assert fast[:3] == _dump(path, c_lines=False, monkeypatch=monkeypatch)[:3], (at, byte)
            taken += fast[3]
    assert taken > 0
