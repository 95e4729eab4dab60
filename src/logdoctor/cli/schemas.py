"""`logdoctor schemas PATH...`: the Schema Registry the ``_schemas`` topic of the inputs holds.

Every ``_schemas`` partition among the inputs and the ``--schemas`` paths is read and replayed as the
registry's own reader does (:func:`logdoctor.logdir.schemas_store.load_registry`): one row per subject
version with its schema id, context, type, status (live, soft-deleted, hard-deleted), GUID, references and
data-contract rules (field-level ENCRYPT with the fields it encrypts, ENCRYPT_PAYLOAD, others by type), then
the contexts, the associations (8.x: topic -> subject), the compatibility levels and modes, and what could
not be read.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail, tool_failure, usage_error
from logdoctor.cli.exit_codes import EX_NOINPUT
from logdoctor.cli.input_checks import require_inputs_exist
from logdoctor.cli.jsonout import print_json
from logdoctor.formats.registry.data_contract import ENCRYPT, rules_of
from logdoctor.formats.registry.store import (
    HARD_DELETED,
    LIVE,
    SOFT_DELETED,
    RegisteredSchema,
    SchemaRegistry,
)
from logdoctor.logdir.schemas_store import LoadedRegistry

_SHOWN = {LIVE: "live", SOFT_DELETED: "soft-deleted", HARD_DELETED: "hard-deleted"}


def version_status(registry: SchemaRegistry, subject: str, version: int) -> str:
    """The status of one subject version: the store's entry (live or soft-deleted), else hard-deleted."""
    entry = registry.subject_versions.get((subject, version))
    if entry is None:
        return HARD_DELETED
    return SOFT_DELETED if entry.deleted else LIVE


def rule_rows(s: RegisteredSchema) -> list[dict[str, Any]]:
    """The rules of a schema's data contract; an ENCRYPT rule with the fields it encrypts."""
    return [
        {
            "phase": r.phase,
            "name": r.name,
            "type": r.type,
            "mode": r.mode,
            "tags": list(r.tags),
            "disabled": r.disabled,
            **(
                {"encrypted_fields": list(s.encrypted_fields)}
                if r.type == ENCRYPT and r.phase == "domain"
                else {}
            ),
        }
        for r in rules_of(s.rule_set)
    ]


def _every_schema(registry: SchemaRegistry) -> list[RegisteredSchema]:
    """The default context's ids, then each other context's (a context's schema listed once)."""
    out = list(registry.schemas.values())
    seen = {id(s) for s in out}
    for ctx in sorted(registry.contexts):
        out.extend(s for s in registry.contexts[ctx].values() if id(s) not in seen)
    return out


def rows(registry: SchemaRegistry) -> list[dict[str, Any]]:
    """One row per (schema id, subject version), by context, id, then subject version."""
    return [
        {
            "id": s.id,
            "context": s.context,
            "subject": subject,
            "version": version,
            "type": s.schema_type,
            "status": version_status(registry, subject, version),
            "schema_status": s.status,
            "guid": s.guid,
            "references": [
                {"name": r.name, "subject": r.subject, "version": r.version} for r in s.references
            ],
            "rules": rule_rows(s),
        }
        for s in _every_schema(registry)
        for subject, version in s.versions
    ]


def _settings(table: dict[str | None, str]) -> dict[str, Any]:
    subjects = {k: v for k, v in table.items() if k is not None}
    return {"global": table.get(None), "subjects": dict(sorted(subjects.items()))}


def to_json(loaded: LoadedRegistry) -> dict[str, Any]:
    reg = loaded.registry
    return {
        "sources": list(loaded.sources),
        "versions": rows(reg),
        "subjects": reg.subjects(),
        "contexts": reg.all_contexts(),
        "associations": [
            {
                "resource_type": a.resource_type,
                "resource_name": a.resource_name,
                "resource_namespace": a.resource_namespace,
                "resource_id": a.resource_id,
                "association_type": a.association_type,
                "subject": a.subject,
                "lifecycle": a.lifecycle,
                "frozen": a.frozen,
                "guid": a.guid,
            }
            for a in reg.associations
        ],
        "compatibility": _settings(reg.config),
        "mode": _settings(reg.mode),
        "notes": list(loaded.notes),
    }


def render(loaded: LoadedRegistry) -> str:
    """The text report."""
    reg = loaded.registry
    lines = [
        f"Schema Registry of {', '.join(loaded.sources) or 'no _schemas partition'}: "
        f"{len(reg.schemas)} schema id(s), {len(reg.subjects())} subject(s) with a live version"
    ]
    table = [["id", "subject", "version", "type", "status", "guid", "references", "rules"]]
    for row in rows(reg):
        refs = ", ".join(f"{r['name']} -> {r['subject']} v{r['version']}" for r in row["references"])
        table.append(
            [str(row["id"]), row["subject"], str(row["version"]), row["type"], _SHOWN[row["status"]],
             row["guid"] or "-", refs or "-", _rules_text(row["rules"]) or "-"]
        )  # fmt: skip
    if len(table) > 1:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        right = {0, 2}
        for r in table:
            cells = [
                c.rjust(w) if i in right else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ]
            lines.append("  " + "  ".join(cells).rstrip())
    if reg.all_contexts():
        lines.append(f"contexts: {', '.join(reg.all_contexts())} (and the default context .)")
    for a in reg.associations:
        lines.append(
            f"association: {a.resource_type} {a.resource_name} ({a.resource_namespace}) "
            f"{a.association_type} -> {a.subject} [{a.lifecycle.lower()}{', frozen' if a.frozen else ''}]"
        )
    for title, table_of in (("compatibility", reg.config), ("mode", reg.mode)):
        if table_of:
            parts = [
                f"{v} (global)" if k is None else f"{k} {v}" for k, v in sorted(table_of.items(), key=_key)
            ]
            lines.append(f"{title}: {'; '.join(parts)}")
    for note in loaded.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _rules_text(rules: list[dict[str, Any]]) -> str:
    parts = []
    for r in rules:
        text = r["type"] + (f"({', '.join(r['encrypted_fields'])})" if r.get("encrypted_fields") else "")
        parts.append(text + (" disabled" if r["disabled"] else ""))
    return ", ".join(parts)


def _key(item: tuple[str | None, str]) -> tuple[bool, str]:
    return (item[0] is not None, item[0] or "")


@app.command("schemas")
def schemas_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            help="Log dirs, folders holding them, partition folders or .log files (paths or URIs); their "
            "_schemas partitions are read.",
        ),
    ],
    schemas: Annotated[
        list[str] | None,
        typer.Option(
            "--schemas",
            metavar="PATH",
            help="Where else the registry's topic is: another broker's log dir, or a partition folder of "
            "any topic name (repeatable).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """List the Schema Registry of the _schemas topic: ids, subjects, versions, deletes, GUIDs, configs."""
    from logdoctor.formats.registry.store import RegistryConflictError
    from logdoctor.logdir.discovery import DiscoveryError, InputNotFoundError, split_paths
    from logdoctor.logdir.schemas_store import load_registry

    extra = list(schemas or [])
    require_inputs_exist([*split_paths(paths), *split_paths(extra)])  # a missing input exits 66
    try:
        loaded = load_registry(paths, extra)
    except InputNotFoundError as exc:  # a URI that names nothing
        fail(f"error: {exc}", EX_NOINPUT)
    except (DiscoveryError, RegistryConflictError) as exc:
        usage_error(str(exc))
    except Exception as exc:
        tool_failure("schemas", exc)
    if json_out:
        print_json(to_json(loaded))
    else:
        from logdoctor.cli.output import text_console

        text_console().print(render(loaded), markup=False, highlight=False, soft_wrap=True)
