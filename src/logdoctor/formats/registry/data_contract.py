"""A registered schema's data contract (Schema Registry 7.4+ ``metadata`` and ``ruleSet``): which of its
fields the client-side field-level encryption rule (``ENCRYPT``) encrypts, and whether the whole payload is
encrypted (``ENCRYPT_PAYLOAD``).

The rules restated (cited as SR: confluentinc/schema-registry, CKP: confluent-kafka-python 2.16's
``confluent_kafka/schema_registry``):

- SR:core/.../storage/RuleSet.java, Rule.java, RuleMode.java, Metadata.java: a rule set has
  ``migrationRules``, ``domainRules``, ``encodingRules``; a rule ``name``, ``kind`` (TRANSFORM|CONDITION),
  ``mode`` (WRITE, READ, WRITEREAD, UPGRADE, DOWNGRADE, UPDOWN), ``type``, ``tags``, ``params``,
  ``disabled``. Metadata ``tags`` maps a field path (wildcards) to tags.
- CKP:_sync/serde.py ``_execute_rules_with_phase``: on write, the domain rules (then, after the payload is
  serialized, the encoding rules) of mode WRITE or WRITEREAD run unless ``disabled``.
- CKP:rules/encryption/encrypt_executor.py: ``FieldEncryptionExecutor`` (type ``ENCRYPT``) transforms each
  field whose tags (inline ``confluent:tags``, CKP:common/avro.py ``get_inline_tags``, keyed
  ``namespace.Record.field``, a JSON Schema property's ``$.outer.inner``; or the metadata's tags matched to
  those names, CKP:wildcard_matcher.py) meet the rule's ``tags``: a
  string becomes the base64 text of its ciphertext, bytes the ciphertext. ``EncryptionExecutor`` (type
  ``ENCRYPT_PAYLOAD``, an encoding rule) replaces the serialized payload by its ciphertext.

Neither decrypts here (no key service): an encrypted field decodes as its ciphertext (base64 text or
bytes), marked in ``kafka.encrypted_fields``; an encrypted payload is not decoded (``encrypted_payload``).
Protobuf fields' tags (``confluent.field_meta``) are not read: a Protobuf field is marked only through the
metadata's tags.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ENCRYPT", "ENCRYPT_PAYLOAD", "Rule", "encrypted_fields", "payload_encrypted", "rules_of"]

ENCRYPT = "ENCRYPT"
ENCRYPT_PAYLOAD = "ENCRYPT_PAYLOAD"
_ON_WRITE = ("WRITE", "WRITEREAD")
_PHASES = (("migrationRules", "migration"), ("domainRules", "domain"), ("encodingRules", "encoding"))


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of a rule set (``phase``: migration, domain or encoding)."""

    phase: str
    name: str
    kind: str
    mode: str
    type: str
    tags: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    disabled: bool = False

    @property
    def on_write(self) -> bool:
        """Whether a serializer runs it (mode WRITE or WRITEREAD, not disabled)."""
        return not self.disabled and self.mode in _ON_WRITE


def rules_of(rule_set: dict[str, Any] | None) -> tuple[Rule, ...]:
    """The rules of a ``ruleSet`` value, in phase order (an entry that is not a rule object is left out)."""
    if not isinstance(rule_set, dict):
        return ()
    out: list[Rule] = []
    for key, phase in _PHASES:
        for r in rule_set.get(key) or ():
            if not isinstance(r, dict):
                continue
            params = r.get("params") if isinstance(r.get("params"), dict) else {}
            out.append(
                Rule(
                    phase,
                    str(r.get("name") or ""),
                    str(r.get("kind") or "TRANSFORM"),
                    str(r.get("mode") or ""),
                    str(r.get("type") or ""),
                    tuple(str(t) for t in r.get("tags") or ()),
                    tuple(sorted((str(k), str(v)) for k, v in params.items())),
                    bool(r.get("disabled", False)),
                )
            )
    return tuple(out)


def payload_encrypted(rule_set: dict[str, Any] | None) -> bool:
    """Whether a serializer encrypts the whole payload (an ``ENCRYPT_PAYLOAD`` encoding rule run on write)."""
    return any(r.phase == "encoding" and r.type == ENCRYPT_PAYLOAD and r.on_write for r in rules_of(rule_set))


def encrypted_fields(
    schema_type: str, schema: str, metadata: dict[str, Any] | None, rule_set: dict[str, Any] | None
) -> tuple[str, ...]:
    """The paths (``field`` or ``outer.inner``, as the typed table's columns nest) of the fields an
    ``ENCRYPT`` domain rule encrypts on write, sorted; () when none."""
    wanted = {
        t
        for r in rules_of(rule_set)
        if r.phase == "domain" and r.type == ENCRYPT and r.on_write
        for t in r.tags
    }
    if not wanted:
        return ()
    meta_tags: dict[str, set[str]] = {}
    if isinstance(metadata, dict) and isinstance(metadata.get("tags"), dict):
        meta_tags = {str(k): {str(t) for t in v or ()} for k, v in metadata["tags"].items()}
    try:
        parsed = json.loads(schema)
    except ValueError:
        return ()
    found: set[str] = set()

    def tagged(full_name: str, inline: object) -> bool:
        tags = {str(t) for t in inline} if isinstance(inline, list) else set()
        for pattern, more in meta_tags.items():
            if _wildcard(pattern).fullmatch(full_name):
                tags |= more
        return bool(tags & wanted)

    def avro(s: object, ns: str, path: tuple[str, ...], seen: set[str]) -> None:
        if isinstance(s, list):
            for branch in s:
                avro(branch, ns, path, seen)
            return
        if not isinstance(s, dict):
            return
        t = s.get("type")
        if t in ("array", "map"):
            avro(s.get("items" if t == "array" else "values"), ns, path, seen)
        elif t == "record":
            rname = str(s.get("name") or "")
            if "." in rname:
                rns = rname.rsplit(".", 1)[0]
            else:
                rns = str(s.get("namespace")) if s.get("namespace") is not None else ns
                rname = f"{rns}.{rname}" if rns else rname
            if rname in seen:
                return
            seen = seen | {rname}
            for f in s.get("fields") or ():
                if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                    continue
                fpath = (*path, f["name"])
                if tagged(f"{rname}.{f['name']}", f.get("confluent:tags")):
                    found.add(".".join(fpath))
                avro(f.get("type"), rns, fpath, seen)

    def json_schema(s: object, path: tuple[str, ...], depth: int) -> None:
        if not isinstance(s, dict) or depth > 64:
            return
        props = s.get("properties")
        if isinstance(props, dict):
            for name, sub in props.items():
                fpath = (*path, str(name))
                inline = sub.get("confluent:tags") if isinstance(sub, dict) else None
                if tagged("$." + ".".join(fpath), inline):  # CKP:common/json_schema.py: $.a.b
                    found.add(".".join(fpath))
                json_schema(sub, fpath, depth + 1)

    if schema_type == "AVRO":
        avro(parsed, "", (), set())
    elif schema_type == "JSON":
        json_schema(parsed, (), 0)
    return tuple(sorted(found))


def _wildcard(pattern: str) -> re.Pattern[str]:
    """CKP:wildcard_matcher.py: ``*`` within a dotted name, ``**`` across, ``?`` one character."""
    out, i = "", 0
    src = pattern.replace("**.*", "**")
    while i < len(src):
        c = src[i]
        i += 1
        if c == "*" and i < len(src) and src[i] == "*":
            out, i = out + ".*", i + 1
        elif c == "*":
            out += "[^.]*"
        elif c == "?":
            out += "[^.]"
        else:
            out += re.escape(c)
    return re.compile(out)
