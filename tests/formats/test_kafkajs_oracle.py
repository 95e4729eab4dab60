"""kafkajs (npm) as a second independent oracle for the record format, next to kafka-python.

One node process (tests/oracles/kafkajs/oracle.js, kafkajs 2.2.4 with its snappy/lz4/zstd codec
plug-ins) serves the whole module over JSON Lines; each test sends its cases in one request.

Cross-checked:
- batches we build (writer.build_record_batch, legacy.build_message_set, sample.records) are
  decoded by kafkajs's RecordBatch / MessageSet decoders to the same header fields and records;
- batches kafkajs encodes (its RecordBatch encoder with every field given, its producer's
  ProduceRequest v3 path, its MessageSet encoder) are decoded by us to the inputs, and uncompressed
  ones are byte-identical to what our writer builds for the same inputs (compressed ones: same
  header, same records once decompressed);
- every non-empty real .log file in ../shared/realworld is decoded by both, entry by entry.

What kafkajs cannot express or decode is pinned down by the tests at the end (TestKafkajsLimits),
and the property tests keep out of exactly those cases:
- it represents a record's headers as an object {key: value | [values]}: the order across keys
  is lost (and canonical array-index keys such as "7" come first, as in any JS object);
- header keys naming Object.prototype members ("constructor", "toString", "__proto__") get that
  member folded into their value;
- its Record encoder throws on a null header value (Buffer.byteLength(null));
- its lz4 codec (node-lz4) rejects the header checksum that Kafka writes for magic 0 lz4
  (computed over the magic number too: KafkaLZ4BlockOutputStream's broken v0 checksum);
- its v1 message-set decoder keeps inner messages' own timestamps, where Kafka gives the inner
  records of a LogAppendTime wrapper the wrapper's timestamp.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers
from logdoctor.formats import codecs
from logdoctor.formats.control import build_end_txn_marker
from logdoctor.formats.crc import crc32
from logdoctor.formats.legacy import build_message_set
from logdoctor.formats.record_types import Batch, Compression, Header, RecordSpec, TimestampType
from logdoctor.formats.records import iter_batches
from logdoctor.formats.writer import build_record_batch
from logdoctor.sample.records import RecordDataSpec, generate_segment

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_DIR = REPO_ROOT / "tests" / "oracles" / "kafkajs"
ENSURE = REPO_ROOT / "scripts" / "ensure-kafkajs.sh"

KAFKAJS_VERSION = "2.2.4"
V2_HEADER = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
# Object.prototype members: kafkajs's header fold (recordBatch/record/v0/decoder.js) reads obj[key]
# and finds these even when the record has no such header.
JS_PROTOTYPE_KEYS = frozenset(
    {
        "constructor", "__proto__", "toString", "toLocaleString", "valueOf", "hasOwnProperty",
        "isPrototypeOf", "propertyIsEnumerable", "__defineGetter__", "__defineSetter__",
        "__lookupGetter__", "__lookupSetter__",
    }
)  # fmt: skip

HYPOTHESIS = settings(
    max_examples=tiers.examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------------------------
# The oracle process


class KafkaJS:
    """The node process: one JSON line per request, one per answer."""

    def __init__(self, proc: subprocess.Popen[str], stderr_path: Path) -> None:
        self._proc = proc
        self._stderr_path = stderr_path

    def _send(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"kafkajs oracle died: {self._stderr_path.read_text()[-2000:]}")
        return json.loads(line)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request; its answer, or the kafkajs error as {"ok": False, "error": ...}."""
        return self._send(request)

    def many(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        if not requests:
            return []
        answer = self._send({"op": "many", "cmds": list(requests)})
        assert answer["ok"], answer
        return answer["results"]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@pytest.fixture(scope="session")
def kafkajs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaJS]:
    # Installs tests/oracles/kafkajs/node_modules on a fresh machine (npm ci); a machine without
    # node fails here with the script's message rather than skipping the oracle silently.
    done = subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"kafkajs oracle not available ({ENSURE.name} exit {done.returncode}):\n{done.stderr}")
    node = shutil.which("node")
    assert node is not None
    stderr_path = tmp_path_factory.mktemp("kafkajs") / "stderr.txt"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [node, str(ORACLE_DIR / "oracle.js")],
            cwd=ORACLE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            encoding="utf-8",
        )
    oracle = KafkaJS(proc, stderr_path)
    yield oracle
    oracle.close()


# --------------------------------------------------------------------------------------------
# Conversions


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


HeaderGroups = dict[str, list[bytes | None]]


def grouped(headers: Sequence[Header]) -> HeaderGroups:
    """Headers as kafkajs keeps them: values by key, in order within a key (dict equality ignores
    the order across keys, which kafkajs's object cannot keep)."""
    out: HeaderGroups = {}
    for h in headers:
        out.setdefault(h.key, []).append(h.value)
    return out


def js_grouped(pairs: list[list[Any]]) -> HeaderGroups:
    return {key: [unb64(v) for v in values] for key, values in pairs}


def decode_ours(data: bytes) -> list[Batch]:
    return list(iter_batches(data, source="oracle-test", verify_crc=True))


def js_record_view(r: dict[str, Any]) -> tuple:
    headers = js_grouped(r["headers"])
    return (int(r["offset"]), int(r["timestamp"]), unb64(r["key"]), unb64(r["value"]), headers)


def assert_v2_entry_matches(js: dict[str, Any], ours: Batch) -> None:
    """kafkajs's decoding of one v2 batch (recordBatch/v0/decoder.js) equals ours, field by field."""
    assert "error" not in js, js.get("error")
    assert (js["position"], js["size"], js["magic"]) == (ours.position, ours.size, 2)
    js_header = (
        int(js["firstOffset"]),
        js["lastOffsetDelta"],
        js["partitionLeaderEpoch"],
        int(js["producerId"]),
        js["producerEpoch"],
        js["firstSequence"],
        js["inTransaction"],
        js["isControlBatch"],
        js["timestampType"],
        # the raw baseTimestamp field: the delete horizon when that attribute bit is set (kafkajs
        # does not know the bit; records stay relative to the field either way)
        int(js["firstTimestamp"]),
        int(js["maxTimestamp"]),
        js["crcValid"],  # kafkajs's own CRC-32C over attributes..end against the stored CRC
        len(js["records"]),
    )
    our_header = (
        ours.base_offset,
        ours.last_offset - ours.base_offset,
        ours.partition_leader_epoch,
        ours.producer_id,
        ours.producer_epoch,
        ours.base_sequence,
        ours.is_transactional,
        ours.is_control,
        int(ours.timestamp_type),
        ours.base_timestamp,  # type: ignore[attr-defined]
        ours.max_timestamp,
        ours.crc_valid(),
        ours.record_count,
    )
    assert js_header == our_header
    records = list(ours.records())
    # With LogAppendTime both give every record the batch's max timestamp (DefaultRecordBatch.
    # DefaultRecordBatch's iterator; kafkajs: recordBatch/record/v0/decoder.js).
    assert [js_record_view(r) for r in js["records"]] == [
        (r.offset, r.timestamp, r.key, r.value, grouped(r.headers)) for r in records
    ]
    assert all(r["isControlRecord"] == ours.is_control for r in js["records"])


def assert_legacy_entry_matches(js: dict[str, Any], ours: Batch) -> None:
    """kafkajs's decoding of one v0/v1 entry (messageSet/decoder.js) equals ours."""
    assert "error" not in js, js.get("error")
    assert (js["position"], js["size"], js["magic"]) == (ours.position, ours.size, ours.magic)
    records = list(ours.records())
    messages = js["messages"]
    assert [(int(m["offset"]), unb64(m["key"]), unb64(m["value"])) for m in messages] == [
        (r.offset, r.key, r.value) for r in records
    ]
    if ours.magic == 0:
        assert all(m["timestamp"] is None for m in messages)
        assert all(r.timestamp == -1 for r in records)
    elif not (ours.compression != Compression.NONE and ours.timestamp_type == TimestampType.LOG_APPEND_TIME):
        assert [int(m["timestamp"]) for m in messages] == [r.timestamp for r in records]
    # else: a LogAppendTime wrapper. Kafka gives its inner records the wrapper's timestamp
    # (AbstractLegacyRecordBatch.DeepRecordsIterator), kafkajs keeps each inner message's own
    # timestamp; they agree only where the inner timestamps were written as the append time too
    # (as our writer does, see TestKafkajsLimits.test_v1_log_append_time_wrapper).


def assert_entries_match(js_entries: list[dict[str, Any]], ours: list[Batch]) -> None:
    assert len(js_entries) == len(ours)
    for js, batch in zip(js_entries, ours, strict=True):
        if batch.magic == 2:
            assert_v2_entry_matches(js, batch)
        else:
            assert_legacy_entry_matches(js, batch)


def fetch_timestamps(batches: list[Batch]) -> list[str | None]:
    """Our records' timestamps as kafkajs's fetch path reports them (a v0 message has none)."""
    return [str(r.timestamp) if b.magic > 0 else None for b in batches for r in b.records()]


def decode_request(data: bytes, *, fetch: bool = False) -> dict[str, Any]:
    return {"op": "decode", "bytes": b64(data), "fetch": fetch}


# --------------------------------------------------------------------------------------------
# Strategies

timestamps = st.one_of(
    st.integers(1_500_000_000_000, 1_800_000_000_000),  # what brokers see
    st.integers(0, 2**62),
    st.just(-1),  # RecordBatch.NO_TIMESTAMP, allowed per record
)
blobs = st.binary(max_size=48)
maybe_blobs = st.none() | blobs
header_keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8).filter(
    lambda k: k not in JS_PROTOTYPE_KEYS
)
headers = st.lists(st.builds(Header, header_keys, maybe_blobs), max_size=4).map(tuple)
record_specs = st.builds(
    RecordSpec, value=maybe_blobs, key=maybe_blobs, timestamp=timestamps, headers=headers
)


def _is_js_index_key(key: str) -> bool:
    """A canonical array index ("0".."4294967294"): a JS object lists such keys first, by value."""
    return re.fullmatch(r"0|[1-9][0-9]{0,9}", key) is not None and int(key) < 2**32 - 1


# Headers kafkajs's Record encoder can express in our order: distinct keys (values grouped), no index
# keys, no null values (see TestKafkajsLimits).
header_groups = st.lists(
    st.tuples(header_keys.filter(lambda k: not _is_js_index_key(k)), st.lists(blobs, min_size=1, max_size=3)),
    max_size=3,
    unique_by=lambda g: g[0],
)


@st.composite
def our_batches(draw: st.DrawFn) -> dict[str, Any]:
    """build_record_batch arguments over every codec and attribute."""
    is_control = draw(st.booleans())
    if is_control:
        key, value = build_end_txn_marker(draw(st.booleans()), draw(st.integers(0, 2**31 - 1)))
        records = [RecordSpec(value=value, key=key, timestamp=draw(timestamps))]
    else:
        records = draw(st.lists(record_specs, max_size=6))
    if records and draw(st.booleans()):  # compacted: gaps between offsets
        delta = -1
        gapped = []
        for r in records:
            delta += draw(st.integers(1, 1000))
            gapped.append(RecordSpec(r.value, r.key, r.timestamp, r.headers, offset_delta=delta))
        records = gapped
    ts_type = draw(st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]))
    kwargs: dict[str, Any] = dict(
        base_offset=draw(st.integers(0, 2**62)),
        compression=draw(st.sampled_from(list(Compression))),
        timestamp_type=ts_type,
        producer_id=draw(st.just(-1) | st.integers(0, 2**63 - 1)),
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        is_transactional=draw(st.booleans()),
        is_control=is_control,
        delete_horizon_ms=draw(st.none() | st.integers(0, 2**62)),
    )
    if ts_type == TimestampType.LOG_APPEND_TIME:
        kwargs["log_append_time"] = draw(st.none() | st.integers(0, 2**62))
    if not records:
        kwargs["last_offset_delta"] = draw(st.integers(0, 2**31 - 1))  # an emptied compacted batch
    return {"records": records, **kwargs}


@st.composite
def js_batches(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments of kafkajs's RecordBatch encoder, every header field given explicitly."""
    n = draw(st.integers(0, 6))
    recs = []
    delta = -1
    for _ in range(n):
        delta += draw(st.integers(1, 3)) if draw(st.booleans()) else 1
        recs.append(
            {
                "offsetDelta": delta,
                "timestamp": draw(timestamps),
                "key": draw(maybe_blobs),
                "value": draw(maybe_blobs),
                "headers": draw(header_groups),
            }
        )
    return {
        "records": recs,
        "compression": draw(st.sampled_from(list(Compression))),
        "firstOffset": draw(st.integers(0, 2**62)),
        "partitionLeaderEpoch": draw(st.integers(-1, 2**31 - 1)),
        "lastOffsetDelta": delta if recs else draw(st.integers(0, 2**31 - 1)),
        "transactional": draw(st.booleans()),
        "producerId": draw(st.just(-1) | st.integers(0, 2**63 - 1)),
        "producerEpoch": draw(st.integers(-1, 2**15 - 1)),
        "firstSequence": draw(st.integers(-1, 2**31 - 1)),
    }


def specs_of(case: dict[str, Any]) -> list[RecordSpec]:
    """The RecordSpecs our writer gets for a kafkajs case (headers flattened group by group)."""
    return [
        RecordSpec(
            value=r["value"],
            key=r["key"],
            timestamp=r["timestamp"],
            headers=tuple(Header(k, v) for k, values in r["headers"] for v in values),
            offset_delta=r.get("offsetDelta"),
        )
        for r in case["records"]
    ]


def js_headers(groups: list[tuple[str, list[bytes]]]) -> list[list[Any]]:
    return [[k, [b64(v) for v in values]] for k, values in groups]


# --------------------------------------------------------------------------------------------
# The oracle itself


def test_oracle_versions_and_codecs(kafkajs: KafkaJS) -> None:
    info = kafkajs.call({"op": "info"})
    assert info["ok"], info
    package = json.loads((ORACLE_DIR / "package.json").read_text())
    assert package["dependencies"]["kafkajs"] == KAFKAJS_VERSION == info["kafkajs"]
    # package.json installs a codec plug-in for each: one that does not load is a broken install
    assert info["codecs"] == {"gzip": True, "snappy": True, "lz4": True, "zstd": True}, info["codecErrors"]


def test_unknown_op_is_an_error_not_a_crash(kafkajs: KafkaJS) -> None:
    answer = kafkajs.call({"op": "no-such-op"})
    assert answer == {"ok": False, "error": {"name": "Error", "message": 'unknown op "no-such-op"'}}
    assert kafkajs.call({"op": "info"})["ok"]


# --------------------------------------------------------------------------------------------
# Our bytes, kafkajs's decoders


@HYPOTHESIS
@given(st.lists(our_batches(), min_size=1, max_size=20))
def test_our_v2_batches_decoded_by_kafkajs(kafkajs: KafkaJS, cases: list[dict[str, Any]]) -> None:
    built = [build_record_batch(**case) for case in cases]
    answers = kafkajs.many([decode_request(data) for data in built])
    for case, data, answer in zip(cases, built, answers, strict=True):
        assert answer["ok"] and answer["stop"] is None, answer
        (js,) = answer["entries"]
        (ours,) = decode_ours(data)
        assert_v2_entry_matches(js, ours)
        # and both equal what was written
        records: list[RecordSpec] = case["records"]
        base = case["base_offset"]
        assert int(js["firstOffset"]) == base and js["crcValid"]
        assert js["producerId"] == str(case["producer_id"]) and js["isControlBatch"] == case["is_control"]
        assert js["partitionLeaderEpoch"] == case["partition_leader_epoch"]
        lat = case["timestamp_type"] == TimestampType.LOG_APPEND_TIME
        expected = [
            (
                base + (i if r.offset_delta is None else r.offset_delta),
                int(js["maxTimestamp"]) if lat else r.timestamp,
                r.key,
                r.value,
                grouped(r.headers),
            )
            for i, r in enumerate(records)
        ]
        assert [js_record_view(r) for r in js["records"]] == expected
        if lat and records and case.get("log_append_time") is not None:
            assert int(js["maxTimestamp"]) == case["log_append_time"]


@HYPOTHESIS
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1]),
            st.sampled_from([Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]),
            st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
            st.lists(
                st.builds(RecordSpec, value=maybe_blobs, key=maybe_blobs, timestamp=st.integers(0, 2**62)),
                min_size=1,
                max_size=6,
            ),
            st.integers(0, 2**62),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_our_message_sets_decoded_by_kafkajs(kafkajs: KafkaJS, cases: list[tuple]) -> None:
    cases = [c for c in cases if not (c[0] == 0 and c[1] == Compression.LZ4)]  # TestKafkajsLimits
    # TestKafkajsLimits: kafkajs computes a compressed v1 wrapper's inner offsets in JS numbers
    cases = [c for c in cases if not (c[0] == 1 and c[1] != Compression.NONE and c[4] + len(c[3]) > 2**53)]
    built = [
        build_message_set(recs, magic=magic, base_offset=base, compression=codec, timestamp_type=tt)
        for magic, codec, tt, recs, base in cases
    ]
    answers = kafkajs.many([decode_request(data) for data in built])
    for (_magic, _codec, _tt, recs, base), data, answer in zip(cases, built, answers, strict=True):
        assert answer["ok"] and answer["stop"] is None, answer
        ours = decode_ours(data)
        assert_entries_match(answer["entries"], ours)
        messages = [m for e in answer["entries"] for m in e["messages"]]
        assert [(int(m["offset"]), unb64(m["key"]), unb64(m["value"])) for m in messages] == [
            (base + i, r.key, r.value) for i, r in enumerate(recs)
        ]


SAMPLE_SPECS = [
    RecordDataSpec(seed=1, record_count=400, value_size=200, headers_per_record=2, null_key_ratio=0.2,
                   tombstone_ratio=0.1, compression=Compression.NONE),
    RecordDataSpec(seed=2, record_count=400, value_size=300, value_size_distribution="lognormal",
                   compression=Compression.GZIP, transactional=True, producers=3),
    RecordDataSpec(seed=3, record_count=300, compression=Compression.SNAPPY, idempotent=True,
                   timestamp_type=TimestampType.LOG_APPEND_TIME, headers_per_record=1),
    RecordDataSpec(seed=4, record_count=300, compression=Compression.LZ4, transactional=True,
                   abort_ratio=0.5, base_offset=10**12, partition_leader_epoch=7),
    RecordDataSpec(seed=5, record_count=300, compression=Compression.ZSTD, value_kind="random",
                   key_cardinality=0),
    RecordDataSpec(seed=6, record_count=200, magic=1, compression=Compression.NONE),
    RecordDataSpec(seed=7, record_count=200, magic=1, compression=Compression.GZIP,
                   timestamp_type=TimestampType.LOG_APPEND_TIME),
    RecordDataSpec(seed=8, record_count=200, magic=0, compression=Compression.SNAPPY),
]  # fmt: skip


def test_sample_segments_decoded_by_kafkajs(kafkajs: KafkaJS) -> None:
    """Whole segments of logdoctor.sample.records (producer-like batching, transactions with their
    COMMIT/ABORT control batches, every codec): kafkajs walks them to the same entries."""
    segments = [generate_segment(spec) for spec in SAMPLE_SPECS]
    answers = kafkajs.many([decode_request(data, fetch=True) for data, _ in segments])
    for spec, (data, info), answer in zip(SAMPLE_SPECS, segments, answers, strict=True):
        assert answer["ok"] and answer["stop"] is None, answer
        ours = decode_ours(data)
        assert len(ours) == len(info.batches) > 1
        assert_entries_match(answer["entries"], ours)
        if spec.transactional:
            assert any(e["isControlBatch"] for e in answer["entries"])
        # kafkajs's fetch path (decodeMessages over the whole buffer) gives the same flat records
        flat = [r for b in ours for r in b.records()]
        assert answer["fetch"]["offsets"] == [str(r.offset) for r in flat]
        assert answer["fetch"]["timestamps"] == fetch_timestamps(ours)


# --------------------------------------------------------------------------------------------
# kafkajs's bytes, our decoders (and our writer's bytes)


def js_encode_request(case: dict[str, Any]) -> dict[str, Any]:
    """kafkajs's RecordBatch encoder with the header fields the Java client's MemoryRecordsBuilder
    picks: baseTimestamp = the first record's timestamp, maxTimestamp = the largest."""
    recs = case["records"]
    first = recs[0]["timestamp"] if recs else -1
    return {
        "op": "encode",
        "compression": int(case["compression"]),
        "firstOffset": str(case["firstOffset"]),
        "partitionLeaderEpoch": case["partitionLeaderEpoch"],
        "firstTimestamp": str(first),
        "maxTimestamp": str(max((r["timestamp"] for r in recs), default=-1)),
        "lastOffsetDelta": case["lastOffsetDelta"],
        "transactional": case["transactional"],
        "producerId": str(case["producerId"]),
        "producerEpoch": case["producerEpoch"],
        "firstSequence": case["firstSequence"],
        "records": [
            {
                "offsetDelta": r["offsetDelta"],
                "timestampDelta": str(r["timestamp"] - first),
                "key": b64(r["key"]),
                "value": b64(r["value"]),
                "headers": js_headers(r["headers"]),
            }
            for r in recs
        ],
    }


def our_build(case: dict[str, Any], compression: Compression) -> bytes:
    return build_record_batch(
        specs_of(case),
        base_offset=case["firstOffset"],
        compression=compression,
        producer_id=case["producerId"],
        producer_epoch=case["producerEpoch"],
        base_sequence=case["firstSequence"],
        partition_leader_epoch=case["partitionLeaderEpoch"],
        is_transactional=case["transactional"],
        last_offset_delta=case["lastOffsetDelta"],
    )


def payload(batch: bytes, compression: Compression) -> bytes:
    """The records section, decompressed (an empty section stays empty)."""
    section = batch[V2_HEADER:]
    if compression == Compression.NONE or not section:
        return section
    return codecs.decompress(compression, section, magic=2)


def header_without_length_and_crc(batch: bytes) -> bytes:
    return batch[:8] + batch[12:17] + batch[21:V2_HEADER]


@HYPOTHESIS
@given(st.lists(js_batches(), min_size=1, max_size=20))
def test_kafkajs_record_batches_decoded_by_us(kafkajs: KafkaJS, cases: list[dict[str, Any]]) -> None:
    answers = kafkajs.many([js_encode_request(case) for case in cases])
    for case, answer in zip(cases, answers, strict=True):
        assert answer["ok"], answer
        data = unb64(answer["bytes"])
        assert data is not None
        (batch,) = decode_ours(data)  # verify_crc: kafkajs's CRC-32C is right
        compression = case["compression"]
        specs = specs_of(case)
        assert (
            batch.base_offset,
            batch.last_offset,
            batch.compression,
            batch.timestamp_type,
            batch.partition_leader_epoch,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.is_transactional,
            batch.is_control,
            batch.has_delete_horizon,
            batch.record_count,
            batch.max_timestamp,
        ) == (
            case["firstOffset"],
            case["firstOffset"] + case["lastOffsetDelta"],
            compression,
            TimestampType.CREATE_TIME,  # kafkajs's encoder never sets the LogAppendTime bit
            case["partitionLeaderEpoch"],
            case["producerId"],
            case["producerEpoch"],
            case["firstSequence"],
            case["transactional"],
            False,  # nor the control bit
            False,
            len(specs),
            max((s.timestamp for s in specs), default=-1),
        )
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()] == [
            (case["firstOffset"] + s.offset_delta, s.timestamp, s.key, s.value, s.headers)  # type: ignore[operator]
            for s in specs
        ]
        ours = our_build(case, compression)
        if compression == Compression.NONE:
            assert data == ours
        else:
            # Compressors differ (kafkajs: zlib's gzip, snappyjs raw snappy without xerial framing,
            # node-lz4 frames with a content checksum, zstd's defaults), and kafkajs compresses an
            # empty records section where we write none; the header (but for length and CRC) and
            # the records inside the compression must be the same bytes.
            assert header_without_length_and_crc(data) == header_without_length_and_crc(ours)
            assert payload(data, compression) == payload(ours, compression)


produce_timestamps = st.integers(10**12, 10**13 - 1)  # 13 digits: see test_kafkajs_producer_batches


@st.composite
def js_produce_cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 6))
    messages = [
        {
            "key": draw(maybe_blobs),
            "value": draw(maybe_blobs),
            "timestamp": draw(produce_timestamps),
            "headers": draw(header_groups),
        }
        for _ in range(n)
    ]
    case: dict[str, Any] = {"compression": draw(st.sampled_from(list(Compression))), "messages": messages}
    if draw(st.booleans()):  # idempotent / transactional producer
        case["producerId"] = draw(st.integers(0, 2**63 - 1))
        case["producerEpoch"] = draw(st.integers(0, 2**15 - 1))
        case["firstSequence"] = draw(st.integers(0, 2**31 - 1))
        if draw(st.booleans()):
            case["transactionalId"] = "tx"
    return case


@HYPOTHESIS
@given(st.lists(js_produce_cases(), min_size=1, max_size=20))
def test_kafkajs_producer_batches(kafkajs: KafkaJS, cases: list[dict[str, Any]]) -> None:
    """The batch kafkajs's producer puts in a ProduceRequest (v3, requests/produce/v3/request.js).

    Where its choices differ from the Java client's, both are legal and decode the same:
    - partitionLeaderEpoch 0, and producerEpoch 0 / firstSequence 0 without a producer id (Java
      writes -1s): the broker overwrites the leader epoch on append (LogValidator) and ignores
      epoch and sequence when producerId is -1;
    - baseTimestamp = the smallest timestamp, not the first record's: deltas are signed varlongs
      against any base. kafkajs finds it with a plain JS .sort(), which orders as strings, so it is
      the smallest only while all timestamps have the same number of digits (13 for 2001..2286):
      the strategy keeps to that.
    """
    requests = []
    for case in cases:
        request = {
            "op": "produce",
            "compression": int(case["compression"]),
            "messages": [
                {
                    "key": b64(m["key"]),
                    "value": b64(m["value"]),
                    "timestamp": str(m["timestamp"]),
                    "headers": js_headers(m["headers"]),
                }
                for m in case["messages"]
            ],
        }
        for k in ("producerEpoch", "firstSequence", "transactionalId"):
            if k in case:
                request[k] = case[k]
        if "producerId" in case:
            request["producerId"] = str(case["producerId"])
        requests.append(request)
    answers = kafkajs.many(requests)
    for case, answer in zip(cases, answers, strict=True):
        assert answer["ok"], answer
        data = unb64(answer["bytes"])
        assert data is not None
        (batch,) = decode_ours(data)
        msgs = case["messages"]
        ts = [m["timestamp"] for m in msgs]
        assert (
            batch.base_offset,
            batch.last_offset,
            batch.partition_leader_epoch,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.is_transactional,
            batch.base_timestamp,  # type: ignore[attr-defined]
            batch.max_timestamp,
            batch.compression,
        ) == (
            0,
            len(msgs) - 1,
            0,
            case.get("producerId", -1),
            case.get("producerEpoch", 0),
            case.get("firstSequence", 0),
            "transactionalId" in case,
            min(ts),
            max(ts),
            case["compression"],
        )
        specs = specs_of({"records": msgs})
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()] == [
            (i, s.timestamp, s.key, s.value, s.headers) for i, s in enumerate(specs)
        ]
        if case["compression"] == Compression.NONE and ts[0] == min(ts):
            # same base timestamp as the Java client would pick: the very same bytes
            assert data == build_record_batch(
                specs,
                base_offset=0,
                partition_leader_epoch=0,
                producer_id=case.get("producerId", -1),
                producer_epoch=case.get("producerEpoch", 0),
                base_sequence=case.get("firstSequence", 0),
                is_transactional="transactionalId" in case,
            )


@HYPOTHESIS
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1]),
            st.lists(st.tuples(maybe_blobs, maybe_blobs, st.integers(0, 2**62)), min_size=1, max_size=6),
            st.integers(0, 2**62),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_kafkajs_message_sets_decoded_by_us(kafkajs: KafkaJS, cases: list[tuple]) -> None:
    """kafkajs's MessageSet encoder (messageSet/index.js, uncompressed) writes offset -1 in every
    entry, as a producer does (the broker assigns offsets); with those set to base + i the bytes
    equal build_message_set's, CRC-32 included."""
    answers = kafkajs.many(
        [
            {
                "op": "messageset",
                "magic": magic,
                "entries": [{"key": b64(k), "value": b64(v), "timestamp": str(t)} for k, v, t in entries],
            }
            for magic, entries, _ in cases
        ]
    )
    for (magic, entries, base), answer in zip(cases, answers, strict=True):
        assert answer["ok"], answer
        data = bytearray(unb64(answer["bytes"]) or b"")
        pos = i = 0
        while pos < len(data):
            (offset, size) = struct.unpack_from(">qi", data, pos)
            assert offset == -1
            struct.pack_into(">q", data, pos, base + i)
            pos += 12 + size
            i += 1
        assert i == len(entries)
        specs = [RecordSpec(value=v, key=k, timestamp=t) for k, v, t in entries]
        assert bytes(data) == build_message_set(specs, magic=magic, base_offset=base)
        records = [r for b in decode_ours(bytes(data)) for r in b.records()]
        assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
            (base + j, k, v, t if magic == 1 else -1) for j, (k, v, t) in enumerate(entries)
        ]


# --------------------------------------------------------------------------------------------
# Real broker logs

REAL_LOGS = [p for p in realworld.files(suffix=".log") if p.stat().st_size > 0]


@pytest.fixture(scope="module")
def kafkajs_real_logs(kafkajs: KafkaJS) -> dict[Path, dict[str, Any]]:
    """kafkajs's decoding of every non-empty real .log file, in one request."""
    realworld.require()
    answers = kafkajs.many([{"op": "decode", "path": str(p), "fetch": True} for p in REAL_LOGS])
    return dict(zip(REAL_LOGS, answers, strict=True))


@pytest.mark.realworld
@pytest.mark.parametrize("path", realworld.params(REAL_LOGS))
def test_real_logs_decoded_by_kafkajs(kafkajs_real_logs: dict[Path, dict[str, Any]], path: Path) -> None:
    answer = kafkajs_real_logs[path]
    assert answer["ok"], answer
    data = path.read_bytes()
    ours = list(iter_batches(data, source=str(path)))
    # the real files end on a whole entry: neither walk stops early
    assert answer["stop"] is None
    assert sum(b.size for b in ours) == len(data)
    assert_entries_match(answer["entries"], ours)
    flat = [r for b in ours for r in b.records()]
    # kafkajs's fetch path picks the format by the first entry's magic and stops a message set at a
    # v2 entry (KafkaJSUnsupportedMagicByteInMessageSet); no real file mixes formats (checked here)
    assert len({b.magic for b in ours}) == 1
    assert answer["fetch"]["offsets"] == [str(r.offset) for r in flat]
    assert answer["fetch"]["timestamps"] == fetch_timestamps(ours)


@pytest.mark.realworld
def test_real_logs_cover_v1_v2_and_control_batches(kafkajs_real_logs: dict[Path, dict[str, Any]]) -> None:
    """The real files give the comparison something to compare (else the per-file tests are thin)."""
    entries = [e for a in kafkajs_real_logs.values() for e in a["entries"]]
    assert {e["magic"] for e in entries} >= {1, 2}
    assert any(e.get("isControlBatch") for e in entries)
    assert sum(len(e.get("records", e.get("messages", []))) for e in entries) > 100_000


# --------------------------------------------------------------------------------------------
# What kafkajs cannot do (pinned so that a kafkajs upgrade that changes them is noticed)


class TestKafkajsLimits:
    def _decode_one(self, kafkajs: KafkaJS, data: bytes) -> dict[str, Any]:
        answer = kafkajs.call(decode_request(data))
        assert answer["ok"], answer
        (entry,) = answer["entries"]
        return entry

    def test_compressed_v1_inner_offsets_past_2_53_lose_precision(self, kafkajs: KafkaJS) -> None:
        # messageSet/decoder.js: `compressedOffset - lastMessageOffset` subtracts two Longs as JS
        # numbers (doubles), so absolute offsets above 2^53 come out rounded; ours are exact
        base = 2**53 + 1
        recs = [RecordSpec(value=b"v", key=None, timestamp=5)]
        data = build_message_set(recs, magic=1, base_offset=base, compression=Compression.GZIP)
        (entry,) = kafkajs.call(decode_request(data))["entries"]
        assert [int(m["offset"]) for m in entry["messages"]] == [2**53]
        assert [r.offset for b in decode_ours(data) for r in b.records()] == [base]

    def test_headers_lose_their_order_across_keys(self, kafkajs: KafkaJS) -> None:
        # recordBatch/record/v0/decoder.js folds headers into an object; JS lists index-like keys first
        hs = (Header("b", b"1"), Header("a", b"2"), Header("b", b"3"), Header("7", b"4"))
        data = build_record_batch([RecordSpec(value=b"v", timestamp=5, headers=hs)], base_offset=0)
        (record,) = self._decode_one(kafkajs, data)["records"]
        assert record["headers"] == [["7", [b64(b"4")]], ["b", [b64(b"1"), b64(b"3")]], ["a", [b64(b"2")]]]
        (ours,) = decode_ours(data)[0].records()
        assert ours.headers == hs

    @pytest.mark.parametrize("key", ["constructor", "toString", "__proto__"])
    def test_header_keys_naming_object_prototype_members(self, kafkajs: KafkaJS, key: str) -> None:
        data = build_record_batch(
            [RecordSpec(value=b"v", timestamp=5, headers=(Header(key, b"x"),))], base_offset=0
        )
        (record,) = self._decode_one(kafkajs, data)["records"]
        ((js_key, values),) = record["headers"]
        # kafkajs: obj[key] is the inherited member, not undefined, so it becomes [member, value]
        assert js_key == key and len(values) == 2
        assert isinstance(values[0], dict) and "notBytes" in values[0]
        assert values[1] == b64(b"x")
        (ours,) = decode_ours(data)[0].records()
        assert ours.headers == (Header(key, b"x"),)

    def test_null_header_value_cannot_be_encoded(self, kafkajs: KafkaJS) -> None:
        # recordBatch/record/v0/index.js sizes headers with Buffer.byteLength(header.value) before
        # its null check; the decoder reads a null header value fine (our_v2_batches test)
        request = js_encode_request(
            {
                "records": [{"offsetDelta": 0, "timestamp": 5, "key": None, "value": None, "headers": []}],
                "compression": Compression.NONE,
                "firstOffset": 0,
                "partitionLeaderEpoch": 0,
                "lastOffsetDelta": 0,
                "transactional": False,
                "producerId": -1,
                "producerEpoch": 0,
                "firstSequence": 0,
            }
        )
        request["records"][0]["headers"] = [["h", [None]]]
        answer = kafkajs.call(request)
        assert not answer["ok"]
        assert answer["error"]["name"] == "TypeError" and "Received null" in answer["error"]["message"]

    def test_v0_lz4_broken_header_checksum_rejected(self, kafkajs: KafkaJS) -> None:
        # Kafka writes magic 0 lz4 with the frame descriptor checksum over the magic number too
        # (KafkaLZ4BlockOutputStream, useBrokenFlagDescriptorChecksum); node-lz4 checks it
        recs = [RecordSpec(value=b"x", key=b"k"), RecordSpec(value=None)]
        data = build_message_set(recs, magic=0, base_offset=3, compression=Compression.LZ4)
        entry = self._decode_one(kafkajs, data)
        assert entry["error"] == {"name": "Error", "message": "Invalid stream descriptor checksum @6"}
        assert [(r.offset, r.key, r.value) for r in decode_ours(data)[0].records()] == [
            (3, b"k", b"x"),
            (4, None, None),
        ]
        v1 = build_message_set(recs, magic=1, base_offset=3, compression=Compression.LZ4)
        assert "error" not in self._decode_one(kafkajs, v1)  # v1 frames carry the right checksum

    def test_v1_log_append_time_wrapper(self, kafkajs: KafkaJS) -> None:
        # A broker assigning LogAppendTime to a v1 wrapper rewrites the wrapper only; Kafka's reader
        # gives the inner records the wrapper's time, kafkajs each inner message's own
        recs = [RecordSpec(value=b"a", timestamp=7), RecordSpec(value=b"b", timestamp=9)]
        data = bytearray(
            build_message_set(
                recs, magic=1, base_offset=0, compression=Compression.GZIP,
                timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=11,
            )
        )  # fmt: skip
        entry = self._decode_one(kafkajs, bytes(data))
        assert [m["timestamp"] for m in entry["messages"]] == ["11", "11"]  # our writer: inner = wrapper
        # the broker's way: only the wrapper's timestamp (and CRC) rewritten
        created = build_message_set(recs, magic=1, base_offset=0, compression=Compression.GZIP)
        broker = bytearray(created)
        broker[17] |= 0x08  # LogAppendTime attribute bit of the wrapper
        struct.pack_into(">q", broker, 18, 11)
        struct.pack_into(">I", broker, 12, crc32(bytes(broker[16:])))
        entry = self._decode_one(kafkajs, bytes(broker))
        assert [m["timestamp"] for m in entry["messages"]] == ["7", "9"]
        assert [r.timestamp for r in decode_ours(bytes(broker))[0].records()] == [11, 11]
