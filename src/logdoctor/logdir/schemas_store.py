"""The Schema Registry of a set of inputs: every ``_schemas`` partition found, read and replayed.

:func:`load_registry` finds the registry's store topic (``_schemas``, Schema Registry's ``kafkastore.topic``
default) among the inputs as every reader finds partitions (:func:`logdoctor.logdir.discovery.discover`: log
dirs, folders holding them, partition folders, ``.log`` files, URIs), plus the ``schemas`` inputs (another
broker's log dir, a partition folder of any topic name: a copy of the store kept under another name). Each
partition's records are read in offset order with the readers' own batch checks (the walk of
:func:`logdoctor.logdir.seek.segment_batches`, a batch whose CRC does not match left out alone by
:func:`logdoctor.formats.records.skip_crc_mismatches`, each offset once by
:class:`logdoctor.logdir.read_plan.OffsetOrder`, control batches skipped), as the registry's
``read_uncommitted`` consumer reads them (its producer is not transactional), replayed
(:func:`logdoctor.formats.registry.store.replay_records`) and the partitions merged
(:func:`~logdoctor.formats.registry.store.merge`).

Beside ``_schemas``, the journal of an Apicurio Registry with KafkaSQL storage (``kafkasql-journal`` by
default, any name) is found by its records: a partition whose first record has an Apicurio journal key and
``mt`` header (:func:`logdoctor.formats.registry.apicurio_journal.is_journal_record`) is replayed as the
registry replays it (:func:`~logdoctor.formats.registry.apicurio_journal.replay_journal`, which assigns the
ids) and merged with the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from logdoctor.errors import FormatError
from logdoctor.formats.registry.store import SchemaRegistry, merge, replay_records
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.read_plan import named_directly, normalized
from logdoctor.logdir.refs import PartitionRef

__all__ = ["SCHEMAS_TOPIC", "LoadedRegistry", "load_registry", "missing_ids_text", "store_records"]

#: Schema Registry's default ``kafkastore.topic``
SCHEMAS_TOPIC = "_schemas"

#: why framed records may name ids the registry read does not have
MISSING_IDS_CAUSES = (
    "the registry's _schemas topic lived on another cluster or another broker's log dir (give it with "
    "--schemas), records were produced through another registry, or compaction or retention removed the "
    "records of hard-deleted versions"
)


@dataclass(slots=True)
class LoadedRegistry:
    """The registry of the inputs (``registry``), the partition folders read (``sources``), and ``notes``:
    no store found, records that did not parse, partitions whose early records are gone."""

    registry: SchemaRegistry
    sources: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def missing_ids_text(ids: Iterable[int], loaded: LoadedRegistry) -> str:
    """One line for framed records whose schema ids the registry does not have, with the common causes."""
    listed = sorted(set(ids))
    shown = ", ".join(map(str, listed[:20])) + (f" and {len(listed) - 20} more" if len(listed) > 20 else "")
    where = ", ".join(loaded.sources) if loaded.sources else "no _schemas partition among the inputs"
    return (
        f"schema ids the registry read ({where}) does not have or has hard-deleted: {shown}; common causes: "
        f"{MISSING_IDS_CAUSES}"
    )


def _store_partitions(
    paths: Sequence[str], schemas: Sequence[str], read_options: ReadOptions | None, topic: str
) -> list[PartitionRef]:
    from logdoctor.logdir.discovery import discover, split_paths

    # only the file systems' options: the store topic is compacted, never tiered (K:storage/.../
    # UnifiedLog.java remoteLogEnabled needs cleanup.policy=delete), and is read whatever the topics read
    opts = None if read_options is None else ReadOptions(storage=read_options.storage)
    found: dict[str, PartitionRef] = {}
    items = split_paths(list(paths), opts) if paths else []
    if items:
        for ref in discover(items, opts):
            if ref.topic == topic:
                found.setdefault(normalized(ref.path, ref.storage.is_local), ref)
    for item in split_paths(list(schemas), opts) if schemas else []:
        for ref in discover([item], opts):
            if ref.topic == topic or named_directly(ref, item):
                found.setdefault(normalized(ref.path, ref.storage.is_local), ref)
    return sorted(found.values(), key=lambda r: (r.log_dir, r.topic, r.partition, r.path))


def _is_journal(ref: PartitionRef) -> bool:
    """Whether the partition's first data record is an Apicurio journal record (its first batch read only)."""
    from logdoctor.formats.registry.apicurio_journal import is_journal_record

    if ref.topic.startswith("__") or ref.topic == SCHEMAS_TOPIC:
        return False
    for _offset, key, _value, headers in _data_records(ref, []):
        return is_journal_record(key, headers)
    return False


def _journal_partitions(
    paths: Sequence[str], schemas: Sequence[str], read_options: ReadOptions | None
) -> list[PartitionRef]:
    """The Apicurio journal partitions among the inputs and ``schemas``, found by their first record."""
    from logdoctor.logdir.discovery import discover, split_paths

    opts = None if read_options is None else ReadOptions(storage=read_options.storage)
    found: dict[str, PartitionRef] = {}
    for group in (paths, schemas):
        items = split_paths(list(group), opts) if group else []
        for ref in discover(items, opts) if items else ():
            key = normalized(ref.path, ref.storage.is_local)
            if key not in found and ref.segments and _is_journal(ref):
                found[key] = ref
    return sorted(found.values(), key=lambda r: (r.log_dir, r.topic, r.partition, r.path))


def store_records(ref: PartitionRef, problems: list[str]) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """The ``(offset, key, value)`` data records of a partition in offset order, each offset once. What is
    not read (a batch whose CRC does not match, a batch whose records do not decode, a segment's damaged
    tail, a file that cannot be read) is named in ``problems``."""
    for offset, key, value, _headers in _data_records(ref, problems):
        yield offset, key, value


Headers = tuple[tuple[str, bytes | None], ...]
_R = TypeVar("_R", bound=tuple)


def _data_records(
    ref: PartitionRef, problems: list[str]
) -> Iterator[tuple[int, bytes | None, bytes | None, Headers]]:
    """:func:`store_records` with each record's headers."""
    from logdoctor.formats.records import CrcSkip, skip_crc_mismatches
    from logdoctor.logdir.read_plan import OffsetOrder
    from logdoctor.logdir.seek import segment_batches

    for seg in ref.segments:
        skipped: list[CrcSkip] = []
        walk = segment_batches(seg, 0, verify_crc=False)
        batches = skip_crc_mismatches(walk, skipped)
        order = OffsetOrder(seg)
        told = 0
        try:
            for batch in batches:
                while told < len(skipped):
                    order.passed(skipped[told].last_offset)
                    told += 1
                if not order.admit(batch) or batch.is_control:
                    continue
                try:
                    records = [
                        (r.offset, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
                        for r in batch.records()
                    ]
                except FormatError as exc:
                    problems.append(
                        f"{seg.path}@{batch.position}: records of offsets {batch.base_offset}-"
                        f"{batch.last_offset} not read: {exc}"
                    )
                    continue
                for offset, key, value, headers in records:
                    key = None if key is None else bytes(key)
                    yield offset, key, None if value is None else bytes(value), headers
        except FormatError as exc:
            problems.append(f"{seg.path}: the rest of the segment not read: {exc}")
        except OSError as exc:
            problems.append(f"{seg.path}: not read: {exc}")
        finally:
            batches.close()
            walk.close()
        problems.extend(c.describe(seg.path) for c in skipped)
        problems.extend(order.problems)


def _counted(records: Iterator[_R], offsets: list[int]) -> Iterator[_R]:
    """``records``, their offsets appended to ``offsets`` as they go by."""
    for rec in records:
        offsets.append(rec[0])
        yield rec


def load_registry(
    paths: Sequence[str],
    schemas: Sequence[str] = (),
    *,
    options: ReadOptions | None = None,
    topic: str = SCHEMAS_TOPIC,
) -> LoadedRegistry:
    """The registry of every ``topic`` partition among ``paths`` and ``schemas`` (where a partition folder
    named directly is read whatever its topic). ``options``: the read's, of which the file systems'
    (``s3.region``, ...) are used, as for the readers. Raises
    :class:`~logdoctor.logdir.discovery.DiscoveryError` for a path that is not there or holds no log dir,
    :class:`~logdoctor.formats.registry.store.RegistryConflictError` for two registries."""
    refs = _store_partitions(paths, schemas, options, topic)
    journals = _journal_partitions(paths, schemas, options)
    # a journal's partition folder given with --schemas is read as a journal, not as a copy of _schemas
    refs = [r for r in refs if r.path not in {j.path for j in journals}]
    if not refs and not journals:
        return LoadedRegistry(
            SchemaRegistry(),
            (),
            [
                f"no {topic} partition found among the inputs: no framed record can be typed (the registry's "
                "topic may be on another broker or cluster: give its log dir or partition folder with "
                "--schemas)"
            ],
        )
    notes: list[str] = []
    parts: list[tuple[str, SchemaRegistry]] = []
    for ref in refs:
        problems: list[str] = []
        offsets: list[int] = []
        reg = replay_records(_counted(store_records(ref, problems), offsets), ref.path)
        parts.append((ref.path, reg))
        notes.extend(problems)
        if not offsets:
            notes.append(f"{ref.path}: no records")
        else:
            if offsets[0] > 0:
                notes.append(
                    f"{ref.path}: the first record is at offset {offsets[0]}: the records before it "
                    "(the first schemas registered among them) are gone"
                )
            if offsets[-1] - offsets[0] + 1 != len(offsets):
                why = "records not read (named above), or compacted" if problems else "compacted"
                notes.append(
                    f"{ref.path}: {len(offsets)} records of offsets {offsets[0]}-{offsets[-1]}: {why} "
                    "(a compaction removes the versions hard-deleted before it)"
                )
    for ref in journals:
        parts.append((ref.path, _replay_journal(ref, notes)))
    registry = merge(parts)
    notes.extend(registry.notes)
    notes.extend(registry.errors)
    return LoadedRegistry(registry, tuple(ref.path for ref in [*refs, *journals]), notes)


def _replay_journal(ref: PartitionRef, notes: list[str]) -> SchemaRegistry:
    """The registry of one Apicurio journal partition; what was not read, or is gone, in ``notes``."""
    from logdoctor.formats.registry.apicurio_journal import replay_journal

    problems: list[str] = []
    offsets: list[int] = []

    reg = replay_journal(_counted(_data_records(ref, problems), offsets), ref.path)
    notes.extend(problems)
    if offsets and (offsets[0] > 0 or offsets[-1] - offsets[0] + 1 != len(offsets)):
        notes.append(
            f"{ref.path}: Apicurio journal records of offsets {offsets[0]}-{offsets[-1]}, {len(offsets)} "
            "of them: records are missing, and the registry numbers its schemas by replaying every one, so "
            "the ids given here may not be the registry's"
        )
    return reg
