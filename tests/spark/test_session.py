"""Session building: which masters are local, --conf parsing, no loopback pinning off local[...]."""

from __future__ import annotations

import pytest

from logdoctor.spark.session import _defaults, is_local_master, parse_conf


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[2,3]", True),
        (None, True),  # the default, local[*]
        ("spark://10.0.0.1:7077", False),
        ("yarn", False),
        ("k8s://https://api:6443", False),
        ("local-cluster[2,1,1024]", False),  # separate executor JVMs, as on a cluster
    ],
)
def test_is_local_master(master, local):
    assert is_local_master(master) is local


def test_parse_conf():
    assert parse_conf(["spark.a=1", "spark.b=x=y", "spark.c="]) == {
        "spark.a": "1",
        "spark.b": "x=y",
        "spark.c": "",
    }
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["spark.a"])


def test_driver_is_pinned_to_loopback_only_for_local_masters():
    local, cluster = _defaults(True), _defaults(False)
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"
    assert not any(k.startswith("spark.driver.") for k in cluster)
