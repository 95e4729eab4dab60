"""The release canary: the Kafka jars the tests install (brokers/VERSION/pom.xml, scripts/ensure-kafka.sh)
carry no record type or version the layout tables (kafka_layouts.py) do not know.

For every installed version, every ``*Key``/``*Value``/``*Record`` JSON spec inside its ``kafka-*.jar``
(read in place with zipfile) must be a message of the tables, with its ``validVersions`` maximum among
the versions the tables read, and its ``apiKey`` the record type the decoders map to it. A new release
added to brokers/ (or a new record in a pinned jar) fails here, naming the file, until
scripts/gen_kafka_layouts.py reads that release.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
from logdoctor.formats.internal.kafka_layouts import LAYOUTS
from logdoctor.formats.internal.schemas import (
    CONSUMER_OFFSETS_RECORDS,
    METADATA_RECORD_NAMES,
    REMOTE_LOG_METADATA_RECORD_NAMES,
    SHARE_GROUP_STATE_RECORDS,
    TRANSACTION_LOG_RECORDS,
)

REPO = Path(__file__).resolve().parents[2]
#: the versions the tests install: one folder with a pom.xml each under brokers/
#: the brokers the tests install whose records the layout tables cover: 3.x and later (1.0.2 and 2.2.2 are
#: installed only for the index checks of their era, tests/brokers/test_broker_era_index.py)
INSTALLED = tuple(
    sorted(
        p.parent.name for p in (REPO / "brokers").glob("*/pom.xml") if int(p.parent.name.split(".")[0]) >= 3
    )
)
_RECORD = re.compile(r"(?:.*/)?(\w+(?:Key|Value|Record))\.json")
# record type -> its key (or value) message name, per coordinator module (a key's apiKey is the type)
_COORDINATOR_TABLES = {
    "group-coordinator": CONSUMER_OFFSETS_RECORDS,
    "share-coordinator": SHARE_GROUP_STATE_RECORDS,
    "transaction-coordinator": TRANSACTION_LOG_RECORDS,
}


def _specs(version: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(module, jar!/entry, spec) of every *Key/*Value/*Record spec in ``version``'s Kafka jars."""
    libs = ks.KAFKA / version / "lib"
    if not any(libs.glob("kafka-clients-*.jar")):
        pytest.skip(
            f"required: Kafka {version}'s jars in {libs}: run bash scripts/ensure-kafka.sh (make test does)"
        )
    out = []
    for jar in sorted(libs.glob("kafka*.jar")):
        found = re.fullmatch(r"kafka-(.+)-\d+\.\d+\.\d+\.jar", jar.name)
        if found is None:
            continue
        with zipfile.ZipFile(jar) as archive:
            for entry in sorted(archive.namelist()):
                if _RECORD.fullmatch(entry):
                    text = archive.read(entry).decode("utf-8")
                    spec = json.loads(
                        "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("//"))
                    )
                    out.append((found.group(1), f"{jar.name}!/{entry}", spec))
    return out


def _max(versions: str) -> int:
    return ks.versions(versions)[1]


def _problems(version: str) -> list[str]:
    out = []
    for module, where, spec in _specs(version):
        name, api_key = spec["name"], spec.get("apiKey")
        what = f"Kafka {version} {where}: {name}" + (f" (apiKey {api_key})" if api_key is not None else "")
        layouts = LAYOUTS.get(name)
        if not layouts:
            out.append(f"{what}: a record the layout tables do not know")
            continue
        newest = max(lay.message.valid_versions.high for lay in layouts)
        if _max(spec["validVersions"]) > newest:
            out.append(
                f"{what}: version {_max(spec['validVersions'])} (validVersions {spec['validVersions']}), "
                f"the layout tables read up to {newest}"
            )
        if api_key is None:
            continue
        if api_key not in {lay.api_key for lay in layouts}:
            out.append(f"{what}: the layout tables give it apiKey {sorted({lay.api_key for lay in layouts})}")
        kind = spec.get("type")
        if kind == "metadata":
            table = METADATA_RECORD_NAMES if module == "metadata" else REMOTE_LOG_METADATA_RECORD_NAMES
            if table.get(api_key) != name:
                out.append(f"{what}: the decoders map record type {api_key} to {table.get(api_key)}")
        elif kind == "coordinator-key" and module in _COORDINATOR_TABLES:
            rec = _COORDINATOR_TABLES[module].get(api_key)
            # type 0: 4.1+'s LegacyOffsetCommitKey is 4.0's OffsetCommitKey, field for field
            if rec is None or (rec.key.name != name and rec.key.fields != layouts[-1].message.fields):
                out.append(
                    f"{what}: the decoders map record type {api_key} to {rec.key.name if rec else 'nothing'}"
                )
        elif kind == "coordinator-value" and module in _COORDINATOR_TABLES:
            rec = _COORDINATOR_TABLES[module].get(api_key)
            if rec is None or rec.value not in (name, "OffsetCommitValue"):
                out.append(
                    f"{what}: the decoders map record type {api_key} to {rec.value if rec else 'nothing'}"
                )
    return out


def test_the_installed_versions_are_known() -> None:
    """Every 4.x release the tests install is one the generator reads from its jars (3.9.1, ZooKeeper mode,
    is checked by the canary only: its records are all in the 4.0 files)."""
    assert INSTALLED, "no brokers/VERSION/pom.xml"
    assert [v for v in INSTALLED if not v.startswith("3.") and v not in ks.JAR_RELEASES] == []


@pytest.mark.parametrize("version", INSTALLED)
def test_jars_hold_no_record_type_or_version_the_tables_miss(version: str) -> None:
    problems = _problems(version)
    assert problems == [], "\n".join(problems)


def test_the_canary_names_what_it_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the tables' newest layout of ConsumerGroupCurrentMemberAssignmentValue and with
    RegisterBrokerRecord stopping at v3, 4.4.0's jars name both."""
    import logdoctor.formats.internal.kafka_layouts as kl

    tables = dict(LAYOUTS)
    del tables["ConsumerGroupCurrentMemberAssignmentValue"]
    tables["RegisterBrokerRecord"] = tuple(
        lay for lay in LAYOUTS["RegisterBrokerRecord"] if lay.message.valid_versions.high < 4
    )
    monkeypatch.setattr(kl, "LAYOUTS", tables)
    monkeypatch.setitem(globals(), "LAYOUTS", tables)
    problems = "\n".join(_problems("4.4.0"))
    assert (
        "kafka-group-coordinator-4.4.0.jar!/common/message/ConsumerGroupCurrentMemberAssignmentValue.json: "
        "ConsumerGroupCurrentMemberAssignmentValue (apiKey 8): a record the layout tables do not know"
    ) in problems
    assert (
        "RegisterBrokerRecord (apiKey 0): version 4 (validVersions 0-4), the layout tables read up to 3"
        in problems
    )
