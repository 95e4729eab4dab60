"""formats.aiven_rsm over the manifests Aiven's plugin v1.0.0 wrote (../shared/tiered/aiven): every field
read as the plugin wrote it, the chunk-size codec back to the plugin's own bytes, and our manifest writer
(used for generated benchmark data) read back as the plugin's fixed and variable chunk indexes."""

from __future__ import annotations

import base64
import json
import re

import pytest
import zstandard

import realworld
from logdoctor.errors import CorruptRecordError, UnsupportedError
from logdoctor.formats.aiven_rsm import build_manifest, decode_chunk_sizes, encode_chunk_sizes, parse_manifest


def _manifests():
    tiered = realworld.require_tiered()
    found = sorted((tiered / "aiven").glob("*/storage/*/*/*.rsm-manifest"))
    assert len(found) == 30
    return found


def test_manifests_read_as_written() -> None:
    for path in _manifests():
        obj = json.loads(path.read_text())
        m = parse_manifest(path.read_bytes(), source=str(path))
        start, seg_id = re.match(r"(\d{20})-(.{22})\.", path.name).groups()  # type: ignore[union-attr]
        assert (m.start_offset, m.segment_id, m.topic, m.partition) == (
            int(start),
            seg_id,
            "payments",
            int(path.parent.name),
        )
        assert m.original_file_size == obj["chunkIndex"]["originalFileSize"]
        # the .log object is exactly the chunks the index says, and the .indexes object its indexes
        assert path.with_suffix(".log").stat().st_size == m.transformed_file_size
        assert path.with_suffix(".indexes").stat().st_size == sum(s for _, s in m.indexes.values())
        assert m.compression == ("plain" not in str(path)) and m.encrypted == ("encrypted" in str(path))
        if m.encrypted:
            assert (
                m.data_key_id == "key1" and len(m.wrapped_data_key or b"") == 256 and len(m.aad or b"") == 32
            )


def test_chunk_size_codec_gives_back_the_plugins_bytes() -> None:
    n = 0
    for path in _manifests():
        ci = json.loads(path.read_text())["chunkIndex"]
        if ci["type"] != "variable":
            continue
        raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(ci["transformedChunks"]))
        sizes = decode_chunk_sizes(raw)
        assert len(sizes) == -(-ci["originalFileSize"] // ci["originalChunkSize"])
        assert encode_chunk_sizes(sizes) == raw
        n += 1
    assert n == 20


@pytest.mark.parametrize("variable", [False, True])
def test_built_manifest_reads_like_the_plugins(variable: bool) -> None:
    [real] = [p for p in _manifests() if "plain" in str(p) and p.name.startswith("00000000000000000324")][:1]
    want = parse_manifest(real.read_bytes())
    sizes = [8000, 7000, 7500, 9000, 8100, 8192, 8192, 6000] if variable else None
    ours = parse_manifest(
        build_manifest(
            original_chunk_size=want.original_chunk_size,
            original_file_size=want.original_file_size,
            transformed_sizes=sizes,
            indexes=want.indexes,
            compression=variable,
            topic="payments",
            topic_id=want.topic_id or "",
            partition=0,
            segment_id=want.segment_id or "",
            start_offset=324,
            end_offset=647,
        )
    )
    assert ours.indexes == want.indexes and ours.original_file_size == want.original_file_size
    assert ours.transformed_sizes == (tuple(sizes) if sizes else want.transformed_sizes)


def test_bad_manifests() -> None:
    good = json.loads(_manifests()[0].read_text())
    with pytest.raises(UnsupportedError, match="'99'"):
        parse_manifest(json.dumps({**good, "version": "99"}).encode(), source="m")
    with pytest.raises(CorruptRecordError, match="m: corrupt"):
        parse_manifest(b"{not json", source="m")
    with pytest.raises(CorruptRecordError):
        parse_manifest(json.dumps({**good, "chunkIndex": {"type": "fixed"}}).encode())
