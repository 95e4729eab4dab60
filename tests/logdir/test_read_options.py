"""The read options as one typed object (issue 61 item 2): :class:`ReadOptions` made once from the data
sources' options (or the CLI's parameters), with one error per bad value naming the option and the value,
and given back to Spark as strings that parse to the same object."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.logdir.coordinator import OPEN_TRANSACTION_POLICIES
from logdoctor.logdir.discovery import DiscoveryError
from logdoctor.logdir.read_options import (
    DECODERS,
    VIEWS,
    PerPartition,
    ReadOptions,
)
from logdoctor.logdir.remote_layouts import LAYOUTS
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.logdir.transactions import ISOLATION_LEVELS, READ_COMMITTED, UPTO

_name = st.from_regex(r"[a-z][a-z0-9._-]{0,8}", fullmatch=True)
_offset = st.integers(min_value=-2, max_value=2**62)
_per_partition = st.one_of(
    st.just(PerPartition()),
    _offset.map(PerPartition),
    st.dictionaries(st.tuples(_name, st.integers(0, 999)), _offset, min_size=1, max_size=4).map(
        lambda by: PerPartition(None, by)
    ),
)
_path = st.from_regex(r"/[a-z0-9_]{1,8}(/[a-z0-9_,=]{1,8}){0,2}", fullmatch=True)
_remote = st.one_of(
    st.none(),
    st.builds(
        RemoteOptions,
        _path,
        st.one_of(st.none(), st.sampled_from(sorted(LAYOUTS))),
        st.one_of(st.none(), _path, st.builds(lambda k, p: f"{k}={p}", _name, _path)),
    ),
)


@st.composite
def read_options(draw: st.DrawFn) -> ReadOptions:
    typed = draw(st.booleans())
    return ReadOptions(
        topics=draw(
            st.one_of(st.none(), st.lists(_name, min_size=1, max_size=3).map(",".join), st.just("__.*"))
        ),
        starting_offsets=draw(_per_partition),
        ending_offsets=draw(_per_partition),
        starting_timestamps=draw(_per_partition),
        ending_timestamps=draw(_per_partition),
        include_control=draw(st.booleans()),
        decoder=draw(st.sampled_from(DECODERS)),
        max_partition_bytes=draw(st.integers(1, 2**40)),
        verify_crc=draw(st.booleans()),
        min_partitions=draw(st.integers(1, 512)),
        isolation_level=(isolation := draw(st.sampled_from(ISOLATION_LEVELS))),
        upto=draw(st.sampled_from(UPTO)),
        open_transactions=draw(st.sampled_from(OPEN_TRANSACTION_POLICIES)),
        cut_at=draw(st.one_of(st.none(), st.integers(0, 2**50))) if isolation == READ_COMMITTED else None,
        view=draw(st.sampled_from(VIEWS)),
        typed=typed,
        schemas=tuple(draw(st.lists(st.one_of(_path, st.just("s3://b/x,y")), max_size=3))),
        keep_cache=draw(st.booleans()),
        max_read_rate=draw(st.one_of(st.none(), st.integers(1, 2**40))),
        include_internal=draw(st.booleans()),
        undecoded=typed and draw(st.booleans()),
        typed_plan=draw(st.one_of(st.none(), st.just('{"topics":{}}'))),
        check_records=draw(st.booleans()),
        storage=draw(
            st.sampled_from(
                [
                    (),
                    (("s3.region", "eu-west-1"),),
                    (("s3.endpoint", "http://h:9000"), ("s3.region", "us-east-1")),
                ]
            )
        ),
        remote=draw(_remote),
    )


@settings(max_examples=tiers.examples(300), deadline=None)
@given(read_options())
def test_the_options_spark_is_given_parse_to_the_same_object(opts: ReadOptions) -> None:
    given_to_spark = opts.to_options()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in given_to_spark.items())
    assert ReadOptions.from_options(given_to_spark) == opts


def test_the_defaults_are_no_option_at_all() -> None:
    assert ReadOptions().to_options() == {}
    assert ReadOptions.from_options({}) == ReadOptions()


def test_names_are_case_insensitive_and_spark_kafka_aliases_count() -> None:
    opts = ReadOptions.from_options(
        {
            "SUBSCRIBE": "orders",
            "isolationLevel": "read-uncommitted",
            "STARTINGOFFSETS": "earliest",
            "startingOffsetsByTimestamp": '{"orders":{"0":1000}}',
            "IncludeInternal": "yes",
            "S3.Region": "eu-west-1",
            "remoteStorage": "store",
            "typed": "undecoded",
        }
    )
    assert opts.topics == "orders"
    assert opts.isolation_level == "read_uncommitted"
    assert opts.starting_offsets == PerPartition(-2)
    assert opts.starting_timestamps.get("orders", 0) == 1000
    assert opts.include_internal
    assert opts.storage == (("s3.region", "eu-west-1"),)
    assert opts.remote == RemoteOptions(os.path.abspath("store"))  # each executor reads the same store
    assert opts.typed and opts.undecoded


#: one bad value of each option that takes one, and the text its error says (option and value named)
BAD = [
    ("startingOffsets", "soon", "startingOffsets: expected a number or JSON like"),
    ("endingOffsets", "[1]", "endingOffsets: expected a JSON object of topics, got '[1]'"),
    ("startingTimestamp", '{"t":{"0":"x"}}', "startingTimestamp: bad entry 't'/'0': 'x'"),
    ("endingTimestamp", '{"t":3}', "endingTimestamp: topic 't' must map partition numbers to values"),
    ("includeControl", "maybe", "includeControl: expected true or false, got 'maybe'"),
    (
        "decoder",
        "avro",
        "decoder: expected one of none, auto, consumer-offsets, transactions, cluster-metadata",
    ),
    ("maxPartitionBytes", "lots", "maxPartitionBytes: expected a positive byte count"),
    ("verifyCrc", "2", "verifyCrc: expected true or false, got '2'"),
    ("minPartitions", "0", "minPartitions: expected a positive integer, got '0'"),
    (
        "kafka.isolation.level",
        "dirty",
        "kafka.isolation.level: expected one of read_committed, read_uncommitted",
    ),
    ("upTo", "now", "upTo: expected one of log-end, high-watermark, got 'now'"),
    ("openTransactions", "commit", "openTransactions: expected one of hold, abort, got 'commit'"),
    ("cutAt", "noon", "cutAt: expected epoch milliseconds, got 'noon'"),
    ("view", "newest", "view: expected one of history, latest, cdc, got 'newest'"),
    ("typed", "sometimes", "typed: expected true or false, got 'sometimes'"),
    ("schemas", "[1, 2]", "schemas: expected a JSON list of paths, got '[1, 2]'"),
    ("keepCache", "perhaps", "keepCache: expected true or false, got 'perhaps'"),
    ("maxReadRate", "fast", "maxReadRate: expected a positive byte count"),
    ("includeInternal", "sure", "includeInternal: expected true or false, got 'sure'"),
    ("checkRecords", "all", "checkRecords: expected true or false, got 'all'"),
    ("topics", "orders(", "topics: 'orders(' is neither a comma list of topics nor a valid regex"),
    ("remoteLayout", "gcs", "remoteLayout / remotePrivateKey need remoteStorage"),
]


@pytest.mark.parametrize(("name", "value", "said"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_is_one_error_naming_the_option_and_the_value(name: str, value: str, said: str) -> None:
    with pytest.raises(DiscoveryError) as err:
        ReadOptions.from_options({name: value})
    assert said in str(err.value)
    assert name in str(err.value) and len(str(err.value).splitlines()) == 1


def test_a_bad_remote_layout_is_the_same_error_kind() -> None:
    with pytest.raises(DiscoveryError, match=r"remoteLayout: expected auto, .* got 'gcs'"):
        ReadOptions.from_options({"remoteStorage": "/store", "remoteLayout": "gcs"})


def test_only_keeps_the_fields_named() -> None:
    opts = ReadOptions.from_options({"topics": "a", "view": "latest", "remoteStorage": "/s"})
    assert opts.only("topics", "remote") == ReadOptions(topics="a", remote=RemoteOptions("/s"))
    with pytest.raises(TypeError):
        opts.only("nope")
