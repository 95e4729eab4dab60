"""The objects Aiven's tiered-storage-for-apache-kafka (v1.0.0) writes for one remote segment, bytes only.

Three objects per segment, ``<topic>-<topicId>/<partition>/<20-digit start offset>-<segment id>`` plus a
suffix (``ObjectKeyFactory.mainPath``): ``.rsm-manifest`` (JSON, :func:`parse_manifest`), ``.log`` (the
segment's bytes cut into chunks, each transformed on its own) and ``.indexes`` (the segment's indexes
one after the other, each one transformed chunk; the manifest gives their positions and sizes).
Every rule below is the plugin's, at tag v1.0.0 (``core/src/main/java/io/aiven/kafka/tieredstorage/``):

- ``manifest/SegmentManifestV1``: ``version`` "1", ``chunkIndex``, ``segmentIndexes``, ``compression``,
  ``encryption`` (absent when off), ``remoteLogSegmentMetadata``.
- ``manifest/index/FixedSizeChunkIndex`` (``type: fixed``): every chunk transforms to
  ``transformedChunkSize`` bytes but the last (``finalTransformedChunkSize``);
  ``VariableSizeChunkIndex`` (``type: variable``): ``transformedChunks`` is base64 of a zstd frame of
  ``serde/ChunkSizesBinaryCodec``: int32 count; count 1: int32 value; else int32 base, int8 bytes per
  value, count-1 values of that width (big-endian, minus base), then the last value as a full int32.
  ``AbstractChunkIndex``: chunk i holds original bytes ``[i*originalChunkSize, ...)`` (the last one the
  rest of ``originalFileSize``), at the sum of the transformed sizes before it.
- ``transform/``: compression first (``CompressionChunkEnumeration``: one zstd frame per chunk, with its
  content size), then encryption (``EncryptionChunkEnumeration``: the 12-byte IV, then AES-GCM
  ciphertext with its 16-byte tag; ``security/AesEncryptionProvider`` AES/GCM/NoPadding, 128-bit tag,
  the manifest's ``aad`` as additional data).
- ``security/RsaEncryptionProvider``: the segment's AES key is wrapped with
  ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` from BouncyCastle, whose MGF1 uses the OAEP digest
  (SHA3-512) too; ``EncryptedDataKey``: ``<key pair id>:<base64 of the wrapped key>``.
- Indexes (``RemoteStorageManager.transformIndex``): encrypted when encryption is on, never compressed.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.errors import CorruptRecordError, FormatError, UnsupportedError

Buffer = bytes | bytearray | memoryview

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateNumbers

__all__ = [
    "IV_SIZE",
    "MAX_CHUNKS",
    "STREAM_ABOVE",
    "SUPPORTED_VERSIONS",
    "Chunk",
    "ChunkStream",
    "SegmentManifest",
    "build_manifest",
    "decode_chunk_sizes",
    "detransform_chunk",
    "detransform_chunk_into",
    "encode_chunk_sizes",
    "parse_manifest",
    "unwrap_data_key",
]

IV_SIZE = 12  # SegmentEncryptionMetadataV1.IV_SIZE
TAG_SIZE = 16  # AesEncryptionProvider.GCM_TAG_LENGTH (bits) / 8
SUPPORTED_VERSIONS = ("1",)
INDEX_TYPES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
_MAX_CHUNK_SIZES = 10 * 1024 * 1024  # TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE
_JAVA_INT_MAX = 2**31 - 1  # AbstractChunkIndex: originalChunkSize, originalFileSize are ints
#: the most chunks a manifest may declare (a 2 GiB segment in chunks of 512 bytes): the chunk table is
#: built whole, and a hostile originalFileSize / originalChunkSize must not size it (issue 31)
MAX_CHUNKS = 1 << 22
#: a chunk of more original bytes than this is never detransformed whole: it is read as a
#: :class:`ChunkStream`, a window at a time (issue 48: a 58 KB frame declaring 1 GiB, whose size the manifest
#: agrees with, cost ``dump`` 3.1 GiB); chunks up to it (Aiven's chunk.size is a few MiB) are read whole
STREAM_ABOVE = 16 << 20


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: its bytes of the original segment and of the ``.log`` object."""

    index: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    version: str
    original_chunk_size: int
    original_file_size: int
    transformed_sizes: tuple[int, ...]  # of every chunk, in order
    indexes: dict[str, tuple[int, int]]  # index type -> (position, size) in the .indexes object
    compression: bool
    data_key_id: str | None  # the key pair id naming the RSA key (None: not encrypted)
    wrapped_data_key: bytes | None
    aad: bytes | None
    topic_id: str | None
    topic: str | None
    partition: int | None
    segment_id: str | None
    start_offset: int | None
    end_offset: int | None

    @property
    def encrypted(self) -> bool:
        return self.wrapped_data_key is not None

    @property
    def transformed_file_size(self) -> int:
        return sum(self.transformed_sizes)

    def chunks(self) -> list[Chunk]:
        out: list[Chunk] = []
        opos = tpos = 0
        n = len(self.transformed_sizes)
        for i, tsize in enumerate(self.transformed_sizes):
            osize = (
                self.original_file_size - (n - 1) * self.original_chunk_size
                if i == n - 1
                else (self.original_chunk_size)
            )
            out.append(Chunk(i, opos, osize, tpos, tsize))
            opos += osize
            tpos += tsize
        return out


def decode_chunk_sizes(data: bytes, *, source: str | None = None) -> list[int]:
    """``ChunkSizesBinaryCodec.decode``: the transformed size of each chunk."""
    try:
        (count,) = struct.unpack_from(">i", data, 0)
        if count < 0:
            raise CorruptRecordError("a chunk count >= 0", source=source, position=0, found=str(count))
        if count == 0:
            return []
        if count == 1:
            return [struct.unpack_from(">i", data, 4)[0]]
        base, width = struct.unpack_from(">ib", data, 4)
        if not 1 <= width <= 4:
            raise CorruptRecordError("1 to 4 bytes per value", source=source, position=8, found=str(width))
        pos = 9
        need = pos + (count - 1) * width + 4
        if len(data) < need:
            raise CorruptRecordError(f"{need} bytes of chunk sizes", source=source, found=f"{len(data)}")
        out = []
        for _ in range(count - 1):
            out.append(int.from_bytes(data[pos : pos + width], "big") + base)
            pos += width
        out.append(struct.unpack_from(">i", data, pos)[0])
        return out
    except struct.error as exc:
        raise CorruptRecordError("chunk sizes", source=source, found=f"{len(data)} bytes ({exc})") from None


def _frame_size(data: Buffer, *, source: str | None, what: str, limit: int | None) -> int:
    """The zstd frame's declared content size, checked before anything is decompressed (a 32 KB chunk
    declaring 1 GiB never costs 1 GiB: issue 31)."""
    import zstandard

    params = zstandard.get_frame_parameters(data)
    size = params.content_size
    if size == zstandard.CONTENTSIZE_UNKNOWN or size < 0:
        raise CorruptRecordError(f"a zstd frame with its content size ({what})", source=source)
    if limit is not None and size > limit:
        raise CorruptRecordError(
            f"a zstd frame of at most {limit} bytes ({what})", source=source, found=f"{size} declared"
        )
    return int(size)


def _zstd_frame(data: bytes, *, source: str | None, what: str, limit: int | None = None) -> bytes:
    import zstandard

    try:
        size = _frame_size(data, source=source, what=what, limit=limit)
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise CorruptRecordError(f"a zstd frame ({what})", source=source, found=str(exc)) from None


def _zstd_frame_into(data: Buffer, out: memoryview, *, source: str | None, what: str) -> int:
    """:func:`_zstd_frame` decompressed into ``out`` (no new buffer: fresh memory's page faults cost more
    than zstd itself), its declared size at most ``len(out)``; the bytes written."""
    import zstandard

    try:
        size = _frame_size(data, source=source, what=what, limit=len(out))
        done = 0
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while done < size:
                n = reader.readinto(out[done:size])
                if not n:
                    break
                done += n
            if done == size and reader.read(1):  # to the frame's end: its checksum, if any, verified
                raise CorruptRecordError(
                    f"a zstd frame of {size} bytes, as declared ({what})", source=source, found="more"
                )
        return done
    except zstandard.ZstdError as exc:
        raise CorruptRecordError(f"a zstd frame ({what})", source=source, found=str(exc)) from None


class _Fields:
    """Typed reads of a manifest's JSON: a value of the wrong type is a CorruptRecordError naming the field
    (``segmentIndexes``, ``remoteLogSegmentMetadata.startOffset``, ...), never an AttributeError."""

    def __init__(self, source: str | None) -> None:
        self.source = source

    def bad(self, field: str, expected: str, value: object) -> CorruptRecordError:
        return CorruptRecordError(
            f"{field}: {expected}", source=self.source, found=f"{type(value).__name__} {_short(value)}"
        )

    def mapping(self, value: object, field: str, *, optional: bool = True) -> dict:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.bad(field, "a JSON object", value)
        return value

    def integer(self, value: object, field: str, *, optional: bool = False) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise self.bad(field, "an integer", value)
        try:
            return int(value)  # Jackson reads a number given as a string too
        except ValueError:
            raise self.bad(field, "an integer", value) from None

    def text(self, value: object, field: str, *, optional: bool = True) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.bad(field, "a string", value)
        return value


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_manifest(data: bytes, *, source: str | None = None) -> SegmentManifest:
    """A ``.rsm-manifest`` (``SegmentManifestV1``). Raises UnsupportedError for a version other than
    "1" or an unknown chunk index type, CorruptRecordError for anything else that is not a manifest
    (a field of the wrong JSON type is named: ``segmentIndexes: a JSON object``)."""

    def bad(expected: str, found: object = None) -> CorruptRecordError:
        return CorruptRecordError(expected, source=source, found=None if found is None else str(found))

    f = _Fields(source)
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad("a JSON segment manifest", exc) from None
    if not isinstance(obj, dict):
        raise bad("a JSON object")
    version = str(obj.get("version"))
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedError(
            f"manifest version {' or '.join(SUPPORTED_VERSIONS)} (Aiven tiered storage v1.0.0)",
            source=source,
            found=f"version {_short(obj.get('version'))}",
        )
    try:
        if "chunkIndex" not in obj:
            raise bad("a segment manifest v1 with a chunkIndex")
        ci = f.mapping(obj["chunkIndex"], "chunkIndex", optional=False)
        kind = ci.get("type")
        ochunk = f.integer(ci.get("originalChunkSize"), "chunkIndex.originalChunkSize")
        osize = f.integer(ci.get("originalFileSize"), "chunkIndex.originalFileSize")
        assert ochunk is not None and osize is not None
        if not (0 < ochunk <= _JAVA_INT_MAX and 0 <= osize <= _JAVA_INT_MAX):
            raise bad("positive chunk sizes (Java ints)", f"{ochunk}, {osize}")
        count = -(-osize // ochunk)
        if count > MAX_CHUNKS:
            raise bad(f"at most {MAX_CHUNKS} chunks", f"{count} ({osize} bytes in chunks of {ochunk})")
        if kind == "fixed":
            fixed = f.integer(ci.get("transformedChunkSize"), "chunkIndex.transformedChunkSize")
            sizes = [fixed] * max(0, count - 1)
            if count:
                last = f.integer(ci.get("finalTransformedChunkSize"), "chunkIndex.finalTransformedChunkSize")
                sizes.append(last)
        elif kind == "variable":
            packed = f.text(ci.get("transformedChunks"), "chunkIndex.transformedChunks", optional=False)
            raw = base64.b64decode(packed or "", validate=True)
            sizes = decode_chunk_sizes(
                _zstd_frame(raw, source=source, what="transformedChunks", limit=_MAX_CHUNK_SIZES),
                source=source,
            )
            if len(sizes) != count:
                raise bad(f"{count} chunk sizes for {osize} bytes in chunks of {ochunk}", len(sizes))
        else:
            raise UnsupportedError("chunk index type fixed or variable", source=source, found=_short(kind))
        if any(s is None or s < 0 for s in sizes):
            raise bad("chunk sizes >= 0", sizes)
        indexes: dict[str, tuple[int, int]] = {}
        for name, entry in f.mapping(obj.get("segmentIndexes"), "segmentIndexes").items():
            if entry is not None:
                e = f.mapping(entry, f"segmentIndexes.{name}", optional=False)
                pos = f.integer(e.get("position"), f"segmentIndexes.{name}.position")
                size = f.integer(e.get("size"), f"segmentIndexes.{name}.size")
                assert pos is not None and size is not None
                if pos < 0 or size < 0:
                    raise bad(f"segmentIndexes.{name}: a position and a size >= 0", f"{pos}, {size}")
                indexes[name] = (pos, size)
        enc = obj.get("encryption")
        key_id = wrapped = aad = None
        if enc is not None:
            enc = f.mapping(enc, "encryption", optional=False)
            data_key = f.text(enc.get("dataKey"), "encryption.dataKey", optional=False) or ""
            key_id, _, b64 = data_key.partition(":")
            if not b64:
                raise bad("a data key '<key pair id>:<base64>'", _short(data_key))
            wrapped = base64.b64decode(b64, validate=True)
            aad_b64 = f.text(enc.get("aad"), "encryption.aad", optional=False) or ""
            aad = base64.b64decode(aad_b64, validate=True)
        compression = obj.get("compression", False)
        if not isinstance(compression, bool) and compression is not None:
            raise f.bad("compression", "true or false", compression)
        meta = f.mapping(obj.get("remoteLogSegmentMetadata"), "remoteLogSegmentMetadata")
        m = "remoteLogSegmentMetadata"
        seg_id = f.mapping(meta.get("remoteLogSegmentId"), f"{m}.remoteLogSegmentId")
        tip = f.mapping(seg_id.get("topicIdPartition"), f"{m}.remoteLogSegmentId.topicIdPartition")
        tp = f.mapping(tip.get("topicPartition"), f"{m}.remoteLogSegmentId.topicIdPartition.topicPartition")
        return SegmentManifest(
            version=version,
            original_chunk_size=ochunk,
            original_file_size=osize,
            transformed_sizes=tuple(s for s in sizes if s is not None),
            indexes=indexes,
            compression=bool(compression),
            data_key_id=key_id,
            wrapped_data_key=wrapped,
            aad=aad,
            topic_id=f.text(tip.get("topicId"), f"{m}.remoteLogSegmentId.topicIdPartition.topicId"),
            topic=f.text(tp.get("topic"), f"{m}.remoteLogSegmentId.topicIdPartition.topicPartition.topic"),
            partition=f.integer(
                tp.get("partition"),
                f"{m}.remoteLogSegmentId.topicIdPartition.topicPartition.partition",
                optional=True,
            ),
            segment_id=f.text(seg_id.get("id"), f"{m}.remoteLogSegmentId.id"),
            start_offset=f.integer(meta.get("startOffset"), f"{m}.startOffset", optional=True),
            end_offset=f.integer(meta.get("endOffset"), f"{m}.endOffset", optional=True),
        )
    except FormatError:
        raise
    except (ValueError, binascii.Error) as exc:
        raise bad("a segment manifest v1 (chunkIndex, segmentIndexes, ...)", repr(exc)) from None


def _mgf1_sha3_512(seed: bytes, length: int) -> bytes:
    import hashlib

    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _oaep_sha3_512_decode(em: bytes) -> bytes | None:
    """EME-OAEP decoding (RFC 8017 7.1.2 step 3) with SHA3-512 and MGF1(SHA3-512), empty label;
    None when the encoded message is not valid (a wrong key)."""
    import hashlib
    import hmac

    h_len = 64
    k = len(em)
    if k < 2 * h_len + 2:
        return None
    masked_seed, masked_db = em[1 : 1 + h_len], em[1 + h_len :]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1_sha3_512(masked_db, h_len), strict=True))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1_sha3_512(seed, k - h_len - 1), strict=True))
    ok = em[0] == 0 and hmac.compare_digest(db[:h_len], hashlib.sha3_512(b"").digest())
    rest = db[h_len:].lstrip(b"\x00")
    if not ok or not rest or rest[0] != 1:
        return None
    return rest[1:]


@functools.lru_cache(maxsize=8)
def _rsa_private_numbers(private_key_pem: bytes) -> RSAPrivateNumbers | str:
    """The private numbers of a PEM private key, or the key's type name when it is not an RSA key; raises
    ValueError or TypeError as ``load_pem_private_key`` does. Loaded once per key and process: loading
    checks the key (~50 ms), and the segments of a tiered log dir share a few key pairs."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = serialization.load_pem_private_key(private_key_pem, password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        return type(key).__name__
    return key.private_numbers()


def unwrap_data_key(manifest: SegmentManifest, private_key_pem: bytes, *, source: str | None = None) -> bytes:
    """The segment's AES key: RSA-OAEP with SHA3-512 and MGF1(SHA3-512) under the key pair's private key
    (BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding`` takes the MGF1 digest from the OAEP digest).
    OpenSSL through ``cryptography`` offers no SHA3 OAEP, so the RSA primitive is applied to the key's
    numbers and the OAEP encoding checked here (RFC 8017 7.1.2). Raises CorruptRecordError when the key
    is not an RSA private key or does not unwrap this data key."""
    from logdoctor.formats.modexp import mod_exp

    if manifest.wrapped_data_key is None:
        raise ValueError("the segment is not encrypted")
    try:
        numbers = _rsa_private_numbers(private_key_pem)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(
            "a PEM RSA private key (unencrypted)", source=source, found=str(exc)
        ) from None
    if isinstance(numbers, str):
        raise CorruptRecordError("an RSA private key", source=source, found=numbers)
    n = numbers.public_numbers.n
    k = (n.bit_length() + 7) // 8
    c = int.from_bytes(manifest.wrapped_data_key, "big")
    data_key = None
    if len(manifest.wrapped_data_key) == k and c < n:
        # CRT: m = c^d mod n (RFC 8017 5.1.2)
        m1 = mod_exp(c, numbers.dmp1, numbers.p)  # OpenSSL's: pow takes ~5 ms a key, one key a segment
        m2 = mod_exp(c, numbers.dmq1, numbers.q)
        h = (numbers.iqmp * (m1 - m2)) % numbers.p
        data_key = _oaep_sha3_512_decode((m2 + h * numbers.q).to_bytes(k, "big"))
    if data_key is None or len(data_key) not in (16, 24, 32):
        raise CorruptRecordError(
            f"the private key of key pair {manifest.data_key_id!r}",
            source=source,
            found="a key that does not unwrap the segment's data key (wrong key)",
        )
    return data_key


def _decrypt(
    data: Buffer, manifest: SegmentManifest, data_key: bytes | None, source: str | None, position: int | None
) -> bytes:
    """An encrypted chunk's plaintext (IV, AES-GCM with the manifest's AAD), as the library returns it."""
    return _decrypt_into(data, manifest, data_key, None, source, position) or b""


def _decrypt_into(
    data: Buffer,
    manifest: SegmentManifest,
    data_key: bytes | None,
    out: memoryview | None,
    source: str | None,
    position: int | None,
) -> bytes | None:
    """:func:`_decrypt` into ``out`` (``len(data) - IV_SIZE - TAG_SIZE`` bytes, a buffer the caller
    reuses): no copy of the ciphertext, no new buffer for the plaintext (fresh memory's page faults cost
    more than AES-GCM). On a bad tag the same error, ``out`` holding bytes that must not be used.
    ``out`` None: the plaintext as new bytes."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if data_key is None:
        raise ValueError("an encrypted segment needs its data key")
    if len(data) < IV_SIZE + TAG_SIZE:
        raise CorruptRecordError(
            f"an encrypted chunk (IV {IV_SIZE} + tag {TAG_SIZE} bytes at least)",
            source=source,
            position=position,
            found=f"{len(data)} bytes",
        )
    try:
        iv, aes = bytes(data[:IV_SIZE]), AESGCM(data_key)
        if out is None:
            return aes.decrypt(iv, data[IV_SIZE:], manifest.aad)
        aes.decrypt_into(iv, data[IV_SIZE:], manifest.aad, out)
        return None
    except InvalidTag:
        raise CorruptRecordError(
            "an AES-GCM chunk whose tag verifies", source=source, position=position, found="a bad tag"
        ) from None


def _check_size(expected_size: int | None, found: int, source: str | None, position: int | None) -> None:
    if expected_size is not None and found != expected_size:
        raise CorruptRecordError(
            f"a chunk of {expected_size} original bytes", source=source, position=position, found=f"{found}"
        )


def detransform_chunk(
    data: bytes,
    manifest: SegmentManifest,
    data_key: bytes | None,
    *,
    expected_size: int | None = None,
    compressed: bool | None = None,
    source: str | None = None,
    position: int | None = None,
) -> bytes:
    """One transformed chunk back to its original bytes: decrypt (IV, AES-GCM) then decompress (zstd).
    ``compressed`` defaults to the manifest's (indexes are never compressed: pass False)."""
    if manifest.encrypted:
        data = _decrypt(data, manifest, data_key, source, position)
    if manifest.compression if compressed is None else compressed:
        data = _zstd_frame(bytes(data), source=source, what="compressed chunk", limit=expected_size)
    _check_size(expected_size, len(data), source, position)
    return bytes(data)


def detransform_chunk_into(
    data: Buffer,
    manifest: SegmentManifest,
    data_key: bytes | None,
    out: memoryview,
    *,
    source: str | None = None,
    position: int | None = None,
    scratch: memoryview | None = None,
) -> None:
    """:func:`detransform_chunk` of a segment's chunk of ``len(out)`` original bytes, written into ``out``
    (a buffer the caller reuses): the same checks, the same errors. An encrypted chunk is decrypted into
    ``out`` (not compressed, of the expected size) or into ``scratch`` (compressed: a buffer of at least the
    chunk's stored size the caller reuses), else (neither fits) into a new buffer."""
    expected = len(out)
    if manifest.encrypted:
        plain = len(data) - IV_SIZE - TAG_SIZE
        if not manifest.compression and plain == expected:
            _decrypt_into(data, manifest, data_key, out, source, position)
            return
        if manifest.compression and scratch is not None and 0 <= plain <= len(scratch):
            _decrypt_into(data, manifest, data_key, scratch[:plain], source, position)
            data = scratch[:plain]
        else:
            data = _decrypt(data, manifest, data_key, source, position)
    if manifest.compression:
        found = _zstd_frame_into(data, out, source=source, what="compressed chunk")
    else:
        found = len(data)
        if found == expected:
            out[:] = data
    _check_size(expected, found, source, position)


class ChunkStream:
    """One transformed chunk's original bytes, forward only and never whole: :meth:`readinto` hands out the
    next bytes (zstd's streaming decompressor: what a read asks for, never the size the frame declares).

    What is held: the chunk's transformed bytes as stored (``data``, the object's bytes: a hostile frame
    cannot declare them larger than they are) and, for an encrypted chunk, its plaintext: AES-GCM checks its
    tag over the whole ciphertext before any plaintext may be used, so an encrypted chunk is decrypted whole
    (bounded by its stored size, never by what it declares) and only its decompression streams. The checks
    are :func:`detransform_chunk`'s: the frame's declared size is the chunk's original size (checked before
    anything is decompressed), the frame ends there (checked when the stream reaches its end), a frame that
    does not decompress is a CorruptRecordError."""

    def __init__(
        self,
        data: Buffer,
        manifest: SegmentManifest,
        data_key: bytes | None,
        *,
        expected_size: int,
        compressed: bool | None = None,
        source: str | None = None,
        position: int | None = None,
    ) -> None:
        import zstandard

        self.size = expected_size
        self.done = 0
        self._source, self._position = source, position
        if manifest.encrypted:
            data = _decrypt(data, manifest, data_key, source, position)
        self._reader: zstandard.ZstdDecompressionReader | None = None
        self._plain: memoryview | None = None
        if manifest.compression if compressed is None else compressed:
            try:
                declared = _frame_size(data, source=source, what="compressed chunk", limit=expected_size)
            except zstandard.ZstdError as exc:
                raise CorruptRecordError(
                    "a zstd frame (compressed chunk)", source=source, found=str(exc)
                ) from None
            _check_size(expected_size, declared, source, position)
            self._reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False)
        else:
            _check_size(expected_size, len(data), source, position)
            self._plain = memoryview(data)

    def readinto(self, out: memoryview) -> int:
        """The next ``len(out)`` bytes (fewer at the chunk's end: 0 there) written into ``out``."""
        import zstandard

        want = min(len(out), self.size - self.done)
        if want <= 0:
            return 0
        if self._plain is not None:
            out[:want] = self._plain[self.done : self.done + want]
            self.done += want
            return want
        assert self._reader is not None
        try:
            got = 0
            while got < want:
                n = self._reader.readinto(out[got:want])
                if not n:
                    raise CorruptRecordError(
                        f"a zstd frame of {self.size} bytes, as declared (compressed chunk)",
                        source=self._source,
                        position=self._position,
                        found=f"{self.done + got}",
                    )
                got += n
            self.done += got
            if self.done == self.size and self._reader.read(1):  # to the frame's end: its checksum verified
                raise CorruptRecordError(
                    f"a zstd frame of {self.size} bytes, as declared (compressed chunk)",
                    source=self._source,
                    found="more",
                )
            return got
        except zstandard.ZstdError as exc:
            raise CorruptRecordError(
                "a zstd frame (compressed chunk)", source=self._source, found=str(exc)
            ) from None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._plain = None


# --- writing (for generated test and benchmark data; checked against the plugin's own manifests) -----


def encode_chunk_sizes(values: list[int]) -> bytes:
    """``ChunkSizesBinaryCodec.encode``: the inverse of :func:`decode_chunk_sizes`."""
    if any(v < 0 for v in values):
        raise ValueError("chunk sizes cannot be negative")
    if not values:
        return struct.pack(">i", 0)
    if len(values) == 1:
        return struct.pack(">ii", 1, values[0])
    head = values[:-1]
    base = min(head)
    width = max(
        1 if v - base <= 0xFF else 2 if v - base <= 0xFFFF else 3 if v - base <= 0xFFFFFF else 4 for v in head
    )
    body = b"".join((v - base).to_bytes(width, "big") for v in head)
    return struct.pack(">iib", len(values), base, width) + body + struct.pack(">i", values[-1])


def build_manifest(
    *,
    original_chunk_size: int,
    original_file_size: int,
    transformed_sizes: list[int] | None,
    indexes: dict[str, tuple[int, int]],
    compression: bool,
    topic: str,
    topic_id: str,
    partition: int,
    segment_id: str,
    start_offset: int,
    end_offset: int,
    max_timestamp: int = -1,
) -> bytes:
    """A ``.rsm-manifest`` as ``SegmentManifestV1`` serializes it, without encryption; a fixed chunk
    index when ``transformed_sizes`` is None (no transform), else a variable one."""
    import zstandard

    count = -(-original_file_size // original_chunk_size)
    if transformed_sizes is None:
        last = original_file_size - (count - 1) * original_chunk_size if count else 0
        chunk_index: dict[str, object] = {
            "type": "fixed",
            "originalChunkSize": original_chunk_size,
            "originalFileSize": original_file_size,
            "transformedChunkSize": original_chunk_size,
            "finalTransformedChunkSize": last,
        }
    else:
        packed = zstandard.ZstdCompressor().compress(encode_chunk_sizes(transformed_sizes))
        chunk_index = {
            "type": "variable",
            "originalChunkSize": original_chunk_size,
            "originalFileSize": original_file_size,
            "transformedChunks": base64.b64encode(packed).decode("ascii"),
        }
    obj = {
        "version": "1",
        "chunkIndex": chunk_index,
        "segmentIndexes": {
            name: ({"position": indexes[name][0], "size": indexes[name][1]} if name in indexes else None)
            for name in INDEX_TYPES
        },
        "compression": compression,
        "remoteLogSegmentMetadata": {
            "remoteLogSegmentId": {
                "topicIdPartition": {
                    "topicId": topic_id,
                    "topicPartition": {"topic": topic, "partition": partition},
                },
                "id": segment_id,
            },
            "startOffset": start_offset,
            "endOffset": end_offset,
            "maxTimestampMs": max_timestamp,
            "brokerId": 0,
            "eventTimestampMs": 0,
            "segmentLeaderEpochs": {"0": start_offset},
        },
    }
    return json.dumps(obj, separators=(",", ":")).encode()
