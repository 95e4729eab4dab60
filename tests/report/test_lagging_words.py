"""Issue 59 item 10: a replica without a replication-offset-checkpoint entry has no known high watermark:
the lagging table says so and why, where it printed an empty cell (and the page's detail a bare "?")."""

from __future__ import annotations

import re

from logdoctor.report.html import _lagging_table
from logdoctor.report.model import ReplicaView, ReportData


def test_a_missing_high_watermark_is_named_with_why() -> None:
    leader = ReplicaView("t", 0, 1, "/a", 0, 100, high_watermark=100, lag=0, partition_high_watermark=100)
    follower = ReplicaView("t", 0, 2, "/b", 0, 40, high_watermark=None, lag=60, partition_high_watermark=100)
    data = ReportData("fleet", "x", 0, 0, [], [], [], replicas=[leader, follower], brokers=[1, 2])
    row = re.search(r'<tr class="lagging-replica"[^>]*>(.*?)</tr>', _lagging_table(data))
    assert row is not None
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td\b.*?</td>", row.group(1))]
    assert cells[-2:] == ["100", "unknown (no replication-offset-checkpoint entry)"]
