from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logdoctor.errors import FormatError, UnsupportedError
from logdoctor.formats import properties as pr
from logdoctor.formats.properties import MetaProperties

ZK = b"#\n#Fri Nov 18 16:09:16 CST 2016\nversion=0\nbroker.id=0\n"
KRAFT = (
    b"#\n#Wed Jun 18 14:08:53 GMT 2025\ncluster.id=5L6g3nShT-eMCtK--X86sw\n"
    b"directory.id=NuGZI-m8bJ7swnEKaplGaw\nnode.id=1\nversion=1\n"
)


def test_zookeeper_and_kraft_forms():
    zk = pr.parse_meta_properties(ZK)
    assert (zk.version, zk.broker_id, zk.cluster_id, zk.is_kraft) == (0, 0, None, False)
    assert zk.date_comment == "Fri Nov 18 16:09:16 CST 2016"
    kraft = pr.parse_meta_properties(KRAFT)
    assert (kraft.version, kraft.node_id, kraft.cluster_id, kraft.directory_id) == (
        1,
        1,
        "5L6g3nShT-eMCtK--X86sw",
        "NuGZI-m8bJ7swnEKaplGaw",
    )
    assert pr.write_meta_properties(zk) == ZK and pr.write_meta_properties(kraft) == KRAFT


def test_changed_field_rewrites_only_its_line():
    meta = pr.parse_meta_properties(KRAFT)
    meta.node_id = 7
    assert pr.write_meta_properties(meta) == KRAFT.replace(b"node.id=1", b"node.id=7")
    meta.directory_id = None
    assert b"directory.id" not in pr.write_meta_properties(meta)
    zk = pr.parse_meta_properties(ZK)
    zk.cluster_id = "abc"
    assert pr.write_meta_properties(zk) == ZK + b"cluster.id=abc\n"


def test_new_file_has_java_store_layout():
    meta = MetaProperties(1, 3, "Boq3egRYS6W1Fu6FucJsbQ", "nw6U-zVce9rRQcZYDK0Kpw")
    data = pr.write_meta_properties(meta, date=datetime(2024, 4, 11, 13, 28, 7, tzinfo=UTC))
    assert data == (
        b"#\n#Thu Apr 11 13:28:07 UTC 2024\ncluster.id=Boq3egRYS6W1Fu6FucJsbQ\n"
        b"directory.id=nw6U-zVce9rRQcZYDK0Kpw\nnode.id=3\nversion=1\n"
    )
    assert pr.parse_meta_properties(data).node_id == 3


def test_empty_file_is_version_0_without_ids_like_kafka():
    meta = pr.parse_meta_properties(b"")
    assert (meta.version, meta.node_id, meta.cluster_id) == (0, None, None)
    assert pr.write_meta_properties(meta) == b""


def test_java_properties_syntax():
    props = pr.parse_properties(
        b"  ! bang comment\na = b\\\n   c\nkey:val\nsp\\ ace x\\u0041\\=\n# c\nk=1\nk=2"
    )
    assert props.get("a") == "bc" and props.get("key") == "val" and props.get("sp ace") == "xA="
    assert props.get("k") == "2"  # last wins
    assert props.keys() == ["a", "key", "sp ace", "k"]
    assert props.to_bytes().endswith(b"k=2")


def test_bad_values_are_typed_errors_naming_the_line():
    with pytest.raises(UnsupportedError) as err:
        pr.parse_meta_properties(b"#\nversion=2\nnode.id=1\n", source="meta.properties")
    assert err.value.position == 2
    with pytest.raises(FormatError) as err:
        pr.parse_meta_properties(b"version=1\ncluster.id=x\n", source="meta.properties")
    assert "node.id" in str(err.value)
    with pytest.raises(FormatError) as err:
        pr.parse_meta_properties(b"version=0\nbroker.id=zero\n", source="m")
    assert err.value.position == 10
    with pytest.raises(FormatError):
        pr.parse_meta_properties(b"version=1\nnode.id=1\ndirectory.id=nope\n")
    with pytest.raises(FormatError):
        pr.parse_properties(b"a=\\u12G4\n")


VALUE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z.]{0,15}", fullmatch=True), VALUE, max_size=8))
def test_store_escape_then_load_round_trip(mapping):
    props = pr.PropertiesFile()
    for key, value in mapping.items():
        props = props.with_property(key, value)
    data = props.to_bytes()
    reread = pr.parse_properties(data)
    names = reread.keys()
    assert {k: reread.get(k) for k in names} == mapping
    assert reread.to_bytes() == data


CLUSTER_ID = st.none() | st.from_regex(r"[A-Za-z0-9_-]{22}", fullmatch=True)


@given(st.integers(0, 1), st.integers(0, 2**31 - 1), CLUSTER_ID)
def test_meta_round_trip(version, node_id, cluster_id):
    data = pr.write_meta_properties(MetaProperties(version, node_id, cluster_id))
    meta = pr.parse_meta_properties(data)
    assert (meta.version, meta.node_id, meta.cluster_id) == (version, node_id, cluster_id)
    assert pr.write_meta_properties(meta) == data


@given(st.binary(max_size=200))
def test_arbitrary_bytes_typed(data):
    try:
        pr.parse_meta_properties(data, source="m")
    except FormatError as exc:
        assert exc.source == "m" and exc.position is not None
