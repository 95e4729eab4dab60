"""Compression codecs of Kafka's record formats, byte-compatible with the Java client.

``decompress`` reads what any real producer writes; ``compress`` writes what the Java
client writes. All work is done by C-backed libraries (zlib, cramjam, lz4, zstandard);
Python only walks the few framing headers. Any codec failure becomes a
``CorruptRecordError`` naming the source and position given by the caller.

Framing details (K: = path in apache/kafka):

* gzip: RFC 1952 members (K:clients/.../compress/GzipCompression.java, java.util.zip).
  Concatenated members are read like GZIPInputStream does; bytes after the last member
  that do not start a new member are ignored, as GZIPInputStream ignores them.
* snappy: the Java client writes xerial's SnappyOutputStream framing
  (K:clients/.../compress/SnappyCompression.java): the 16-byte header
  ``0x82 'SNAPPY' 0x00``, int32 version, int32 compatible version, then chunks of
  ``int32 BE length + raw snappy block``, each from at most 32 KiB of input. librdkafka
  and others write one raw snappy block; xerial's SnappyInputStream reads both, and so
  do we (detected by the header).
* lz4: Kafka's own frame writer and reader (K:clients/.../compress/Lz4BlockOutputStream.java,
  Lz4BlockInputStream.java, KIP-57). Magic 0 messages carry the "broken" frame-descriptor
  checksum (xxhash32 taken over the 4 magic bytes too); readers ignore the HC byte for
  magic 0 and check it for magic >= 1. Block checksums are verified; the content
  checksum is skipped, not verified, as the Java reader does.
* zstd: zstd frames as zstd-jni's streaming writer makes them (no content size);
  concatenated frames are read. Kafka allows zstd only with magic 2.

Decompression is bounded: one records section (or wrapper value) decompresses to at most
:data:`MAX_DECOMPRESSED` bytes, else ``UnsupportedError`` (a few compressed bytes can claim
gigabytes: a decompression bomb must not take the host's memory). Kafka itself never holds a whole
decompressed section: it reads one record at a time (DefaultRecordBatch.compressedIterator), each
record at most Integer.MAX_VALUE bytes; and where the broker does hold the records uncompressed (a
batch it rewrites without compression) they must fit one batch, whose size is an int32. So the
limit is the largest records section an uncompressed v2 batch can hold: far above any real batch
(producers cap a batch at max.message.bytes, 1 MiB by default), and a bound on memory. The C walker
(``_speedups``) decompresses lz4 to the same limit and leaves a frame past it to this module.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable, Iterator

import cramjam
import lz4.block
import lz4.frame
import zstandard

from logdoctor.errors import CorruptRecordError, UnsupportedError
from logdoctor.formats.record_types import Compression

Buffer = bytes | bytearray | memoryview

__all__ = [
    "LZ4_FRAME_MAGIC",
    "MAX_DECOMPRESSED",
    "XERIAL_HEADER",
    "compress",
    "decompress",
    "decompress_windows",
    "lz4_frame",
    "set_max_decompressed",
    "snappy_xerial",
    "xxh32",
]

MAX_DECOMPRESSED = 0x7FFFFFFF - 61
"""The most bytes one records section (v2) or wrapper value (v0/v1) may decompress to: the records
section of the largest uncompressed v2 batch (Integer.MAX_VALUE bytes, less its 61-byte header)."""


def set_max_decompressed(limit: int) -> int:
    """Set :data:`MAX_DECOMPRESSED` here and in the C walker; returns the previous limit (for tests)."""
    global MAX_DECOMPRESSED
    if limit < 0:
        raise ValueError("the decompression limit must be >= 0")
    from logdoctor.formats import native

    previous = MAX_DECOMPRESSED
    MAX_DECOMPRESSED = limit
    if native.speedups is not None:
        native.speedups.configure_limits(limit)
    return previous


# --- xxhash32 (only ever run over a frame descriptor of at most 15 bytes) -------------

_P1 = 0x9E3779B1
_P2 = 0x85EBCA77
_P3 = 0xC2B2AE3D
_P4 = 0x27D4EB2F
_P5 = 0x165667B1
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """xxHash32 of ``data`` (pure Python: meant for the few bytes of an lz4 frame descriptor)."""
    b = bytes(data)
    n = len(b)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            l1, l2, l3, l4 = struct.unpack_from("<4I", b, i)
            v1 = (_rotl((v1 + l1 * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + l2 * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + l3 * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + l4 * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", b, i)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + b[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- errors -----------------------------------------------------------------------------


def _corrupt(codec: Compression, what: str, source: str | None, position: int | None) -> CorruptRecordError:
    return CorruptRecordError(
        f"valid {codec.label} compressed data", source=source, position=position, found=what
    )


def _too_big(codec: Compression, limit: int, source: str | None, position: int | None) -> UnsupportedError:
    return UnsupportedError(
        f"{codec.label} compressed data that decompresses to at most {limit} bytes (logdoctor's limit: "
        "the records section of the largest uncompressed batch)",
        source=source,
        position=position,
        found="more (a decompression bomb?)",
    )


def _check_magic(codec: Compression, magic: int, source: str | None, position: int | None) -> None:
    if codec == Compression.ZSTD and magic < 2:
        raise UnsupportedError(
            "zstd only with magic 2 (KIP-110)", source=source, position=position, found=f"magic {magic}"
        )


# --- gzip ---------------------------------------------------------------------------------

# java.util.zip.GZIPOutputStream's header: no flags, mtime 0, xfl 0, OS 255 (JDK 16+).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_GZIP_LEVEL = 6  # Deflater.DEFAULT_COMPRESSION, GzipCompression's default level


def _gzip_compress(data: Buffer) -> bytes:
    c = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = c.compress(data) + c.flush()
    return b"".join((_GZIP_HEADER, body, struct.pack("<II", zlib.crc32(data), len(memoryview(data)) & _M32)))


# --- snappy -------------------------------------------------------------------------------

XERIAL_HEADER = b"\x82SNAPPY\x00"
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE = 1
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream.DEFAULT_BLOCK_SIZE
_BE_I32 = struct.Struct(">i")


def snappy_xerial(data: Buffer, block_size: int = _XERIAL_BLOCK) -> bytes:
    """What xerial's SnappyOutputStream (the Java client) writes for ``data``."""
    mv = memoryview(data).cast("B")
    parts = [XERIAL_HEADER, struct.pack(">ii", _XERIAL_VERSION, _XERIAL_COMPATIBLE)]
    for i in range(0, len(mv), block_size):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + block_size]))
        parts.append(_BE_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw(block: Buffer, source: str | None, position: int | None, budget: int) -> bytes:
    """One raw snappy block, refused (UnsupportedError) when it claims more than ``budget`` bytes."""
    try:
        # A snappy element expands at most 64/3 times: a larger claimed length is corrupt
        # (and checking it first keeps a flipped length varint from allocating gigabytes).
        claimed = cramjam.snappy.decompress_raw_len(block)
        if claimed > 22 * len(block) + 32:
            what = f"a snappy block of {len(block)} bytes claiming {claimed}"
            raise _corrupt(Compression.SNAPPY, what, source, position)
        if claimed > budget:
            raise _BudgetExceeded
        return bytes(cramjam.snappy.decompress_raw(block))
    except (CorruptRecordError, _BudgetExceeded):
        raise
    except Exception as e:  # cramjam raises its own DecompressionError
        raise _corrupt(Compression.SNAPPY, f"a bad snappy block ({e})", source, position) from None


class _BudgetExceeded(Exception):
    """A block would take the output past the limit."""


def _snappy_iter(data: memoryview, source: str | None, position: int | None, limit: int) -> Iterator[bytes]:
    """The decompressed xerial blocks one at a time (each at most 64/3 times its compressed size)."""
    n = len(data)
    if n < 16 or data[:8] != XERIAL_HEADER:
        yield _snappy_raw(data, source, position, limit)
        return
    total = 0
    pos = 16  # header + version + compatible version (their values are not checked, as xerial)
    while pos < n:
        if data[pos : pos + 8] == XERIAL_HEADER:  # a concatenated xerial stream: skip its header
            if n - pos < 16:
                raise _corrupt(Compression.SNAPPY, "a truncated xerial header", source, position)
            pos += 16
            continue
        if n - pos < 4:
            raise _corrupt(Compression.SNAPPY, f"a truncated xerial chunk length at {pos}", source, position)
        (length,) = _BE_I32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise _corrupt(
                Compression.SNAPPY, f"xerial chunk of {length} bytes at {pos - 4} of {n}", source, position
            )
        block = _snappy_raw(data[pos : pos + length], source, position, limit - total)
        total += len(block)
        yield block
        pos += length


# --- lz4 ----------------------------------------------------------------------------------

LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_MAGIC_BYTES = struct.pack("<I", LZ4_FRAME_MAGIC)
_LZ4_FLG = 0x60  # version 1, independent blocks, no checksums, no content size (FLG(false))
_LZ4_BD = 0x40  # 64 KiB maximum block size (BLOCKSIZE_64KB)
_LZ4_BLOCK = 64 * 1024
_LZ4_INCOMPRESSIBLE = 0x80000000
_LE_U32 = struct.Struct("<I")


def _lz4_hc(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def lz4_frame(data: Buffer, *, magic: int = 2) -> bytes:
    """What Kafka's Lz4BlockOutputStream writes for ``data`` (broken header checksum for magic 0)."""
    mv = memoryview(data).cast("B")
    header = _LZ4_MAGIC_BYTES + bytes((_LZ4_FLG, _LZ4_BD))
    hc = _lz4_hc(header) if magic == 0 else _lz4_hc(header[4:])
    parts = [header, bytes((hc,))]
    for i in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[i : i + _LZ4_BLOCK]
        block = lz4.block.compress(chunk, mode="default", store_size=False)
        if len(block) >= len(chunk):  # stored uncompressed when compression does not help
            parts.append(_LE_U32.pack(len(chunk) | _LZ4_INCOMPRESSIBLE))
            parts.append(bytes(chunk))
        else:
            parts.append(_LE_U32.pack(len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")  # end mark; no content checksum
    return b"".join(parts)


def _lz4_checked_block(bd: int, frame_block: memoryview, max_block: int) -> bytes:
    """Decode one block whose checksum flag is set, checking its xxhash32 in C.

    The block (size word, data, checksum) is put in a one-block standard frame for the
    lz4 library, which verifies the checksum while decompressing.
    """
    flg = 0x70  # version 1, independent blocks, block checksums
    descriptor = bytes((flg, bd))
    frame = b"".join((_LZ4_MAGIC_BYTES, descriptor, bytes((_lz4_hc(descriptor),)), frame_block, b"\0\0\0\0"))
    return lz4.frame.decompress(frame)


def _lz4_iter(
    data: memoryview, magic: int, source: str | None, position: int | None, limit: int
) -> Iterator[bytes]:
    """The decompressed blocks of Kafka's lz4 frame one at a time (each at most 4 MiB, its BD)."""

    def bad(what: str) -> CorruptRecordError:
        return _corrupt(Compression.LZ4, what, source, position)

    n = len(data)
    if n < 7:
        raise bad(f"a frame of {n} bytes (stream ended prematurely)")
    if _LE_U32.unpack_from(data, 0)[0] != LZ4_FRAME_MAGIC:
        raise bad(f"lz4 frame magic {bytes(data[:4]).hex()}")
    flg, bd = data[4], data[5]
    # FLG and BD as Lz4BlockOutputStream.FLG/BD validate them.
    if flg & 0x03:
        raise bad(f"FLG {flg:#04x} with reserved bits set")
    if not flg & 0x20:
        raise bad(f"FLG {flg:#04x}: dependent blocks are unsupported")
    if flg >> 6 != 1:
        raise bad(f"FLG {flg:#04x}: frame version {flg >> 6}")
    if bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
        raise bad(f"BD {bd:#04x}")
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    block_checksum = bool(flg & 0x10)
    content_checksum = bool(flg & 0x04)
    pos = 6
    if flg & 0x08:  # content size present: skipped
        pos += 8
    if pos >= n:
        raise bad("a truncated frame descriptor")
    # Old clients wrote an incorrect HC (over the magic bytes too): ignored for magic 0.
    if magic != 0:
        expected = _lz4_hc(bytes(data[4:pos]))
        if data[pos] != expected:
            raise bad(f"frame descriptor checksum {data[pos]:#04x}, computed {expected:#04x}")
    pos += 1
    total = 0  # each block is at most max_block (4 MiB): the output stops within a block of the limit
    while True:
        if n - pos < 4:
            raise bad(f"a block size at {pos} (stream ended prematurely)")
        (word,) = _LE_U32.unpack_from(data, pos)
        size = word & ~_LZ4_INCOMPRESSIBLE
        if size == 0:  # end mark
            if content_checksum and n - pos - 4 < 4:
                raise bad("a content checksum after the end mark")
            break
        if size > max_block:
            raise bad(f"block size {size} exceeding the max {max_block}")
        end = pos + 4 + size + (4 if block_checksum else 0)
        if end > n:
            raise bad(f"a block of {size} bytes at {pos} (stream ended prematurely)")
        try:
            if block_checksum:
                block = _lz4_checked_block(bd, data[pos:end], max_block)
            elif word & _LZ4_INCOMPRESSIBLE:
                block = bytes(data[pos + 4 : end])
            else:
                block = lz4.block.decompress(data[pos + 4 : end], uncompressed_size=max_block)
        except (lz4.block.LZ4BlockError, RuntimeError) as e:
            raise bad(f"a bad block at {pos} ({e})") from None
        total += len(block)
        if total > limit:
            raise _too_big(Compression.LZ4, limit, source, position)
        yield block
        pos = end


# --- zstd ---------------------------------------------------------------------------------

_ZSTD_LEVEL = 3  # CompressionType.ZSTD.defaultLevel()
# A ZstdDecompressor / ZstdCompressor holds one zstd context that every decompressobj() / compressobj()
# made from it uses, and is not thread-safe (python-zstandard's docs): one shared by the threads that
# decode at once (a scan's early walks beside its main thread) turned good batches into "zstd
# decompressor error" / "a truncated zstd frame" and could crash the process. One per thread, made on
# first use; a generator that can be suspended between two reads (_zstd_windows) makes its own.
_zstd_local = threading.local()


def _zstd_dctx() -> zstandard.ZstdDecompressor:
    d = getattr(_zstd_local, "dctx", None)
    if d is None:
        d = _zstd_local.dctx = zstandard.ZstdDecompressor()
    return d


def _zstd_compress(data: Buffer) -> bytes:
    # A streaming compressor does not know the size up front: like zstd-jni's
    # ZstdOutputStream, the frame header has no content size.
    cctx = getattr(_zstd_local, "cctx", None)
    if cctx is None:
        cctx = _zstd_local.cctx = zstandard.ZstdCompressor(
            level=_ZSTD_LEVEL, write_content_size=False, write_checksum=False
        )
    c = cctx.compressobj()
    return c.compress(data) + c.flush()


# A zstd block (3-byte header, at least 1 byte) decodes to at most 128 KiB (Block_Maximum_Size):
# n compressed bytes give at most n * 32768 bytes. Input is fed in steps that cannot produce more
# than the bytes left under the limit (one step when the whole input cannot).
_ZSTD_MAX_EXPANSION = 1 << 15
_ZSTD_MIN_STEP = 64  # at most 2 MiB of output past the limit


# --- public -------------------------------------------------------------------------------


def _byte_view(data: Buffer) -> memoryview:
    return memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data


def decompress(
    codec: Compression,
    data: Buffer,
    *,
    magic: int = 2,
    source: str | None = None,
    position: int | None = None,
) -> bytes:
    """Decompress a batch's records section (v2) or a wrapper message's value (v0/v1).

    ``magic`` selects the lz4 header-checksum rule and rejects zstd below magic 2.
    ``source``/``position`` name where the compressed bytes are, for errors. More than
    :data:`MAX_DECOMPRESSED` bytes of output raise UnsupportedError (the output stops near it).
    """
    mv = _byte_view(data)
    if codec == Compression.NONE:
        return bytes(mv)
    # the windowed readers with one window past the limit (the output is whole or refused) and, for zstd,
    # this thread's shared context: the generator is run to its end here, never suspended
    limit = MAX_DECOMPRESSED
    pieces = list(_windows(codec, mv, magic, source, position, limit, limit + 1, _zstd_dctx))
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


#: the output window of :func:`decompress_windows`; the C walker's lz4 frames stop at it too
#: (``_speedups.configure_window``, the same 8 MiB by default: tests/formats/test_lz4_window.py)
WINDOW = 8 << 20


def _gzip_windows(
    data: memoryview, source: str | None, position: int | None, limit: int, window: int
) -> Iterator[bytes]:
    total = 0
    rest: Buffer = data
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            try:
                # at most one byte past the limit: a longer output is refused without being made
                piece = d.decompress(rest, min(window, limit - total + 1))
            except zlib.error as e:
                raise _corrupt(Compression.GZIP, str(e), source, position) from None
            total += len(piece)
            if total > limit:
                raise _too_big(Compression.GZIP, limit, source, position)
            if piece:
                yield piece
            rest = d.unconsumed_tail
            if d.eof or (not piece and not rest):
                break
        if not d.eof:  # (the output was not cut by the limit: the input ran out)
            raise _corrupt(Compression.GZIP, "a truncated gzip member", source, position)
        rest = d.unused_data
        if len(rest) < 2 or rest[:2] != b"\x1f\x8b":  # as GZIPInputStream: another member or the end
            return


def _zstd_windows(
    data: memoryview,
    source: str | None,
    position: int | None,
    limit: int,
    window: int,
    dctx: zstandard.ZstdDecompressor,
) -> Iterator[bytes]:
    total = 0
    rest: memoryview = data
    while True:
        d = dctx.decompressobj()
        n = len(rest)
        pos = 0
        pending: list[bytes] = []
        size = 0
        try:
            while pos < n and not d.eof:
                # one step makes at most step * 32768 bytes (see _ZSTD_MAX_EXPANSION): about a window, and
                # no more than the bytes left under the limit
                step = max(_ZSTD_MIN_STEP, min(window, limit - total) // _ZSTD_MAX_EXPANSION)
                chunk = rest[pos : pos + step]
                piece = d.decompress(chunk)
                pos += len(chunk)
                total += len(piece)
                if total > limit:
                    raise _too_big(Compression.ZSTD, limit, source, position)
                pending.append(piece)
                size += len(piece)
                if size >= window:
                    yield b"".join(pending)
                    pending, size = [], 0
        except zstandard.ZstdError as e:
            raise _corrupt(Compression.ZSTD, str(e), source, position) from None
        if pending and size:
            yield b"".join(pending)
        if not d.eof:
            raise _corrupt(Compression.ZSTD, "a truncated zstd frame", source, position)
        rest = rest[pos - len(d.unused_data) :]
        if not rest:
            return


def decompress_windows(
    codec: Compression,
    data: Buffer,
    *,
    magic: int = 2,
    source: str | None = None,
    position: int | None = None,
    window: int = WINDOW,
) -> Iterator[bytes]:
    """:func:`decompress` a window at a time: gzip and zstd yield pieces of about ``window`` bytes as
    they are made (a decompression bomb is never whole in memory; the limit still applies to the
    total), snappy (xerial blocks) and lz4 (frame blocks) likewise, block by block; none whole.
    Errors as :func:`decompress`, raised when the bad window is reached."""
    mv = _byte_view(data)
    if codec == Compression.NONE:
        return iter((bytes(mv),))
    # a zstd context of its own: this generator can be suspended
    return _windows(codec, mv, magic, source, position, MAX_DECOMPRESSED, window, zstandard.ZstdDecompressor)


def _windows(
    codec: Compression,
    mv: memoryview,
    magic: int,
    source: str | None,
    position: int | None,
    limit: int,
    window: int,
    zstd_dctx: Callable[[], zstandard.ZstdDecompressor],
) -> Iterator[bytes]:
    if codec == Compression.GZIP:
        return _gzip_windows(mv, source, position, limit, window)
    if codec == Compression.ZSTD:
        _check_magic(codec, magic, source, position)
        return _zstd_windows(mv, source, position, limit, window, zstd_dctx())
    if codec == Compression.SNAPPY:
        blocks = _snappy_iter(mv, source, position, limit)
    elif codec == Compression.LZ4:
        blocks = _lz4_iter(mv, magic, source, position, limit)
    else:
        raise UnsupportedError("a codec id 0-4", source=source, position=position, found=repr(codec))
    return _grouped(blocks, window, codec, limit, source, position)


def _grouped(
    blocks: Iterator[bytes],
    window: int,
    codec: Compression,
    limit: int,
    source: str | None,
    position: int | None,
) -> Iterator[bytes]:
    """Blocks (snappy's <= 64/3 x 32 KiB, lz4's <= 4 MiB) joined into pieces of about ``window`` bytes."""
    pending: list[bytes] = []
    size = 0
    try:
        for block in blocks:
            pending.append(block)
            size += len(block)
            if size >= window:
                yield pending[0] if len(pending) == 1 else b"".join(pending)
                pending, size = [], 0
    except _BudgetExceeded:
        raise _too_big(codec, limit, source, position) from None
    if size:
        yield pending[0] if len(pending) == 1 else b"".join(pending)


def compress(codec: Compression, data: Buffer, *, magic: int = 2) -> bytes:
    """Compress ``data`` as the Java client does for ``codec`` (with its default level)."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return _gzip_compress(data)
    if codec == Compression.SNAPPY:
        return snappy_xerial(data)
    if codec == Compression.LZ4:
        return lz4_frame(data, magic=magic)
    if codec == Compression.ZSTD:
        _check_magic(codec, magic, None, None)
        return _zstd_compress(data)
    raise UnsupportedError("a codec id 0-4", found=repr(codec))
