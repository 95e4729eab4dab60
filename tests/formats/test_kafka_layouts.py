"""The generated layout tables (src/logdoctor/formats/internal/kafka_layouts.py) and how the decoders
choose among layouts Kafka changed under the same version.

Bytes here are written out by hand from Kafka's JSON files (ShareGroupMetadataValue.json at 4.0.0:
Epoch int32; at 4.1.1: Epoch int32, MetadataHash int64; both version 0, flexible).
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

import kafka_schemas as ks
from logdoctor.errors import UnsupportedError
from logdoctor.formats.internal import decode_consumer_offsets, decode_lenient, decode_metadata_record
from logdoctor.formats.internal.kafka_layouts import LAYOUTS, SOURCES

REPO = Path(__file__).resolve().parents[2]


def _generator():
    path = REPO / "scripts" / "gen_kafka_layouts.py"
    spec = importlib.util.spec_from_file_location("gen_kafka_layouts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_are_what_the_json_files_give() -> None:
    """kafka_layouts.py is not stale: regenerating it from ../shared and the jars of 4.3.1 and 4.4.0 (read
    in place, each checked against brokers/jars.lock) changes nothing. Without the jars there is nothing
    to check against: a ``required:`` skip, a failure in CI."""
    if not (ks.available() and ks.available_42()):
        pytest.skip(ks.SKIP_REASON if not ks.available() else ks.SKIP_REASON_42)
    gen = _generator()
    assert tuple(r for r, _ in gen.JAR_RELEASES) == ks.JAR_RELEASES
    assert (gen.JAR_MODULES, gen.CLIENTS_ON_DISK) == (ks.JAR_MODULES, ks.CLIENTS_ON_DISK)
    ks.require_jars()
    assert gen.main(["--shared", str(ks.SCHEMAS.parent), "--kafka", str(ks.KAFKA), "--check"]) == 0


def test_check_without_the_jars_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """No jars: --check cannot compare, exits 2 (not 1, "stale") and names the first missing jar."""
    if not (ks.available() and ks.available_42()):
        pytest.skip(ks.SKIP_REASON if not ks.available() else ks.SKIP_REASON_42)
    assert _generator().main(["--shared", str(ks.SCHEMAS.parent), "--kafka", str(tmp_path), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/4.3.1/lib/kafka-clients-4.3.1.jar" in err and "ensure-kafka.sh" in err


def test_every_layout_names_its_releases_and_files() -> None:
    for name, layouts in LAYOUTS.items():
        for layout in layouts:
            assert layout.message.name == name
            assert layout.releases and set(layout.releases) <= set(SOURCES)
            assert layout.files and all(f.endswith(".json") for f in layout.files)
            if ks.available() and ks.available_42():  # each file defines this message
                for f in layout.files:
                    if "!/" in f and not ks.jars_available():
                        continue  # a release's jar, not installed (test_generated_tables... requires them)
                    assert ks.load_path(ks.path_of_layout_file(f))["name"] == name


def _key(record_type: int, group: str) -> bytes:
    return struct.pack(">hh", record_type, len(group)) + group.encode()


def test_share_group_metadata_of_4_0_and_4_1_by_layout() -> None:
    key = _key(11, "sg")
    v40 = struct.pack(">hi", 0, 7) + b"\x00"  # Epoch, no tagged fields
    v41 = struct.pack(">hiq", 0, 7, -5) + b"\x00"  # Epoch, MetadataHash, no tagged fields
    d40 = decode_consumer_offsets(key, v40)
    d41 = decode_consumer_offsets(key, v41)
    assert d40["value"] == {"epoch": 7} and "4.0.0" in d40["layout"].split("/")
    assert d41["value"] == {"epoch": 7, "metadata_hash": -5} and "4.1.1" in d41["layout"].split("/")


def test_bytes_two_layouts_read_exactly_are_unknown_not_damage() -> None:
    """4.0: Epoch, one unknown tag (5) of 6 bytes; the same 13 bytes are 4.1's Epoch, MetadataHash and
    no tagged field: neither layout can be chosen, so the record is shown raw, without an error."""
    key = _key(11, "sg")
    value = struct.pack(">hi", 0, 7) + bytes([1, 5, 6, 1, 2, 3, 4, 5, 0])
    with pytest.raises(UnsupportedError):
        decode_consumer_offsets(key, value)
    out = decode_lenient(decode_consumer_offsets, "consumer-offsets", key, value)
    assert out["unknown"] is True and out["raw_value"]
    assert "4.0.0" in out["reason"] and "4.1.1" in out["reason"]


def test_unknown_type_and_version_name_what_is_known() -> None:
    out = decode_lenient(decode_consumer_offsets, "consumer-offsets", _key(18, "g"), struct.pack(">h", 0))
    assert out["type"] == "unknown type 18, version 0"
    assert "0-17, 19-23" in out["reason"] and "4.2.0" in out["reason"]
    # the record types of the JSON files: 0-15 (4.0), 16 (4.0), 17 and 19-23 (4.1); 18 in none of them
    assert out["known_types"] == "0-17, 19-23" and "known_versions" not in out
    out = decode_lenient(decode_consumer_offsets, "consumer-offsets", _key(16, "g") + b"\x00\x01r",
                         struct.pack(">h", 3) + b"\x00")
    assert out["type"] == "unknown type 16, version 3"
    assert "ConsumerGroupRegularExpressionValue" in out["reason"] and "4.2.0" in out["reason"]
    assert (out["known_versions"], out["known_in"]) == ("0", "4.1.1, 4.2.0, 4.3.1, 4.4.0")
    value = bytes([1, 0, 9])  # RegisterBrokerRecord v9: not in any file
    out = decode_lenient(lambda k, v, source=None: decode_metadata_record(v, source=source),
                         "cluster-metadata", None, value)
    assert out["type"] == "unknown type 0, version 9" and "4.2.0" in out["reason"]
    assert out["known_versions"] == "0-4" and out["known_types"] == "0-12, 14-29"  # 13: in none of the files
