"""Checks after a procedure ran: copies against their checksums, checkpoints well formed."""

from __future__ import annotations

import os
from pathlib import Path

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import parse_offset_checkpoint
from logdoctor.logdir.names import OFFSET_CHECKPOINT_FILES
from logdoctor.repair import backup as bk
from logdoctor.repair.plan import Plan, Step
from logdoctor.repair.steps.base import StepContext
from logdoctor.repair.steps.copying import read_manifest


def manifest_of(plan: Plan, step: Step) -> dict[str, str] | None:
    """The checksums a ``copy-partition``/``remove-copied`` step saved in the backup dir."""
    return read_manifest(StepContext(plan.backup_dir), step)


def check_checkpoints(plan: Plan) -> list[str]:
    """Every offset checkpoint the plan wrote is what it planned and parses as the broker reads it."""
    problems: list[str] = []
    for step in plan.steps:
        if step.op != "write" or os.path.basename(step.path) not in OFFSET_CHECKPOINT_FILES:
            continue
        try:
            data = Path(step.path).read_bytes()
        except OSError as e:
            problems.append(f"{step.path}: {e.strerror}")
            continue
        if bk.sha256_bytes(data) != step.params["sha_after"]:
            problems.append(f"{step.path} is not what the plan wrote")
        try:
            parse_offset_checkpoint(data, source=step.path)
        except FormatError as e:
            problems.append(str(e))
    return problems


__all__ = ["check_checkpoints", "manifest_of"]
