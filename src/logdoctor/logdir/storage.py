"""Where a log dir's files are: the local file system, or any file system pyarrow opens by URI.

A *location* is a local path, a ``file://`` URI (the same thing) or a URI whose scheme pyarrow's file
systems understand: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``hdfs://namenode:8020/path``,
``abfs://container@account.dfs.core.windows.net/path``. :meth:`Storage.of` resolves it once: a
:class:`Storage` value names the file system (scheme and authority, plus the options below) and keeps
no connection, so it pickles to Spark executors, which build the pyarrow file system on first use
(once per process and file system, :func:`pyarrow.fs.FileSystem.from_uri`).

Local files keep the fast paths of :mod:`logdoctor.logdir.files` (``os`` listings, ``pread``, read-only
``mmap``). Remote folders are listed with the file system's own listing (``FileSelector``: names, sizes
and kinds in one call per folder), small files are read whole and segments by byte ranges
(``open_input_file(...).read_at``).

Credentials and endpoints come from the places each ecosystem reads them, never from logdoctor's
command line: for S3 the standard ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN`` / ``AWS_PROFILE`` / ``AWS_DEFAULT_REGION`` variables, config files and instance
roles of the AWS SDK, and ``AWS_ENDPOINT_URL`` for an S3-compatible store (pyarrow's ``from_uri``
reads it, pyarrow 15 and later); the data sources' options ``s3.region`` and ``s3.endpoint`` (see
:data:`OPTIONS`) override the region and the endpoint. A URI may also carry pyarrow's own query
parameters (``s3://bucket/path?region=eu-west-1``).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

__all__ = [
    "LOCAL",
    "OPTIONS",
    "Entry",
    "RangeReader",
    "Storage",
    "is_uri",
    "local_path",
    "storage_options",
]

#: Data-source options that configure a file system: option name -> (scheme, pyarrow URI query key).
OPTIONS: dict[str, tuple[str, str]] = {
    "s3.region": ("s3", "region"),
    "s3.endpoint": ("s3", "endpoint_override"),
}


def is_uri(location: str | os.PathLike[str]) -> bool:
    """A URI of a file system other than the local one (``s3://``, ``hdfs://``, ``gs://``, ``abfs://``...)."""
    text = os.fspath(location)
    if "://" not in text:
        return False
    scheme = urlsplit(text).scheme.lower()
    return len(scheme) > 1 and scheme != "file"  # "C:" is a drive, not a scheme


def local_path(location: str | os.PathLike[str]) -> str:
    """A local path for a local path or a ``file://`` URI (as is for anything else)."""
    text = os.fspath(location)
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.scheme == "file":
            return unquote(parts.path) or "/"
    return text


def storage_options(
    options: Mapping[str, Any] | Iterable[tuple[str, str]] | None,
) -> tuple[tuple[str, str], ...]:
    """The file-system options (:data:`OPTIONS`) among data-source ``options`` (names case-insensitive;
    a mapping, or the pairs :attr:`logdoctor.logdir.read_options.ReadOptions.storage` holds)."""
    out: dict[str, str] = {}
    pairs = options.items() if isinstance(options, Mapping) else (options or ())
    for key, value in pairs:
        name = str(key).strip().lower()
        if name in OPTIONS and value is not None and str(value).strip():
            out[name] = str(value).strip()
    return tuple(sorted(out.items()))


# --- directory entries -------------------------------------------------------------------------------


class Entry:
    """One name in a folder listing: ``name``, ``is_dir()`` and ``size`` (bytes of a file).

    Local entries stat lazily (``os.DirEntry``, symlinks followed, as ``os.stat`` does); remote ones
    carry what the file system's listing said.
    """

    __slots__ = ("_dir", "_entry", "_size", "name")

    def __init__(
        self, name: str, is_dir: bool | None, size: int | None, entry: os.DirEntry[str] | None = None
    ) -> None:
        self.name = name
        self._dir = is_dir
        self._size = size
        self._entry = entry

    def is_dir(self) -> bool:
        if self._dir is None:
            try:
                self._dir = bool(self._entry is not None and self._entry.is_dir())
            except OSError:
                self._dir = False
        return self._dir

    def is_symlink(self) -> bool:
        """A symlink (local only: object stores and HDFS listings have none)."""
        try:
            return self._entry is not None and self._entry.is_symlink()
        except OSError:
            return False

    def is_regular_file(self) -> bool:
        """A regular file, not through a symlink (locally: never a symlink, FIFO, socket or device)."""
        if self._entry is None:
            return self._dir is False
        try:
            return self._entry.is_file(follow_symlinks=False)
        except OSError:
            return False

    @property
    def size(self) -> int:
        """The file's size in bytes (OSError when a local file cannot be stat'ed)."""
        if self._size is None:
            if self._entry is None:
                return 0
            self._size = self._entry.stat().st_size
        return self._size

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, dir={self._dir}, size={self._size})"


class RangeReader:
    """An open file read by position: ``read_at(offset, length)``; ``size`` in bytes. A context manager."""

    def __init__(self, handle: Any, size: int, local: bool) -> None:
        self._handle = handle
        self.size = size
        self._local = local

    def read_at(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        if self._local:
            return os.pread(self._handle, length, offset)
        return self._handle.read_at(length, offset)

    def read_into(self, offset: int, out: memoryview) -> int:
        """:meth:`read_at` of ``len(out)`` bytes into ``out`` (a buffer the caller reuses; a local file's
        bytes land there straight from the page cache); the bytes read (fewer at the end of the file).
        Safe from several threads at once."""
        if not self._local:
            data = self._handle.read_at(max(0, min(len(out), self.size - offset)), offset)
            out[: len(data)] = data
            return len(data)
        done = 0
        while done < len(out):
            n = os.preadv(self._handle, [out[done:]], offset + done)
            if n == 0:
                break
            done += n
        return done

    def close(self) -> None:
        if self._handle is None:
            return
        if self._local:
            os.close(self._handle)
        else:
            self._handle.close()
        self._handle = None

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- file systems, one per process and URI authority ------------------------------------------------

_FILESYSTEMS: dict[str, tuple[Any, str]] = {}
_LOCK = threading.Lock()


def _from_uri(fs_uri: str) -> tuple[Any, str]:
    with _LOCK:
        found = _FILESYSTEMS.get(fs_uri)
    if found is None:
        from pyarrow import fs

        found = fs.FileSystem.from_uri(fs_uri)
        with _LOCK:
            _FILESYSTEMS[fs_uri] = found
    return found


def _authority(location: str) -> tuple[str, str, str]:
    """(``scheme://netloc``, the path after it, the query) of a URI."""
    parts = urlsplit(location)
    return f"{parts.scheme}://{parts.netloc}", parts.path, parts.query


@dataclass(frozen=True, slots=True)
class Storage:
    """A file system: the local one (``fs_uri == ""``), or the one pyarrow builds from ``fs_uri``.

    ``fs_uri`` is the URI's ``scheme://authority`` with the file-system query (region, endpoint...);
    a location ``uri_prefix + tail`` is the path ``path_prefix + tail`` in that file system (for S3
    ``s3://bucket/a/b`` is ``bucket/a/b``, for HDFS ``hdfs://nn:8020/a/b`` is ``/a/b``). Plain
    strings only: it pickles, and compares equal for every location of one bucket or cluster.
    """

    fs_uri: str = ""
    uri_prefix: str = ""
    path_prefix: str = ""

    # --- resolving ------------------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        location: str | os.PathLike[str],
        options: Mapping[str, Any] | Iterable[tuple[str, str]] | None = None,
    ) -> tuple[Storage, str]:
        """The storage of ``location`` and the location as the storage's methods take it.

        Local paths and ``file://`` URIs give :data:`LOCAL` and a local path. A URI's query (pyarrow's
        file-system parameters) is kept in the storage and dropped from the location; ``options`` are
        data-source options (:data:`OPTIONS`, e.g. ``s3.region``) that override the query's values.
        Raises ``ValueError`` (an unknown scheme, a bad query) or ``OSError`` from pyarrow.
        """
        text = os.fspath(location)
        if not is_uri(text):
            return LOCAL, local_path(text)
        base, path, query = _authority(text)
        scheme = base.split("://", 1)[0].lower()
        params = dict(parse_qsl(query, keep_blank_values=True))
        for name, value in storage_options(options):
            opt_scheme, key = OPTIONS[name]
            if opt_scheme == scheme:
                params[key] = value
        fs_uri = base + ("?" + urlencode(sorted(params.items())) if params else "")
        filesystem, root = _from_uri(fs_uri)
        if type(filesystem).__name__ == "S3FileSystem" and "region" not in params:
            # the bucket's region, looked up once here: executors then need no lookup of their own
            params["region"] = filesystem.region
            pinned = base + "?" + urlencode(sorted(params.items()))
            with _LOCK:
                _FILESYSTEMS.setdefault(pinned, (filesystem, root))
            fs_uri = pinned
        loc = base + (path.rstrip("/") if path not in ("", "/") else "")
        return cls(fs_uri, base, root.rstrip("/")), loc

    @property
    def is_local(self) -> bool:
        return not self.fs_uri

    @property
    def filesystem(self) -> Any:
        """The pyarrow file system (built once per process; LocalFileSystem for local storage)."""
        if self.is_local:
            from pyarrow import fs

            return fs.LocalFileSystem()
        return _from_uri(self.fs_uri)[0]

    def path(self, location: str) -> str:
        """The path of ``location`` in :attr:`filesystem`."""
        if self.is_local:
            return os.path.abspath(location)
        if not location.startswith(self.uri_prefix):
            raise ValueError(f"{location} is not on {self.uri_prefix}")
        return self.path_prefix + location[len(self.uri_prefix) :]

    # --- names ----------------------------------------------------------------------------------

    def join(self, location: str, *names: str) -> str:
        if self.is_local:
            return os.path.join(location, *names)
        return "/".join([location.rstrip("/"), *names])

    def basename(self, location: str) -> str:
        if self.is_local:
            return os.path.basename(location.rstrip(os.sep))
        return posixpath.basename(location[len(self.uri_prefix) :].rstrip("/"))

    def dirname(self, location: str) -> str:
        """The folder holding ``location`` (the storage's root has none: itself)."""
        if self.is_local:
            return os.path.dirname(os.path.abspath(location))
        tail = location[len(self.uri_prefix) :].rstrip("/")
        parent = posixpath.dirname(tail)
        return self.uri_prefix + (parent if parent not in ("", "/") else "")

    def same(self, a: str, b: str) -> bool:
        """Whether two locations name the same file or folder."""
        if self.is_local:
            return os.path.abspath(a) == os.path.abspath(b)
        return a.rstrip("/") == b.rstrip("/")

    # --- metadata -------------------------------------------------------------------------------

    def info(self, location: str) -> Entry | None:
        """The entry of ``location`` itself (None when it does not exist)."""
        if self.is_local:
            try:
                st = os.stat(location)
            except FileNotFoundError:
                return None
            import stat

            is_dir = stat.S_ISDIR(st.st_mode)
            return Entry(self.basename(location), is_dir, 0 if is_dir else st.st_size)
        from pyarrow import fs

        info = self.filesystem.get_file_info(self.path(location))
        return None if info.type == fs.FileType.NotFound else _entry(self.basename(location), info)

    def list(self, location: str) -> list[Entry]:
        """The entries of the folder ``location`` (OSError when it cannot be listed or is none)."""
        if self.is_local:
            with os.scandir(location) as it:
                return [Entry(e.name, None, None, e) for e in it]
        from pyarrow import fs

        infos = self.filesystem.get_file_info(fs.FileSelector(self.path(location), recursive=False))
        return [_entry(i.base_name, i) for i in infos if i.type != fs.FileType.NotFound]

    def glob(self, pattern: str) -> list[str]:
        """Locations matching ``pattern`` (``*``, ``?``, ``[...]`` in any part; names starting with a
        dot only where the pattern's part does), sorted. Local patterns use :func:`glob.glob`."""
        if self.is_local:
            import glob

            return sorted(glob.glob(pattern))
        tail = pattern[len(self.uri_prefix) :].strip("/")
        parts = [p for p in tail.split("/") if p]
        found = [self.uri_prefix]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt: list[str] = []
            for folder in found:
                if not _has_magic(part):
                    child = self.join(folder, part)
                    entry = self.info(child)
                    if entry is not None and (last or entry.is_dir()):
                        nxt.append(child)
                    continue
                try:
                    entries = self.list(folder)
                except OSError:
                    continue
                for e in sorted(entries, key=lambda e: e.name):
                    if e.name.startswith(".") and not part.startswith("."):
                        continue
                    if fnmatch.fnmatchcase(e.name, part) and (last or e.is_dir()):
                        nxt.append(self.join(folder, e.name))
            found = nxt
        return sorted(found) if parts else []

    # --- reading --------------------------------------------------------------------------------

    def read(self, location: str) -> bytes:
        """The whole file (for small files: indexes, checkpoints, properties)."""
        if self.is_local:
            from logdoctor.logdir.files import read_file

            return read_file(location)
        with self.filesystem.open_input_file(self.path(location)) as fh:
            return fh.read()

    def open(self, location: str) -> RangeReader:
        """The file, open for reads at any position (one request per read for a remote file)."""
        if self.is_local:
            from logdoctor.logdir.files import open_regular

            fd = open_regular(location)  # no symlink followed, no FIFO opened
            try:
                size = os.fstat(fd).st_size
            except OSError:
                os.close(fd)
                raise
            return RangeReader(fd, size, True)
        handle = self.filesystem.open_input_file(self.path(location))
        return RangeReader(handle, handle.size(), False)

    def read_range(self, location: str, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the end of the file)."""
        if self.is_local:
            from logdoctor.logdir.files import read_range

            return read_range(location, offset, length)
        with self.open(location) as reader:
            return reader.read_at(offset, length)

    def map(self, location: str) -> memoryview:
        """The whole file as a buffer: a read-only mmap for a local file (pages load when touched), the
        bytes read for a remote one (use :meth:`open` and ranged reads for large remote files)."""
        if self.is_local:
            from logdoctor.logdir.files import map_file

            return map_file(location)
        return memoryview(self.read(location))

    def walk_files(self, location: str) -> Iterator[tuple[str, int]]:
        """(location, size) of every file at or under ``location``, recursively."""
        entry = self.info(location)
        if entry is None:
            return
        if not entry.is_dir():
            yield location, entry.size
            return
        for e in sorted(self.list(location), key=lambda e: e.name):
            yield from self.walk_files(self.join(location, e.name))

    def __str__(self) -> str:
        return "local" if self.is_local else self.uri_prefix


def _entry(name: str, info: Any) -> Entry:
    """The entry of a pyarrow ``FileInfo`` that exists."""
    from pyarrow import fs

    is_dir = info.type == fs.FileType.Directory
    return Entry(name, is_dir, 0 if is_dir else int(info.size or 0))


def _has_magic(part: str) -> bool:
    return any(c in part for c in "*?[")


#: The local file system.
LOCAL = Storage()
