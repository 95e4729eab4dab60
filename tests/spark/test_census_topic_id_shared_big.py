"""TOPIC_ID_SHARED's rows in a big census made from the shared topic ids' replicas only (issue 49 goal 1):
the same rows as the rule's words made for every topic (a small census's, on the driver)."""

from __future__ import annotations

import pytest

from logdoctor.spark import census_sql
from logdoctor.spark.census_inputs import REPLICA_DDL, ddl_names

pytestmark = pytest.mark.spark

RECREATED = ("AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg")


def _replicas(spark):
    """Replicas of three clusters (one null), lagging and ahead, a recreated topic (two ids and a replica
    without one), three topic ids on two topics each (one of the null cluster), replicas of another kind."""
    names = ddl_names(REPLICA_DDL)
    rows = []
    for b in range(5):
        for t in range(12):
            topic = f"topic-{t:02d}"
            for p in range(3):
                if (b + t + p) % 4 == 0:
                    continue  # not every broker holds every partition
                cluster = (None, "c1", "c2")[t % 3]
                topic_id = f"id-{t % 9}" if t != 5 else (RECREATED[b % 2] if b < 4 else None)
                leo = 1_000 + 10 * t + p - (b if (t + p) % 2 else 0)
                end = None if (b, t, p) == (2, 4, 1) else leo
                r = dict.fromkeys(names)
                r.update(
                    broker=f"broker-{b}", broker_id=b, log_dir=f"/data-{p % 2}", topic=topic, partition=p,
                    kind="log" if (b, t) != (3, 7) else "stray", path=f"/data-{p % 2}/{topic}-{p}",
                    topic_id=topic_id, log_start_offset=t, log_end_offset=end,
                    high_watermark=leo - 1 if b == 0 else None, recovery_point=leo, segments=1 + p,
                    bytes=None if (b, p) == (1, 2) else 100 * leo + b, findings=0, cluster=cluster,
                    local_log_start_offset=t + b, remote_storage_enabled=(t % 4 == 0) if b else None,
                    remote_segments=b, remote_bytes=10 * b, remote_log_start_offset=b,
                    remote_log_end_offset=t,
                    leader_epochs=[(0, 0)],
                )  # fmt: skip
                rows.append(tuple(r[c] for c in names))
    return spark.createDataFrame(rows, REPLICA_DDL)


def _sorted(df):
    return sorted(repr(r.asDict(recursive=True)) for r in df.collect())


def test_topic_id_shared_rows_are_the_same_made_from_the_shared_ids_replicas_only(spark):
    replicas = census_sql.replica_table(_replicas(spark))
    every, _make = census_sql.shared_id_findings(replicas, on_driver=True)
    only, _make = census_sql.shared_id_findings(replicas, on_driver=False)
    rows = _sorted(every)
    # id-0..id-2 are on two topics each (t and t + 9), in clusters None, c1, c2: the null cluster's finds none
    assert len(rows) == 2 and all("id-" in r for r in rows)
    assert _sorted(only) == rows
