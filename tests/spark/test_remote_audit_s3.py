"""The remote tier audit from an S3 Inventory report, against a direct listing of the same store on S3.

A copy of ../shared/tiered's LocalTieredStorage store, with faults planted (a stray segment, a deleted
object), is uploaded to moto's S3 (s3server.py). An inventory report of the bucket is written as AWS
writes one (its manifest.json: sourceBucket, destinationBucket as an ARN, fileFormat, fileSchema, files
with key, size and MD5checksum; CSV data files gzip'd without a header, keys URL-encoded; or Parquet with
AWS's snake-case columns), from the objects the server lists. `scan --remote-inventory` must give the
same audit findings as `scan --remote-storage s3://...`, and the findings the planted faults make.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
from pathlib import Path
from urllib.parse import quote_plus

import pytest

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.logdir.remote_metadata import TopicIdPartition
from logdoctor.sample.remote_tier import append_metadata_events, segment_metadata

pytestmark = pytest.mark.spark  # starts Spark: left out of make test-fast

PAYMENTS_ID = "cGF5bWVudHMtdG9waWMwMQ"
DANGLING = "ZGFuZ2xpbmctdXBsb2FkMQ"  # base64 of "dangling-upload1"
AUDIT = {
    "REMOTE_OBJECTS_LEAKED",
    "REMOTE_SEGMENT_MISSING",
    "REMOTE_SEGMENTS_OVERLAP",
    "REMOTE_EPOCH_LINEAGE_BROKEN",
}
CSV_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded, ReplicationStatus"
ORC_SCHEMA = (
    "struct<bucket:string,key:string,size:bigint,last_modified_date:timestamp,e_tag:string,"
    "storage_class:string>"
)
PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (STRING); required binary key (STRING); "
    "optional int64 size; optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); "
    "optional binary e_tag (STRING); optional binary storage_class (STRING); }"
)

# A bucket of this module's own: the audit reads the whole store (an inventory report is of a whole
# bucket), and other test modules upload log dirs and remote tiers into the shared server's default
# bucket, whose objects would be leaked ones here.
BUCKET = "logdoctor-audit"


def _writable(root: Path) -> None:
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)


@pytest.fixture(scope="module")
def planted(s3, tmp_path_factory):
    """(log dir copy, store URI, stray objects' keys, deleted segment id): faults planted, store on S3."""
    tiered = realworld.require_tiered()
    tmp = tmp_path_factory.mktemp("audit-s3")
    log_dir, store = tmp / "kafka-logs", tmp / "store"
    shutil.copytree(tiered / "kafka-local" / "kafka-logs", log_dir)
    shutil.copytree(tiered / "kafka-local" / "remote", store)
    _writable(tmp)
    p0 = store / "kafka-tiered-storage" / f"payments-0-{PAYMENTS_ID}"
    segs = {int(p.name[:20]): p.name[21:43] for p in p0.iterdir() if p.name.endswith(".log")}
    stray = "c3RyYXktc2VnbWVudC0wMQ"
    made = []
    for p in sorted(p0.glob(f"*{segs[0]}*")):
        q = p0 / p.name.replace(segs[0], stray).replace("00000000000000000000-", "00000000000000005000-")
        shutil.copyfile(p, q)
        made.append(q.relative_to(store).as_posix())
    (p0 / f"00000000000000000648-{segs[648]}.log").unlink()
    # a dangling upload (KAFKA-17062): COPY_SEGMENT_STARTED long ago, never finished, its objects left
    for p in sorted(p0.glob(f"*{segs[972]}*")):
        q = p0 / p.name.replace(segs[972], DANGLING).replace("00000000000000000972-", "00000000000000001296-")
        shutil.copyfile(p, q)
    _append(
        log_dir / "__remote_log_metadata-21" / "00000000000000000000.log",
        segment_metadata(
            TopicIdPartition(PAYMENTS_ID, "payments", 0), DANGLING, 1296, 1619, broker_id=0,
            event_timestamp_ms=1700000000000, max_timestamp_ms=1710000001619, leader_epochs=[(0, 1296)],
            size=1,
        ),
    )  # fmt: skip
    s3.create_bucket(BUCKET)
    uri = s3.upload(store, "tiered-store", bucket=BUCKET)
    return log_dir, uri, sorted(f"{uri}/{k}" for k in made), segs[648]


def _append(path: Path, *records: dict, ts: int = 1700000000000) -> None:
    append_metadata_events(path, *records, ts=ts)


def _bucket_objects(s3) -> list[tuple[str, int, int]]:
    from pyarrow import fs

    infos = s3.filesystem().get_file_info(fs.FileSelector(BUCKET, recursive=True))
    return sorted(
        (i.path[len(BUCKET) + 1 :], int(i.size), int(i.mtime_ns // 1_000_000))
        for i in infos
        if i.type == fs.FileType.File and not i.path.startswith(f"{BUCKET}/inventory/")
    )


def _put(s3, key: str, data: bytes) -> None:
    with s3.filesystem().open_output_stream(f"{BUCKET}/{key}", compression=None) as out:
        out.write(data)


def _csv_file(objects, *, per_file: int) -> list[bytes]:
    files = []
    for at in range(0, len(objects), per_file):
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for key, size, mtime in objects[at : at + per_file]:
            when = dt.datetime.fromtimestamp(mtime / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            w.writerow([BUCKET, quote_plus(key, safe="/"), size, when, "etag", "STANDARD", "FALSE", ""])
        files.append(gzip.compress(buf.getvalue().encode()))
    return files


def _parquet_file(objects, *, per_file: int) -> list[bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = []
    for at in range(0, len(objects), per_file):
        part = objects[at : at + per_file]
        table = pa.table(
            {
                "bucket": pa.array([BUCKET] * len(part), pa.string()),
                "key": pa.array([k for k, _s, _m in part], pa.string()),
                "size": pa.array([s for _k, s, _m in part], pa.int64()),
                "last_modified_date": pa.array([m for _k, _s, m in part], pa.timestamp("ms", tz="UTC")),
                "e_tag": pa.array(["etag"] * len(part), pa.string()),
                "storage_class": pa.array(["STANDARD"] * len(part), pa.string()),
            }
        )
        out = io.BytesIO()
        pq.write_table(table, out)
        files.append(out.getvalue())
    return files


def _orc_file(objects, *, per_file: int) -> list[bytes]:
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    out = []
    for data in _parquet_file(objects, per_file=per_file):
        buf = io.BytesIO()
        po.write_table(pq.read_table(io.BytesIO(data)), buf)
        out.append(buf.getvalue())
    return out


def _inventory(s3, fmt: str) -> str:
    """Write an inventory report of the bucket in ``fmt``; returns its manifest's URI."""
    objects = _bucket_objects(s3)
    config = f"audit-{fmt.lower()}"
    if fmt == "CSV":
        datas, schema, ext = _csv_file(objects, per_file=20), CSV_SCHEMA, "csv.gz"
    elif fmt == "ORC":
        datas, schema, ext = _orc_file(objects, per_file=20), ORC_SCHEMA, "orc"
    else:
        datas, schema, ext = _parquet_file(objects, per_file=20), PARQUET_SCHEMA, "parquet"
    files = []
    for i, data in enumerate(datas):
        key = f"inventory/{BUCKET}/{config}/data/part-{i:04d}.{ext}"
        _put(s3, key, data)
        files.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    manifest = {
        "sourceBucket": BUCKET,
        "destinationBucket": f"arn:aws:s3:::{BUCKET}",
        "version": "2016-11-30",
        "creationTimestamp": "1795454800000",
        "fileFormat": fmt,
        "fileSchema": schema,
        "files": files,
    }
    mkey = f"inventory/{BUCKET}/{config}/2026-11-24T00-00Z/manifest.json"
    _put(s3, mkey, json.dumps(manifest).encode())
    return f"s3://{BUCKET}/{mkey}"


def _audit(log_dir: Path, **kw) -> list[tuple[str, str, dict]]:
    report = scan([log_dir], ScanOptions(now_ms=1710000100000, **kw), jobs=1)
    return sorted(
        (f.code, f.path, {k: v for k, v in f.details.items()}) for f in report.findings if f.code in AUDIT
    )


@pytest.mark.parametrize("fmt", ["CSV", "Parquet", "ORC"])
def test_inventory_report_gives_the_direct_listings_findings(s3, planted, fmt: str) -> None:
    log_dir, uri, stray_keys, deleted = planted
    direct = _audit(log_dir, remote_storage=uri)
    assert [c for c, _p, _d in direct] == ["REMOTE_OBJECTS_LEAKED", "REMOTE_SEGMENT_MISSING"]
    leak = next(d for c, _p, d in direct if c == "REMOTE_OBJECTS_LEAKED")
    assert leak["objects"] == stray_keys
    missing = next(d for c, _p, d in direct if c == "REMOTE_SEGMENT_MISSING")
    assert missing["segment_id"] == deleted and missing["missing"] == ["log"]
    assert (missing["start_offset"], missing["end_offset"]) == (648, 971)
    manifest = _inventory(s3, fmt)
    assert _audit(log_dir, remote_inventory=manifest) == direct


def test_a_data_file_that_differs_from_its_md5_is_a_usage_error(s3, planted) -> None:
    from logdoctor.checks.scan_report import ScanUsageError

    log_dir, _uri, _stray, _deleted = planted
    manifest = _inventory(s3, "CSV")
    fs = s3.filesystem()
    with fs.open_input_stream(manifest[len("s3://") :]) as f:
        data = json.loads(f.read())
    data["files"][0]["MD5checksum"] = "0" * 32
    _put(s3, manifest[len(f"s3://{BUCKET}/") :], json.dumps(data).encode())
    with pytest.raises(ScanUsageError, match="MD5checksum"):
        scan([log_dir], ScanOptions(remote_inventory=manifest), jobs=1)


def _key(f: dict) -> tuple:
    """What a finding is about, whichever the path it is reported under (the scan: the partition's local
    folder; the census: the store's folder): code, offset, and the segment ids and keys it names."""
    import re

    ids = tuple(sorted(set(re.findall(r"\b[A-Za-z0-9_-]{22}\b", f["message"])) - {PAYMENTS_ID}))
    return (f["code"], f["offset"], ids)


@pytest.mark.parametrize("fmt", ["CSV", "Parquet", None])
def test_census_audit_gives_the_scans_findings(spark, s3, planted, tmp_path, fmt) -> None:
    """One task per inventory data file (or one listing task): the same root causes as the scan."""
    from logdoctor.spark.census import run_census

    log_dir, uri, stray_keys, _deleted = planted
    scanned = scan([log_dir], ScanOptions(now_ms=1710000100000, remote_storage=uri), jobs=1)
    want = sorted(_key(f.to_json()) for f in scanned.findings if f.code in AUDIT)
    kw = {"remote_inventory": _inventory(s3, fmt)} if fmt else {"remote_storage": uri}
    result = run_census(spark, [str(log_dir)], tmp_path / "census", now_ms=1710000100000, **kw)
    got = [f for f in result.findings if f["code"] in AUDIT]
    assert sorted(_key(f) for f in got) == want
    leak = next(f for f in got if f["code"] == "REMOTE_OBJECTS_LEAKED")
    assert all(k in leak["fix"] for k in stray_keys)
    # the dangling upload: once (the audit's, with its objects; the broker scan's own is dropped)
    [dangling] = [f for f in result.findings if f["code"] == "REMOTE_UPLOAD_UNFINISHED"]
    assert DANGLING in dangling["message"] and "5 objects of it" in dangling["message"]
    assert "offsets 1296-1619" in dangling["message"]


def test_the_printed_delete_command_removes_exactly_the_leaked_objects_on_s3(s3, planted) -> None:
    """Last in the module: it deletes the stray objects of the shared store."""
    import subprocess

    tools = Path(__file__).resolve().parents[2] / ".tools" / "awscli" / "bin"  # scripts/ensure-awscli.sh
    path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"
    if shutil.which("aws", path=path) is None:
        pytest.skip("required: the AWS CLI (aws; `make test` installs it with scripts/ensure-awscli.sh)")
    log_dir, uri, stray_keys, _deleted = planted
    report = scan([log_dir], ScanOptions(now_ms=1710000100000, remote_storage=uri), jobs=1)
    [leak] = [f for f in report.findings if f.code == "REMOTE_OBJECTS_LEAKED"]
    before = {f"s3://{BUCKET}/{k}" for k, _s, _m in _bucket_objects(s3)}
    command = leak.fix.split("delete exactly these objects: ", 1)[1]
    assert command.count("aws s3 rm ") == len(stray_keys)
    env = {**os.environ, "PATH": path}
    subprocess.run(["bash", "-c", command], check=True, env=env, capture_output=True, timeout=300)
    assert {f"s3://{BUCKET}/{k}" for k, _s, _m in _bucket_objects(s3)} == before - set(stray_keys)
    after = scan([log_dir], ScanOptions(now_ms=1710000100000, remote_storage=uri), jobs=1)
    assert sorted(f.code for f in after.findings if f.code in AUDIT) == ["REMOTE_SEGMENT_MISSING"]
