"""The project's statement of Kafka 4.3's schema changes that ../shared's definitions lack.

../shared/kafka-schemas-4.2 stops at RegisterBrokerRecord v3 and BrokerRegistrationChangeRecord v2. Kafka
4.3 adds one version to each (KIP-1066, cordoned log dirs): the tagged, nullable ``CordonedLogDirs``
(``[]uuid``, default null). This module states that delta, and nothing else, as data;
:func:`supplement` applies it to the newest definition of the record that ../shared holds (its
``validVersions`` must be the one the delta starts from, else the delta no longer fits and says so).
Both scripts/gen_kafka_layouts.py (the generated layout tables) and the tests' generic reader
(tests/kafka_schemas.py, the release canary) read the 4.3 layouts through this one function.

Provenance: apache/kafka commit 6be48c6e54f2f2431b58fb4497d29abe07e150d2 on trunk (2026-05-04,
"KAFKA-20441: Fix handling of cordoned log dirs (#22070)", the last change to either file; the field was
added by a45d36ca5d, "KAFKA-19774: Mechanism to cordon log dirs (KIP-1066) (#21273)", 2026-02-19), the
same on the 4.3 branch (cherry-pick cf9f8ad376a9) and the 4.4 branch; read from the public fork
confluentinc/kafka, which carries apache/kafka's commits (announced on commits@kafka.apache.org,
https://www.mail-archive.com/commits@kafka.apache.org/msg33216.html). Files (K:
metadata/src/main/resources/common/metadata/RegisterBrokerRecord.json, git blob
12af50ce17d4c7587b514300ffc801095b5b1c99; BrokerRegistrationChangeRecord.json, blob
61109f12913903a39bcdb975fe916dab0cfc914f): each is ../shared's 4.2.0 file with the ``validVersions``
and the one last field below, and nothing else changed. metadata.version 4.3-IV0
(level 30) writes them (K: server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java
``isCordonedLogDirsSupported``, ``registerBrokerRecordVersion``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

#: the release label of the supplemented layouts, and where they come from
RELEASE = "trunk-6be48c6"
PROVENANCE = "apache/kafka trunk 6be48c6e (2026-05-04; = branch 4.3, metadata.version 4.3-IV0)"
#: how the generated tables name this statement (a layout's file: ``f"{FILE}:{base file}"``)
FILE = "scripts/kafka_schema_supplement.py"


@dataclass(frozen=True)
class Delta:
    """One record's change: ``valid_versions`` goes from ``valid_from`` to ``valid_to`` and ``fields``
    are appended to its fields (field specs as Kafka's JSON gives them, FieldSpec's keys)."""

    message: str
    valid_from: str
    valid_to: str
    fields: tuple[dict[str, Any], ...]


DELTAS: dict[str, Delta] = {
    d.message: d
    for d in (
        Delta("RegisterBrokerRecord", "0-3", "0-4", (
            {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "4+", "nullableVersions": "4+",
             "taggedVersions": "4+", "tag": 1, "default": "null",
             "about": "The log dirs cordoned; null until the broker's heartbeats first send them."},
        )),
        Delta("BrokerRegistrationChangeRecord", "0-2", "0-3", (
            {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "3+", "nullableVersions": "3+",
             "taggedVersions": "3+", "tag": 3, "default": "null",
             "about": "The log dirs cordoned; null: no change."},
        )),
    )
}


def supplement(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The 4.3 definition of the message ``spec`` (a parsed JSON definition, ../shared's newest of that
    message) defines, or None when the delta names no such message. ``spec`` is not modified.

    Raises ValueError when ``spec`` is not the definition the delta applies to (its ``validVersions``
    differ, or it already has a field the delta adds): ../shared then holds a newer file, and this
    delta is to be checked against it or removed."""
    delta = DELTAS.get(spec.get("name", ""))
    if delta is None:
        return None
    if spec.get("validVersions") != delta.valid_from:
        raise ValueError(f"{FILE}: {delta.message} has validVersions {spec.get('validVersions')!r}, "
                         f"the delta applies to {delta.valid_from!r}")
    names = {f["name"] for f in spec["fields"]}
    if any(f["name"] in names for f in delta.fields):
        raise ValueError(f"{FILE}: {delta.message} already has a field the delta adds")
    out = copy.deepcopy(spec)
    out["validVersions"] = delta.valid_to
    out["fields"] = out["fields"] + [dict(f) for f in delta.fields]
    return out
