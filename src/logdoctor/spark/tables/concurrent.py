"""Another writer's commit between an export's read of the table and its own commit: do both writers'
rows overlap? An export appends the offsets above what the table held when it started; if the other
writer added some of those offsets too (another export of the same log dirs), committing would put
those records in the table twice, so the commit is refused instead (:class:`TableError`, one line)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from logdoctor.spark.tables import TableError
from logdoctor.spark.tables.files import WrittenFile


def first_offsets(files: Sequence[WrittenFile]) -> dict[tuple[str, int], int]:
    """The first offset this export holds per (topic, partition)."""
    first: dict[tuple[str, int], int] = {}
    for f in files:
        for key, (lo, _) in f.offsets.items():
            first[key] = min(lo, first.get(key, lo))
    return first


def refuse_overlap(
    where: str, first: Mapping[tuple[str, int], int], last: Mapping[tuple[str, int], int]
) -> None:
    """Raise :class:`TableError` when the table (``last`` offset per partition, read after the other
    writer's commit) holds any offset at or above this export's first one of the same partition."""
    both = sorted(k for k, lo in first.items() if last.get(k, -1) >= lo)
    if both:
        t, p = both[0]
        raise TableError(
            f"{where} holding offsets this export also holds ({t} partition {p}: the table up to "
            f"{last[(t, p)]}, this export from {first[(t, p)]}; {len(both)} partitions in all); nothing "
            "was committed, the table is as the other writer left it: run the export again with "
            "--mode append to add only the offsets above"
        )
