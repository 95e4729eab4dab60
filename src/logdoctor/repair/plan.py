"""What a repair (or any operator procedure) will do: a Plan of Actions, each a list of Steps.

A :class:`Step` is one primitive, journaled, reversible file operation on one path (see
:mod:`logdoctor.repair.steps` for the operations: ``write``, ``truncate``, ``move``,
``rename``, ``chmod``, ``copy-tree``). An :class:`Action` groups the steps of one repair
("rebuild the indexes of segment 42") with why (the findings) and what changes (sizes, a diff).
A :class:`Plan` is everything, in order, plus where the backup goes. Plans are plain data: they
serialise to JSON (the journal's first record) and back, so ``--resume``/``--rollback`` run
from the journal alone. New file contents (``write`` steps) travel as bytes in memory and are
staged into the backup dir before the first change; the JSON names the staged file (and where in it
the step's bytes are) and their hash.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

PLAN_VERSION = 1


@dataclass(slots=True)
class Step:
    """One primitive operation. ``params`` is JSON-able; ``data`` (new content) is not serialised."""

    op: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    data: bytes | None = None
    number: int = 0  # 1-based position in the plan (set by Plan.number_steps)

    def to_json(self) -> dict[str, Any]:
        return {"n": self.number, "op": self.op, "path": self.path, "params": self.params}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Step:
        return cls(op=obj["op"], path=obj["path"], params=dict(obj.get("params") or {}), number=int(obj["n"]))

    def touched(self) -> list[str]:
        """Every live path this step changes (for ordering and containment checks)."""
        dst = self.params.get("dst")
        return [self.path, dst] if dst else [self.path]


@dataclass(slots=True)
class Change:
    """What one file will look like after: for the dry-run listing."""

    path: str
    size_before: int | None  # None: the file does not exist yet
    size_after: int | None  # None: the file goes (to the backup)
    diff: str | None = None  # unified diff for small text files
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # all scalars: no deep copy

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Change:
        return cls(
            obj["path"], obj.get("size_before"), obj.get("size_after"), obj.get("diff"), obj.get("note", "")
        )


@dataclass(slots=True)
class Action:
    """One repair: its kind, the file or segment it is about, why, and its steps."""

    kind: str
    target: str
    reason: str
    codes: list[str] = field(default_factory=list)
    finding_paths: list[str] = field(default_factory=list)  # the findings this action repairs
    steps: list[Step] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "reason": self.reason,
            "codes": self.codes,
            "finding_paths": self.finding_paths,
            "steps": [s.to_json() for s in self.steps],
            "changes": [c.to_json() for c in self.changes],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Action:
        return cls(
            kind=obj["kind"],
            target=obj["target"],
            reason=obj["reason"],
            codes=list(obj.get("codes") or []),
            finding_paths=list(obj.get("finding_paths") or []),
            steps=[Step.from_json(s) for s in obj.get("steps") or []],
            changes=[Change.from_json(c) for c in obj.get("changes") or []],
        )


@dataclass(slots=True)
class Unrepaired:
    """A finding the plan leaves alone, and why."""

    code: str
    path: str
    why: str
    # set when planning found it (not the scan): e.g. an invalid batch met while rebuilding indexes
    severity: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"code": self.code, "path": self.path, "why": self.why}
        if self.severity is not None:
            out["severity"] = self.severity
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Unrepaired:
        return cls(obj["code"], obj["path"], obj["why"], obj.get("severity"))


@dataclass(slots=True)
class Plan:
    """Ordered actions over some log dirs; ``roots`` are the only folders steps may touch."""

    log_dirs: list[str]
    backup_dir: str
    actions: list[Action] = field(default_factory=list)
    unrepaired: list[Unrepaired] = field(default_factory=list)
    created_ms: int = 0
    version: int = PLAN_VERSION
    depth: str = "default"  # the scan depth the plan was made from (and --resume checks at)
    #: what the operator must know beyond the actions (tiered partitions, entries kept as they are)
    notes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return [s for a in self.actions for s in a.steps]

    def number_steps(self) -> None:
        for i, s in enumerate(self.steps, 1):
            s.number = i

    @property
    def empty(self) -> bool:
        return not self.steps

    def codes(self) -> list[str]:
        return sorted({c for a in self.actions for c in a.codes})

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "log_dirs": self.log_dirs,
            "backup_dir": self.backup_dir,
            "created_ms": self.created_ms,
            "depth": self.depth,
            "actions": [a.to_json() for a in self.actions],
            "unrepaired": [u.to_json() for u in self.unrepaired],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Plan:
        if obj.get("version") != PLAN_VERSION:
            raise ValueError(f"plan version {obj.get('version')!r}, expected {PLAN_VERSION}")
        return cls(
            log_dirs=list(obj["log_dirs"]),
            backup_dir=obj["backup_dir"],
            actions=[Action.from_json(a) for a in obj.get("actions") or []],
            unrepaired=[Unrepaired.from_json(u) for u in obj.get("unrepaired") or []],
            created_ms=int(obj.get("created_ms") or 0),
            depth=str(obj.get("depth") or "default"),
            notes=[str(n) for n in obj.get("notes") or []],
        )


__all__ = ["PLAN_VERSION", "Action", "Change", "Plan", "Step", "Unrepaired"]
