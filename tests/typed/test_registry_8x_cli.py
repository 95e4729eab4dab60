"""Issue 78 through the commands, on the log dir of tests/typed/test_registry_8x.py (confluent-kafka's own
serializers; ``_schemas`` as Schema Registry 8.x's storage writes it): ``logdoctor schemas`` shows the
contexts, the associations, the GUIDs and the encryption rules; ``dump --print-data`` and ``export --typed``
decode the topics framed through each (``orders`` through an association into the context ``.shop``, whose
id 1 is another schema than the default context's; ``payments`` by its GUID in a header; ``customers`` with
its ENCRYPT fields marked; ``vault``'s encrypted payloads to ``_undecoded``), and leave
``_dek_registry_keys`` out as an internal topic."""

from __future__ import annotations

import base64
import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_registry_8x import CLUSTER, CUSTOMERS, ORDERS, PAYMENTS, Built, build
from typer.testing import CliRunner

from logdoctor.cli.commands import app

pytest.importorskip("confluent_kafka.schema_registry")
runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("r78cli") / "logs")


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], terminal_width=250)


def test_schemas_shows_contexts_associations_guids_and_rules(built: Built) -> None:
    r = invoke("schemas", built.log_dir, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["contexts"] == [".shop"]
    assert got["associations"] == [
        {"resource_type": "topic", "resource_name": "orders", "resource_namespace": CLUSTER,
         "resource_id": "topic-id-orders", "association_type": "value", "subject": ":.shop:orders-value",
         "lifecycle": "STRONG", "frozen": False, "guid": got["associations"][0]["guid"]}
    ]  # fmt: skip
    rows = {row["subject"]: row for row in got["versions"]}
    assert set(rows) == {"customers-value", "vault-value", "payments-value", ":.shop:orders-value"}
    for subject, row in rows.items():
        assert row["guid"] == built.guids[subject] and row["id"] == built.ids[subject]
    assert rows[":.shop:orders-value"]["context"] == ".shop" and rows["customers-value"]["context"] == "."
    (enc,) = rows["customers-value"]["rules"]
    assert (enc["phase"], enc["type"], enc["mode"], enc["tags"]) == (
        "domain",
        "ENCRYPT",
        "WRITEREAD",
        ["PII"],
    )
    assert enc["encrypted_fields"] == ["card", "ssn"]
    (payload,) = rows["vault-value"]["rules"]
    assert (payload["phase"], payload["type"]) == ("encoding", "ENCRYPT_PAYLOAD")
    assert rows["payments-value"]["rules"] == []

    text = invoke("schemas", built.log_dir).stdout
    assert "contexts: .shop" in text
    assert "association: topic orders (lkc-78) value -> :.shop:orders-value [strong]" in text
    assert "ENCRYPT(card, ssn)" in text and "ENCRYPT_PAYLOAD" in text
    assert built.guids["payments-value"] in text


def _dump(built: Built, topic: str) -> list[dict]:
    segment = built.log_dir / f"{topic}-0" / "00000000000000000000.log"
    r = invoke("dump", "--json", "--print-data", segment)
    assert r.exit_code == 0, r.output
    return [json.loads(line)["decoded"] for line in r.stdout.splitlines() if '"type":"record"' in line]


def test_dump_decodes_through_each(built: Built) -> None:
    orders = _dump(built, "orders")
    assert [d["value"] for d in orders] == ORDERS  # .shop's id 1, not the default context's Customer
    assert all(d["schema_context"] == ".shop" for d in orders)
    assert [d["value"] for d in _dump(built, "payments")] == PAYMENTS  # by the GUID in the header
    customers = _dump(built, "customers")
    for d, want in zip(customers, CUSTOMERS, strict=True):
        assert d["encrypted_fields"] == ["card", "ssn"]
        assert (d["value"]["id"], d["value"]["name"]) == (want["id"], want["name"])
        assert d["value"]["ssn"] != want["ssn"]  # the ciphertext's base64 text, marked
    vault = _dump(built, "vault")
    assert [(d["value"], d["reason"]) for d in vault] == [(None, "encrypted_payload")] * 2


def _table(out: Path, topic: str) -> list[dict]:
    import pyarrow.parquet as pq

    rows: list[dict] = []
    for f in sorted(glob.glob(str(out / topic / "**" / "*.parquet"), recursive=True)):
        rows.extend(pq.read_table(f).to_pylist())
    return sorted(rows, key=lambda r: r["kafka"]["offset"] if "kafka" in r else r["offset"])


@pytest.mark.spark
def test_export_typed_decodes_through_each(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "logdoctor",
            "export",
            str(built.log_dir),
            "--out",
            str(out),
            "--typed",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, r.stderr  # 1: records went to _undecoded (the encrypted payloads)
    got = json.loads(r.stdout)
    assert got["internal_topics_left_out"] == ["_dek_registry_keys"]
    typed = got["typed"]["topics"]
    assert typed["vault"]["undecoded"] == {"encrypted_payload": 2} and typed["vault"]["decoded"] == 0
    for topic in ("orders", "payments", "customers"):
        assert typed[topic]["decoded"] == typed[topic]["records"] and not typed[topic]["undecoded"], topic
    assert [{"sku": r["sku"]} for r in _table(out, "orders")] == ORDERS
    assert [{"amount": r["amount"], "currency": r["currency"]} for r in _table(out, "payments")] == PAYMENTS
    customers = _table(out, "customers")
    for row, want in zip(customers, CUSTOMERS, strict=True):
        assert row["kafka"]["encrypted_fields"] == ["card", "ssn"]
        assert (row["id"], row["name"]) == (want["id"], want["name"])
        assert len(base64.b64decode(row["ssn"])) == 12 + len(want["ssn"]) + 16
    assert "encrypted_fields" not in _table(out, "orders")[0]["kafka"]  # only where a contract encrypts
    undecoded = _table(out, "_undecoded")
    assert [(u["topic"], u["reason"]) for u in undecoded] == [("vault", "encrypted_payload")] * 2
