"""``dump --remote-storage``: a remote segment of ../shared/tiered (Kafka's LocalTieredStorage, Aiven's
plugin plain / zstd / zstd + encryption) dumps as the same segment of the never-tiered partition does
(batches, records, keys and values, index verification), and a partition folder stands for its remote
part; a missing key or a bad object is one line naming the object, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app

VARIANTS = {
    "kafka-local": ("kafka-local/remote", "kafka-local/remote/kafka-tiered-storage/payments-0-*", None),
    "aiven-plain": ("aiven/plain/storage", "aiven/plain/storage/payments-*/0", None),
    "aiven-compressed": ("aiven/compressed/storage", "aiven/compressed/storage/payments-*/0", None),
    "aiven-encrypted": (
        "aiven/encrypted/storage",
        "aiven/encrypted/storage/payments-*/0",
        "aiven/encrypted/keys/private.pem",
    ),
}


def _dump(args: list[str]):
    return CliRunner().invoke(app, ["dump", *args], terminal_width=200)


def _events(output: str, kinds=("batch", "record")) -> list[dict]:
    out = []
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        if ev["type"] in kinds:
            ev.pop("file")
            out.append(ev)
    return out


def _remote_args(tiered: Path, variant: str) -> list[str]:
    store, _, key = VARIANTS[variant]
    args = ["--remote-storage", str(tiered / store)]
    return [*args, "--remote-private-key", str(tiered / key)] if key else args


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_dump_of_a_remote_segment_equals_the_original_segment(variant: str) -> None:
    tiered = realworld.require_tiered()
    [folder] = tiered.glob(VARIANTS[variant][1])
    [obj] = folder.glob("00000000000000000648-*.log")
    original = tiered / "original" / "kafka-logs" / "payments-0" / f"{648:020d}.log"
    res = _dump([*_remote_args(tiered, variant), str(obj), "--json", "--print-data", "--verify-index"])
    assert res.exit_code == 0, res.output
    want = _dump([str(original), "--json", "--print-data"])
    assert want.exit_code == 0
    got = _events(res.stdout)
    assert got == _events(want.stdout) and len([e for e in got if e["type"] == "record"]) == 324
    # the same object named by its key under the store
    key = str(obj.relative_to(tiered / VARIANTS[variant][0]))
    again = _dump([*_remote_args(tiered, variant), key, "--json", "--offsets", "700:710", "--print-data"])
    assert again.exit_code == 0, again.output
    assert [e["offset"] for e in _events(again.stdout, ("record",))] == list(range(700, 711))


def test_dump_of_a_partition_folder_dumps_its_remote_part() -> None:
    tiered = realworld.require_tiered()
    res = _dump(
        [*_remote_args(tiered, "kafka-local"), str(tiered / "kafka-local/kafka-logs/payments-1"), "--json"]
    )
    assert res.exit_code == 0, res.output
    summaries = _events(res.stdout, ("summary",))
    assert [(s["first_offset"], s["last_offset"]) for s in summaries] == [
        (0, 326),
        (327, 653),
        (654, 980),
        (981, 1307),
        (1308, 1634),
        (1635, 1961),
        (1962, 2288),
    ]


def test_dump_of_a_remote_part_names_a_missing_log_object_and_a_missing_segment(tmp_path: Path) -> None:
    """Issue 31 item 2: payments-1's [327, 653] .log object deleted (its indexes left) and [981, 1307]
    gone whole: the dump of the partition's remote part names both (it skipped them without a word and
    exited 0), and dumps every other segment."""
    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", tmp_path / "remote")
    folder = store / "kafka-tiered-storage" / "payments-1-cGF5bWVudHMtdG9waWMwMQ"
    [log] = folder.glob(f"{327:020d}-*.log")
    log.unlink()
    [whole] = folder.glob(f"{981:020d}-*.log")
    for f in folder.glob(whole.name[:-4] + ".*"):
        f.unlink()
    res = _dump(["--remote-storage", str(store), str(tiered / "kafka-local/kafka-logs/payments-1"), "--json"])
    assert res.exit_code == 2, res.output
    summaries = _events(res.stdout, ("summary",))
    assert [s["first_offset"] for s in summaries] == [0, 654, 1308, 1635, 1962]
    assert str(log) in res.stderr and "no such object" in res.stderr
    assert str(whole) in res.stderr and "offsets 981-1307 not read" in res.stderr


def test_dump_of_an_encrypted_segment_without_its_key_names_the_manifest() -> None:
    tiered = realworld.require_tiered()
    [folder] = tiered.glob(VARIANTS["aiven-encrypted"][1])
    [obj] = folder.glob("00000000000000000000-*.log")
    res = _dump(["--remote-storage", str(tiered / "aiven/encrypted/storage"), str(obj)])
    assert res.exit_code == 2
    assert ".rsm-manifest" in res.output and "--remote-private-key" in res.output and "key1" in res.output


def test_export_refuses_a_store_without_the_partitions_before_spark(tmp_path: Path) -> None:
    tiered = realworld.require_tiered()
    logs = str(tiered / "aiven/plain/kafka-logs")
    out = str(tmp_path / "out")
    res = CliRunner().invoke(app, ["export", logs, "--out", out, "--remote-storage", str(tmp_path)])
    assert res.exit_code == 64 and "no remote segment of" in res.output
    res = CliRunner().invoke(
        app,
        [
            "export",
            logs,
            "--out",
            out,
            "--remote-storage",
            str(tiered / "aiven/plain/storage"),
            "--remote-layout",
            "kafka-local",
        ],
    )
    assert res.exit_code == 64 and "in the kafka-local layout" in res.output
    res = CliRunner().invoke(app, ["export", logs, "--out", out, "--remote-layout", "aiven"])
    assert res.exit_code == 64 and "need remoteStorage" in res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.spark  # two `logdoctor export` runs: a local Spark session in each child
def test_export_without_the_remote_tier_names_the_offsets_it_leaves_out(tmp_path: Path) -> None:
    """Issue 23: an export of a tiered log dir without --remote-storage returned the local records only and
    said nothing of the others. It now names, before Spark starts and in its summary, each partition whose
    offsets below the first local segment it does not read, and exits 1 (warnings)."""
    import subprocess
    import sys

    tiered = realworld.require_tiered()
    logs = tiered / "kafka-local" / "kafka-logs"
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "export", str(logs),
            "--out", str(tmp_path / "out"), "--master", "local[1]", "--topics", "payments"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the README's offsets: payments-0 local from 1296, payments-1 from 2289 (kafka-local)
    for p, first in ((0, 1296), (1, 2289)):
        line = f"payments-{p} ({logs}): offsets 0-{first - 1} are below its first local segment"
        assert f"warning: {line}" in proc.stderr and f"Not exported: {line}" in proc.stdout
    with_store = subprocess.run([*argv[:6], str(tmp_path / "out2"), *argv[7:], "--remote-storage",
                                 str(tiered / "kafka-local" / "remote")],
                                capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert with_store.returncode == 0, with_store.stdout[-2000:] + with_store.stderr[-2000:]
    assert "Not exported" not in with_store.stdout
    assert "below its first local segment" not in with_store.stderr


def _aiven_copy(tmp_path: Path, edit) -> tuple[Path, Path]:
    """A copy of the plain Aiven store with the manifest of the segment at 648 of payments-0 edited."""
    import shutil

    tiered = realworld.require_tiered()
    store = tmp_path / "storage"
    shutil.copytree(tiered / VARIANTS["aiven-plain"][0], store)
    [folder] = store.glob("payments-*/0")
    [manifest] = folder.glob("00000000000000000648-*.rsm-manifest")
    obj = json.loads(manifest.read_text())
    edit(obj)
    manifest.write_text(json.dumps(obj))
    return store, manifest.with_suffix(".log")


def test_an_index_entry_of_2_to_the_40_does_not_exhaust_memory(tmp_path: Path) -> None:
    """Issue 31 item 8: an index entry with position and size 2**40 made ``dump --timestamps`` raise
    MemoryError (the read allocated the size declared). The index is only a hint: the walk finds the
    records from the segment's start, as for the intact manifest."""

    def edit(obj):
        obj["segmentIndexes"]["timestamp"] = {"position": 2**40, "size": 2**40}
        obj["segmentIndexes"]["offset"] = {"position": 2**40, "size": 2**40}

    store, log = _aiven_copy(tmp_path, edit)
    res = _dump(["--remote-storage", str(store), str(log), "--json", "--timestamps", "0:", "--print-data"])
    assert res.exit_code == 0, res.output
    assert len(_events(res.stdout, ("record",))) == 324


@pytest.mark.parametrize(
    ("field", "value"), [("segmentIndexes", "x"), ("remoteLogSegmentMetadata", 7), ("chunkIndex", [])]
)
def test_a_manifest_field_of_the_wrong_type_is_named(tmp_path: Path, field: str, value) -> None:
    store, log = _aiven_copy(tmp_path, lambda obj: obj.__setitem__(field, value))
    res = _dump(["--remote-storage", str(store), str(log)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and f"{field}: a JSON object" in res.output
    assert ".rsm-manifest" in res.output


def test_a_missing_key_file_or_store_is_no_input(tmp_path: Path) -> None:
    """Issue 31 item 10: a missing ``--remote-private-key`` file was reported as a corrupt segment (exit 2),
    a missing ``--remote-storage`` folder in ``dump`` as a truncated one: both are a missing input, 66,
    named, before anything is read (``export`` too)."""
    tiered = realworld.require_tiered()
    [folder] = tiered.glob(VARIANTS["aiven-encrypted"][1])
    [obj] = folder.glob("00000000000000000000-*.log")
    store = str(tiered / "aiven/encrypted/storage")
    missing_key = str(tmp_path / "nokey.pem")
    res = _dump(["--remote-storage", store, "--remote-private-key", missing_key, str(obj)])
    assert res.exit_code == 66, res.output
    assert f"--remote-private-key {missing_key}: no such file" in res.output and "corrupt" not in res.output
    missing_store = str(tmp_path / "nostore")
    res = _dump(["--remote-storage", missing_store, str(obj)])
    assert res.exit_code == 66, res.output
    assert f"{missing_store}: no such file or directory" in res.output and "truncated" not in res.output
    res = CliRunner().invoke(
        app,
        ["export", str(tiered / "aiven/encrypted/kafka-logs"), "--out", str(tmp_path / "out"),
         "--remote-storage", store, "--remote-private-key", missing_key],
    )  # fmt: skip
    assert res.exit_code == 66 and "no such file" in res.output, res.output
    assert not (tmp_path / "out").exists()


def test_the_remote_tier_warning_is_about_the_topics_exported(tmp_path: Path) -> None:
    """Issue 31 item 10: ``export --topics audit`` warned that ``payments``' remote tier was not exported."""
    import subprocess
    import sys

    tiered = realworld.require_tiered()
    logs = tiered / "kafka-local" / "kafka-logs"
    topics = {p.name.rsplit("-", 1)[0] for p in logs.iterdir() if p.is_dir()}
    other = sorted(t for t in topics if t != "payments" and not t.startswith("__"))[0]
    # --out inside the input: refused with 73 after the warnings, before Spark starts
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "export", str(logs),
            "--out", str(logs / "x"), "--topics"]  # fmt: skip
    proc = subprocess.run([*argv, other], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 73, proc.stderr[-2000:]
    assert "below its first local segment" not in proc.stderr
    proc = subprocess.run([*argv, "payments"], capture_output=True, text=True, timeout=300, check=False)
    assert (
        proc.returncode == 73
        and "payments-0" in proc.stderr
        and "below its first local segment" in proc.stderr
    )


def test_the_key_pair_id_given_is_checked_against_the_manifest(tmp_path: Path) -> None:
    """Issue 31 item 10: Aiven's key pair id in the manifest (``dataKey: key1:...``) was never compared
    with the key given. ``--remote-private-key ID=PEM`` names the key pair: a different one is refused
    naming both; the right one reads as the plain path does; a wrong key names the file given."""
    tiered = realworld.require_tiered()
    [folder] = tiered.glob(VARIANTS["aiven-encrypted"][1])
    [obj] = folder.glob("00000000000000000648-*.log")
    store = ["--remote-storage", str(tiered / "aiven/encrypted/storage")]
    pem = tiered / "aiven/encrypted/keys/private.pem"
    res = _dump([*store, "--remote-private-key", f"key2={pem}", str(obj)])
    assert res.exit_code == 2, res.output
    assert "key pair 'key1'" in res.output and f"key pair 'key2' given ({pem})" in res.output
    res = _dump([*store, "--remote-private-key", f"key1={pem}", str(obj), "--json"])
    assert res.exit_code == 0, res.output
    assert sum(e["record_count"] for e in _events(res.stdout, ("batch",))) == 324
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = tmp_path / "other.pem"
    other.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    res = _dump([*store, "--remote-private-key", str(other), str(obj)])
    assert res.exit_code == 2 and "key pair 'key1'" in res.output and str(other) in res.output, res.output


def test_dump_of_a_remote_segment_whose_batch_base_offset_moved_is_an_error(tmp_path: Path) -> None:
    """Issue 31 item 2: a batch's base offset moved forward by its record count in a remote object (outside
    the CRC): the dump says the offsets skip, an error for a tiered segment (it was an INFO note)."""
    from kafka.record import MemoryRecords

    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", tmp_path / "remote")
    [obj] = (store / "kafka-tiered-storage").glob("payments-0-*/00000000000000000648-*.log")
    data = bytearray(obj.read_bytes())
    records = MemoryRecords(bytes(data))
    spans, pos = [], 0
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        offsets = [r.offset for r in batch]
        spans.append((pos, offsets[0], len(offsets)))
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    position, first, count = spans[2]
    data[position : position + 8] = (first + count).to_bytes(8, "big")
    obj.write_bytes(bytes(data))
    res = _dump(["--remote-storage", str(store), str(obj), "--json"])
    assert res.exit_code == 2, res.output
    [gap] = [e for e in _events(res.stdout, ("finding",)) if e["code"] == "LOG_NON_CONSECUTIVE_OFFSETS"][:1]
    assert gap["severity"] == "error" and f"offsets {first}-{first + count - 1} are missing" in gap["message"]
