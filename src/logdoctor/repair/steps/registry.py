"""Every step kind a journal can name, by ``Step.op``.

Invariant: a static table, so resume and rollback of any plan (repair or an operator procedure) need no
other import; an ``op`` not in it is an error naming the step.
"""

from __future__ import annotations

from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import Operation, StepStateError
from logdoctor.repair.steps.chmod import SetOwnerMode
from logdoctor.repair.steps.fetch_remote import FetchRemote
from logdoctor.repair.steps.mkdir import MakeDir
from logdoctor.repair.steps.move import MoveToBackup
from logdoctor.repair.steps.rebuild_index import RebuildIndex
from logdoctor.repair.steps.rename import RenamePath
from logdoctor.repair.steps.truncate import TruncateFile
from logdoctor.repair.steps.verified_copy import CopyPartition, CopyTree, RemoveCopied
from logdoctor.repair.steps.write import WriteFile

OPERATIONS: dict[str, Operation] = {
    o.op: o
    for o in (
        WriteFile(),
        TruncateFile(),
        MoveToBackup(),
        RenamePath(),
        SetOwnerMode(),
        CopyTree(),
        CopyPartition(),
        RemoveCopied(),
        MakeDir(),
        FetchRemote(),
        RebuildIndex(),
    )
}
"""Every operation a journal can name, by ``Step.op``: a static table, so resume and rollback of any
plan (repair or an operator procedure) need no other import.

Crash points (``LOGDOCTOR_CRASH_AT=N:PHASE``) of the procedures' operations: copy-partition
``temp-written`` (half the partial copy written), ``backed-up`` (partial copy complete and verified,
manifest saved, not renamed), ``applied`` (renamed); remove-copied ``backed-up`` (copy checked),
``temp-written`` (renamed to the ``-delete`` name, not removed), ``applied`` (removed); rebuild-index
``backed-up`` (rebuilt, its sha256 saved, nothing written), ``temp-written`` (temp file written, not renamed),
``applied``.
"""


def operation(step: Step) -> Operation:
    op = OPERATIONS.get(step.op)
    if op is None:
        raise StepStateError(f"unknown operation {step.op!r} in step {step.number}")
    return op
