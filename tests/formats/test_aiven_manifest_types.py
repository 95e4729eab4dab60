"""Issue 31 item 8, from the audit: a manifest with JSON values of the wrong type (``segmentIndexes: "x"``,
``remoteLogSegmentMetadata: 7``) raised AttributeError (150 of the audit's 156 fuzz tracebacks). Now every
field of the wrong type is a CorruptRecordError naming the field; hypothesis puts any JSON value in any
field of the plugin's own manifests (../shared/tiered/aiven) and only the project's errors come out."""

from __future__ import annotations

import contextlib
import copy
import json
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers
from logdoctor.errors import CorruptRecordError, FormatError
from logdoctor.formats.aiven_rsm import parse_manifest


@cache
def _manifests() -> tuple[dict, ...]:
    tiered = realworld.require_tiered()
    found = sorted((tiered / "aiven").glob("*/storage/*/*/*.rsm-manifest"))
    assert found
    by_kind: dict[tuple, dict] = {}  # one per (chunk index type, encrypted): every shape of field
    for p in found:
        obj = json.loads(p.read_text())
        by_kind.setdefault((obj["chunkIndex"]["type"], "encryption" in obj), obj)
    return tuple(by_kind.values())


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))


def _put(obj, path, value):
    out = copy.deepcopy(obj)
    if not path:
        return value
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("segmentIndexes",), "x", "segmentIndexes: a JSON object"),
        (("remoteLogSegmentMetadata",), 7, "remoteLogSegmentMetadata: a JSON object"),
        (("remoteLogSegmentMetadata", "remoteLogSegmentId"), [], "remoteLogSegmentId: a JSON object"),
        (("remoteLogSegmentMetadata", "startOffset"), {"a": 1}, "remoteLogSegmentMetadata.startOffset"),
        (("chunkIndex",), "fixed", "chunkIndex: a JSON object"),
        (("chunkIndex", "originalChunkSize"), True, "chunkIndex.originalChunkSize: an integer"),
        (("segmentIndexes", "offset"), 3, "segmentIndexes.offset: a JSON object"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(path, value, named):
    obj = _put(_manifests()[0], path, value)
    with pytest.raises(CorruptRecordError) as err:
        parse_manifest(json.dumps(obj).encode(), source="s3://b/x.rsm-manifest")
    assert named in str(err.value) and "s3://b/x.rsm-manifest" in str(err.value)


def test_a_hostile_chunk_count_is_refused_before_the_table_is_built():
    obj = _put(_manifests()[0], ("chunkIndex", "originalChunkSize"), 1)
    obj["chunkIndex"]["originalFileSize"] = 2**31 - 1
    obj["chunkIndex"]["type"] = "fixed"
    obj["chunkIndex"].update(transformedChunkSize=1, finalTransformedChunkSize=1)
    with pytest.raises(CorruptRecordError, match="at most"):
        parse_manifest(json.dumps(obj).encode())


@settings(max_examples=tiers.examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=JSON)
def test_any_json_value_in_any_field_gives_the_projects_error_or_a_manifest(data, value):
    manifests = _manifests()
    obj = manifests[data.draw(st.integers(0, len(manifests) - 1))]
    paths = list(_paths(obj))
    path = paths[data.draw(st.integers(0, len(paths) - 1))]
    with contextlib.suppress(FormatError):  # named; anything else (AttributeError, MemoryError...) fails
        parse_manifest(json.dumps(_put(obj, path, value)).encode())
