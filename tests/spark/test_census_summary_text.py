"""Issue 59 item 10: the census's summary.txt (spark.census.render_summary) says sizes in binary units
("134460 bytes behind" was a raw count), a missing high watermark as what it is ("high watermark
None") and its counts with their nouns agreeing ("1 brokers")."""

from __future__ import annotations

import re

from logdoctor.spark.census import CensusResult, render_summary


def test_the_summary_gives_sizes_in_binary_units_and_names_a_missing_high_watermark() -> None:
    partition = {
        "topic": "orders", "partition": 1, "lagging_broker": "broker-3", "lagging_log_dir": "/data/b3",
        "max_lag_offsets": 600, "max_lag_bytes": 134460, "min_log_end_offset": 900,
        "max_log_end_offset": 1500, "high_watermark": None,
    }  # fmt: skip
    log_dir = {"broker": "broker-3", "log_dir": "/data/b3", "bytes": 5_000_000, "folders": 4,
               "disk_used_percent": 40, "disk_source": "statvfs"}  # fmt: skip
    result = CensusResult("out", 1, [log_dir], [partition], [], [])
    text = render_summary(result)
    assert "broker-3 is 600 offsets / 131.3 KiB behind" in text, text
    assert "/data/b3: 4.8 MiB in 4 folders" in text, text
    # counts and their nouns agree (issue 59 item 10: "1 brokers, 1 log dirs, 1 errors")
    head = "Fleet census: 1 broker, 1 log dir, 1 topic-partition, 0 replicas; 0 errors, 0 warnings, 0 info"
    assert text.startswith(head), text
    assert "high watermark unknown (no replication-offset-checkpoint entry)" in text, text
    assert not re.findall(r"\d bytes\b|\bNone\b", text), text
