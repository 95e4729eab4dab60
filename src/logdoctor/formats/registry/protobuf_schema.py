"""A registered Protobuf schema compiled by protoc: its message classes, and the message a message-index path
names.

The registered ``.proto`` text and the texts of its references (each reference's ``name`` is the path its
``import`` names; its subject and version give the text, transitively) are written into a private temporary
folder and compiled by the protoc that grpcio-tools ships (``python -m grpc_tools.protoc``, whose include path
holds ``google/protobuf/*.proto``: the well-known types need no reference) into a FileDescriptorSet
(``--include_imports``), which is loaded into a fresh
:class:`~google.protobuf.descriptor_pool.DescriptorPool`. Compiled pools are kept per schema (id and texts)
for the life of the process.

The message-index path is Confluent's (``ProtobufSchema.toMessageName`` and ``MessageIndexes`` in
confluentinc/schema-registry protobuf-provider): the first index is the position of a top-level message among
the file's messages in declaration order, each further index the position of a nested message among its
parent's nested messages. Map fields are not messages of the ``.proto`` text, so the map-entry messages protoc
synthesizes are not counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

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

    def message(self, message_indexes: Sequence[int]) -> Descriptor:
        """The message ``message_indexes`` names (:class:`SchemaError` when the path names none)."""
        if not message_indexes:
            raise SchemaError("empty Protobuf message-index path")
        file = self.pool.FindFileByName(self.main_file)
        candidates = list(file.message_types_by_name.values())  # declaration order
        found: Descriptor | None = None
        for index in message_indexes:
            if index < 0 or index >= len(candidates):
                raise SchemaError(f"Protobuf message indexes {list(message_indexes)} name no message")
            found = candidates[index]
            candidates = [n for n in found.nested_types if not n.GetOptions().map_entry]
        assert found is not None
        return found

    def message_class(self, message_indexes: Sequence[int]) -> type[Message]:
        return message_factory.GetMessageClass(self.message(message_indexes))


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
        compiled = CompiledSchema(_pool(_protoc(files, schema.id)), MAIN_FILE)
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


def _protoc(files: dict[str, str], schema_id: int) -> bytes:
    """The FileDescriptorSet protoc writes for ``files`` (imports included)."""
    with tempfile.TemporaryDirectory(prefix="logdoctor-protoc-") as tmp:
        for name, text in files.items():
            path = os.path.join(tmp, *PurePosixPath(name).parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "descriptor_set.pb")
        # grpc_tools.protoc's entry point adds its bundled include folder (google/protobuf/*.proto); run as
        # a process so that protoc's messages on stderr are captured whole
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"--descriptor_set_out={out}",
             "--include_imports", MAIN_FILE],
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


def _pool(descriptor_set: bytes) -> descriptor_pool.DescriptorPool:
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set)
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:  # protoc writes dependencies before the files importing them
        pool.AddSerializedFile(file.SerializeToString())
    return pool
