"""A registered Protobuf schema compiled by protoc: its message classes, and the message a message-index path
names.

The registered ``.proto`` text and the texts of its references (each reference's ``name`` is the path its
``import`` names; its subject and version give the text, transitively) are written into a private temporary
folder and compiled by the protoc that grpcio-tools ships (``python -m grpc_tools.protoc``, whose include path
holds ``google/protobuf/*.proto``: the well-known types need no reference) into a FileDescriptorSet
(``--include_imports``), which is loaded into a fresh
:class:`~google.protobuf.descriptor_pool.DescriptorPool`. Compiled pools are kept per schema (id and texts)
for the life of the process.

The message-index path (the Confluent frame's indexes after the schema id): the first index is the position
of a top-level message among the file's messages in declaration order, each further index the position of a
nested message among its parent's nested messages. Confluent's two serializers count the nested messages
differently where a ``map<K, V>`` field is declared (docs/typed-tables.md, "Protobuf message indexes"):

- Java's (``ProtobufSchema.toMessageIndexes`` / ``toMessageName`` in confluentinc/schema-registry
  protobuf-provider) walks the message elements of the registered ``.proto`` text: a ``map`` field declares
  no message there, so the map-entry message protoc synthesizes for it is not counted; a map-entry message
  the text writes out itself (as Confluent's registry prints a schema registered as a descriptor:
  :func:`_declared_map_entries`) is;
- confluent-kafka-python's (``_create_index_array`` in confluent_kafka/schema_registry/common/protobuf.py)
  walks the compiled descriptor's ``nested_types``, where protoc put each map-entry message at its field's
  place in the text: it is counted.

A path is read both ways. A path that names a message one way only names that message; a path that names two
different messages is :class:`AmbiguousMessageIndexes` (its records go to the side table with
``ambiguous_message_indexes``); a map-entry message itself is no message a record is written as.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message

from logdoctor.formats.registry.reasons import AMBIGUOUS_MESSAGE_INDEXES
from logdoctor.formats.registry.results import SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

#: the file name the registered schema itself is compiled under (never an import path of a reference: those
#: are checked against it)
MAIN_FILE = "registered_schema.proto"

_PROTOC_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class CompiledSchema:
    """One registered schema compiled: the pool of its files and the main file's name in it."""

    pool: descriptor_pool.DescriptorPool
    main_file: str
    #: the map-entry messages the registered texts write out themselves (see :func:`_declared_map_entries`)
    declared_entries: frozenset[str] = frozenset()

    def message(self, message_indexes: Sequence[int]) -> Descriptor:
        """The message ``message_indexes`` names under either convention (:class:`SchemaError` when it names
        none, :class:`AmbiguousMessageIndexes` when the two conventions name different messages)."""
        path = list(message_indexes)
        if not path:
            raise SchemaError("empty Protobuf message-index path")
        file = self.pool.FindFileByName(self.main_file)
        java = _walk(file, path, self.declared_entries)
        python = _walk(file, path, None)
        if java is None and python is None:
            raise SchemaError(f"Protobuf message indexes {path} name no message")
        if java is not None and python is not None and java.full_name != python.full_name:
            raise AmbiguousMessageIndexes(
                f"Protobuf message indexes {path} name {java.full_name} as Java's serializer counts nested "
                f"messages (map entries not counted) and {python.full_name} as confluent-kafka-python's "
                "counts them (map entries counted)"
            )
        found = java if java is not None else python
        assert found is not None
        return found

    def message_class(self, message_indexes: Sequence[int]) -> type[Message]:
        return message_factory.GetMessageClass(self.message(message_indexes))


class AmbiguousMessageIndexes(SchemaError):
    """A message-index path naming one message as Java's serializer counts and another as
    confluent-kafka-python's counts (see the module's docstring)."""

    #: the side-table reason of the records written with this path
    reason = AMBIGUOUS_MESSAGE_INDEXES


def _walk(file: FileDescriptor, path: Sequence[int], counted: frozenset[str] | None) -> Descriptor | None:
    """The message ``path`` names in ``file`` (None: no message, or a map entry), every map-entry message
    counted among the nested messages (``counted`` None: Python's count) or only those the text declares
    (``counted``: their full names; Java's count)."""
    candidates = list(file.message_types_by_name.values())  # declaration order (no map entry at the top)
    found: Descriptor | None = None
    for index in path:
        if index < 0 or index >= len(candidates):
            return None
        found = candidates[index]
        if found.GetOptions().map_entry:
            return None
        nested = found.nested_types
        if counted is None:
            candidates = list(nested)
        else:
            candidates = [n for n in nested if not n.GetOptions().map_entry or n.full_name in counted]
    return found


_cache: dict[tuple, CompiledSchema] = {}
_cache_lock = threading.Lock()


def compile_schema(registry: SchemaRegistry, schema: RegisteredSchema) -> CompiledSchema:
    """``schema`` and its references compiled by protoc (cached per id and texts in this process).
    Raises :class:`SchemaError` with protoc's words when it does not compile, or when a reference is not in
    ``registry``."""
    files = _files(registry, schema)
    key = (schema.id, tuple(sorted(files.items())))
    with _cache_lock:
        compiled = _cache.get(key)
    if compiled is None:
        texts, declared = _declared_map_entries(files)
        pool, entries = _pool(_protoc(texts, schema.id), declared, schema.id)
        compiled = CompiledSchema(pool, MAIN_FILE, entries)
        with _cache_lock:
            compiled = _cache.setdefault(key, compiled)
    return compiled


def _files(registry: SchemaRegistry, schema: RegisteredSchema) -> dict[str, str]:
    """Every file protoc needs, by import path: the schema itself and its references, transitively."""
    files = {MAIN_FILE: schema.schema}
    pending = list(schema.references)
    while pending:
        ref = pending.pop()
        _check_import_path(ref.name, schema.id)
        if ref.name in files:
            continue
        target = registry.subject_version(ref.subject, ref.version)
        if target is None:
            raise SchemaError(
                f"schema id {schema.id}: reference {ref.name!r} names subject {ref.subject!r} version "
                f"{ref.version}, which the registry does not have"
            )
        files[ref.name] = target.schema
        pending.extend(target.references)
    return files


def _check_import_path(name: str, schema_id: int) -> None:
    path = PurePosixPath(name)
    if name == MAIN_FILE or path.is_absolute() or ".." in path.parts or not name or "\\" in name:
        raise SchemaError(f"schema id {schema_id}: reference name {name!r} is not a usable import path")


def _described(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The schema as a serialized ``FileDescriptorProto`` in base64, as confluent-kafka-python's serializer
    registers it (``_schema_to_str``) and Apicurio Registry keeps and serves it (Confluent's registry turns
    it into ``.proto`` text); None for ``.proto`` text, which is never valid base64 of one."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fdp if raw and (fdp.message_type or fdp.enum_type or fdp.name) else None


def _protoc(files: dict[str, str], schema_id: int) -> bytes:
    """The FileDescriptorSet protoc writes for ``files`` (imports included)."""
    with tempfile.TemporaryDirectory(prefix="logdoctor-protoc-") as tmp:
        described = descriptor_pb2.FileDescriptorSet()
        for name, text in files.items():
            fdp = _described(text)
            if fdp is not None:  # given to protoc as compiled already, under the name it is imported by
                fdp.name = name
                described.file.append(fdp)
                continue
            path = os.path.join(tmp, *PurePosixPath(name).parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "descriptor_set.pb")
        given: list[str] = []
        if described.file:
            given = [f"--descriptor_set_in={os.path.join(tmp, 'described.pb')}"]
            with open(os.path.join(tmp, "described.pb"), "wb") as f:
                f.write(described.SerializeToString())
        # grpc_tools.protoc's entry point adds its bundled include folder (google/protobuf/*.proto); run as
        # a process so that protoc's messages on stderr are captured whole
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                f"-I{tmp}",
                *given,
                f"--descriptor_set_out={out}",
                "--include_imports",
                MAIN_FILE,
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=_PROTOC_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            words = (done.stderr or done.stdout).strip().replace(tmp + os.sep, "")
            raise SchemaError(f"schema id {schema_id}: protoc: {words}")
        with open(out, "rb") as f:
            return f.read()


_MAP_ENTRY_OPTION = re.compile(r"\boption\s+map_entry\s*=\s*true\s*;")
_MESSAGE = re.compile(r"\bmessage\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def _declared_map_entries(files: dict[str, str]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """The texts protoc is given, and per file the names of the map-entry messages the text writes out.

    Confluent's registry keeps a schema registered as a descriptor (confluent-kafka-python's serializer
    registers a base64 ``FileDescriptorProto``; Java's registers its class's descriptor) as the text its
    ``ProtobufSchema`` prints, where each ``map`` field is ``repeated XEntry x`` and its entry a nested
    ``message XEntry { option map_entry = true; ... }`` (ProtobufSchemaTest's ``mapEntrySchemaString``).
    protoc refuses that option ("map_entry should not be set explicitly"): it is taken out here (the message
    enclosing it noted) and set back on the compiled descriptor (:func:`_pool`)."""
    texts: dict[str, str] = {}
    declared: dict[str, set[str]] = {}
    for name, text in files.items():
        found = list(_MAP_ENTRY_OPTION.finditer(text))
        if not found:
            texts[name] = text
            continue
        enclosing = [list(_MESSAGE.finditer(text, 0, option.start())) for option in found]
        texts[name] = _MAP_ENTRY_OPTION.sub("", text)
        declared[name] = {e[-1].group(1) for e in enclosing if e}
    return texts, declared


def _pool(
    descriptor_set: bytes, declared: dict[str, set[str]], schema_id: int
) -> tuple[descriptor_pool.DescriptorPool, frozenset[str]]:
    """The pool of the compiled files, with the map-entry messages the texts write out marked as map entries
    again (a message of that name with fields ``key`` = 1 and ``value`` = 2), and those messages' full
    names."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set)
    pool = descriptor_pool.DescriptorPool()
    entries: set[str] = set()
    for file in fds.file:  # protoc writes dependencies before the files importing them
        names = declared.get(file.name)
        if names:
            stack = [(f"{file.package}." if file.package else "", m) for m in file.message_type]
            while stack:
                prefix, message = stack.pop()
                fields = [(f.name, f.number) for f in message.field]
                if message.name in names and fields == [("key", 1), ("value", 2)]:
                    message.options.map_entry = True
                    entries.add(prefix + message.name)
                stack.extend((f"{prefix}{message.name}.", m) for m in message.nested_type)
        try:
            pool.AddSerializedFile(file.SerializeToString())
        except (TypeError, ValueError) as exc:  # a map entry protobuf does not take as one
            raise SchemaError(f"schema id {schema_id}: {file.name}: {exc}") from None
    return pool, frozenset(entries)
