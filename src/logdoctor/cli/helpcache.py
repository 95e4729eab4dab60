"""``logdoctor --help`` and ``logdoctor COMMAND --help`` at the interpreter's own start-up cost.

typer renders help through click, pydantic and rich: ~0.1-0.2 s of imports and layout before the first
line, 11-13x ``python -c pass`` (BENCHMARKS.md, "CLI start"; issue 49). The text it prints depends only
on the code that rendered it, the line and the terminal: its width (``COLUMNS``, else the size of the
terminal on stdin, stdout or stderr, as rich asks), whether stdout is one, the colour and terminal
variables rich and typer read, and the output encoding. So the first run of each such call renders it with
typer as always, and keeps what typer wrote (:func:`record`) in a file of the user's cache folder
(``$XDG_CACHE_HOME/logdoctor/help``, else ``~/.cache/logdoctor/help``) under a key of all of these, with
the size and modification time of every module file the rendering had loaded (typer, click, rich and
logdoctor's own). A later identical call (:func:`replay`) writes that text when the key is the same and
every one of those files is unchanged (a stat each, ~0.5 ms), importing nothing but ``os``, ``sys`` and
``zlib``: any edit of a command's help, an upgrade of typer or rich, another width or terminal renders
again. Anything unexpected (no cache folder, a torn or foreign file, an unwritable home) falls back to the
typer rendering, and a failure to write the cache is never an error of the run.

The folder is the user's own and private, and nothing in it but the cache's own files is ever written or
removed: it is created with mode 0700 and used only when it is a real folder (a symlink is refused, not
followed), owned by the user, with no access for group or others; every file is opened relative to that
folder's descriptor, with ``O_NOFOLLOW`` (the temporary file also ``O_EXCL``: a name already there, a
planted symlink included, is never opened for writing); a text is replaced and the oldest pruned only
when the name is one the cache gives (eight hex digits, ``.txt``) and the file a regular file of the user
that starts with the cache's header. A folder of the user's notes is never touched. A folder of the user's
that others may open and that holds nothing but the cache's own names (as earlier versions made it, 0755)
is made 0700 by the next call that writes a text.

``LOGDOCTOR_HELP_CACHE=0`` turns it off. ``tests/cli/test_help_cache.py`` compares the replayed text with
typer's for every command, widths and terminals.
"""

from __future__ import annotations

import os
import stat
import sys

__all__ = ["HELP_CACHE_ENV", "record", "replay"]
# which calls are kept (``--help`` of the app or of one word, the cache not turned off) is decided by
# logdoctor.cli.main._help_call, without importing this module when the cache is off

HELP_CACHE_ENV = "LOGDOCTOR_HELP_CACHE"
_MAGIC = "logdoctor-help-cache 1\n"
_MAX_FILES = 64  # past this many cached texts, the oldest are removed when one is written
# What typer, click and rich read from the environment that can change how help is laid out or coloured
# (grep of typer 0.29, click 8, rich 14: getenv / os.environ).
_ENVIRONMENT = (
    "COLUMNS",
    "LINES",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "GITHUB_ACTIONS",
    "DATABRICKS_RUNTIME_VERSION",
    "UNICODE_VERSION",
    "TYPER_USE_RICH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)


def _folder() -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "logdoctor", "help")


def _terminal_size(fd: int) -> str:
    try:
        size = os.get_terminal_size(fd)
    except (AttributeError, ValueError, OSError):
        return "-"
    return f"{size.columns}x{size.lines}"


def _isatty(stream: object) -> str:
    isatty = getattr(stream, "isatty", None)
    try:
        return "1" if isatty is not None and isatty() else "0"
    except ValueError:
        return "?"


def _key(argv: list[str]) -> str:
    """Everything but the code that decides the help's bytes, one line (``repr`` escapes any newline)."""
    out = sys.stdout
    parts = [
        sys.version,
        sys.executable,
        repr(argv),  # argv[0] and __main__ name the program in the usage line (click)
        repr(getattr(sys.modules.get("__main__"), "__package__", None)),
        f"{getattr(out, 'encoding', None)}/{getattr(out, 'errors', None)}",
        "tty" + "".join(_isatty(s) for s in (sys.stdin, out, sys.stderr)),
        " ".join(_terminal_size(fd) for fd in (0, 1, 2)),
        repr([(name, os.environ.get(name)) for name in _ENVIRONMENT]),
    ]
    return repr(parts)


def _name(key: str) -> str:
    import zlib

    return f"{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}.txt"


_OPEN_FLAGS = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_folder(folder: str, create: bool) -> int | None:
    """A descriptor of the cache folder when it is a private folder of this user (a real folder, not a
    symlink; owned by the user; no permission for group or others); None otherwise. ``create``: made
    first when missing, mode 0700 (its parents as ``os.makedirs`` makes them)."""
    if create:
        try:
            os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS)
    except OSError:  # missing, not a folder, or a symlink (ELOOP)
        return None
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        return None
    if st.st_mode & 0o077 and not (create and _made_private(fd)):
        os.close(fd)
        return None
    return fd


def _made_private(folder_fd: int) -> bool:
    """A folder of this user that others may open, holding nothing but names the cache gives (the folder
    as an earlier version made it, mode 0755): made 0700 (True). Anything else in it: left as it is."""
    try:
        names = os.listdir(folder_fd)
        if not all(_is_cache_name(n) or _is_temporary_name(n) for n in names):
            return False
        os.fchmod(folder_fd, 0o700)
    except OSError:
        return False
    return True


def _is_cache_name(name: str) -> bool:
    stem, _, ext = name.partition(".")
    return ext == "txt" and len(stem) == 8 and all(c in "0123456789abcdef" for c in stem)


def _is_temporary_name(name: str) -> bool:
    """``<crc>.txt.<pid>.tmp``: a text being written (:func:`_write`)."""
    text, sep, rest = name.partition(".txt.")
    return bool(sep) and _is_cache_name(text + ".txt") and rest.endswith(".tmp") and rest[:-4].isdigit()


def _read_own(folder_fd: int, name: str, limit: int = -1) -> bytes | None:
    """The bytes of ``name`` in the folder (the first ``limit``; all when -1) when it is a regular file of
    this user, opened without following a symlink; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _OPEN_FLAGS, dir_fd=folder_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:  # closed with the file, whatever happens
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                return None
            return f.read(st.st_size if limit < 0 else min(limit, st.st_size))  # up to that size at most
        except OSError:
            return None


def _is_own_text(folder_fd: int, name: str) -> bool:
    """``name`` is a text this cache wrote: its name and its header."""
    if not _is_cache_name(name):
        return False
    head = _read_own(folder_fd, name, len(_MAGIC))
    return head == _MAGIC.encode()


def replay(argv: list[str]) -> bool:
    """Write the help text kept for this very call, unchanged code and terminal; False (nothing written)
    when there is none."""
    folder = _folder()
    if folder is None or sys.stdout is None:  # no stdout (closed): typer says what it says
        return False
    key = _key(argv)
    folder_fd = _open_folder(folder, create=False)
    if folder_fd is None:
        return False
    try:
        raw = _read_own(folder_fd, _name(key))  # only a text this user's runs kept
    finally:
        os.close(folder_fd)
    if raw is None:
        return False
    data = raw.decode("utf-8", "surrogateescape")
    head, sep, text = data.partition("\n\n")
    lines = head.split("\n")
    if not sep or len(lines) < 3 or lines[0] + "\n" != _MAGIC or lines[1] != key:
        return False
    for line in lines[2:]:
        path, _, stamp = line.rpartition("\t")
        try:
            st = os.stat(path)
        except OSError:
            return False
        if stamp != f"{st.st_mtime_ns}:{st.st_size}":
            return False
    sys.stdout.write(text)
    sys.stdout.flush()
    return True


class _Tee:
    """sys.stdout as typer's rich console finds it (terminal, size, encoding), keeping what is written as
    text. Its binary ``buffer`` is the stream's, marked used: bytes written past the text layer leave the
    run unrecorded."""

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self.kept: list[str] = []
        self.bytes_written = False

    def write(self, text: str) -> int:
        written: int = self._stream.write(text)  # type: ignore[attr-defined]
        self.kept.append(text)  # after the write: click tries write(b"") to tell a binary stream
        return written

    @property
    def buffer(self) -> object:
        self.bytes_written = True
        return self._stream.buffer  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def record(argv: list[str], run: object) -> None:
    """``run()`` (typer's app) with stdout kept; when it ends with exit code 0, its text is written to the
    cache for :func:`replay`. Whatever ``run`` raises is raised as it was."""
    folder = _folder()
    real = sys.stdout
    if folder is None or real is None:
        run()  # type: ignore[operator]
        return
    key = _key(argv)  # before the run: the same terminal and streams replay() will see
    tee = _Tee(real)
    sys.stdout = tee  # type: ignore[assignment]
    code: object = None
    try:
        run()  # type: ignore[operator]
    except SystemExit as e:
        code = e.code
        raise
    finally:
        sys.stdout = real
        if code in (0, None) and not tee.bytes_written:
            _write(folder, key, "".join(tee.kept))


def _stamps() -> list[str] | None:
    lines = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            return None
        if "\n" in path or "\t" in path:
            return None
        lines.append(f"{os.path.abspath(path)}\t{st.st_mtime_ns}:{st.st_size}")
    return sorted(set(lines))


def _write(folder: str, key: str, text: str) -> None:
    stamps = _stamps()
    if stamps is None or not text:
        return
    folder_fd = _open_folder(folder, create=True)
    if folder_fd is None:  # a symlink, someone else's folder, one others can write in: no cache
        return
    import contextlib  # the write's own: a replay imports nothing but os, stat, sys and zlib

    name = _name(key)
    tmp = f"{name}.{os.getpid()}.tmp"
    made = False
    try:
        if _exists(folder_fd, name) and not _is_own_text(folder_fd, name):
            return  # the name holds something the cache did not write (a note, a symlink): kept
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600, dir_fd=folder_fd)
        made = True
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(_MAGIC + key + "\n" + "\n".join(stamps) + "\n\n" + text)
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        made = False
        _prune(folder_fd)
    except OSError:
        if made:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder_fd)
    finally:
        os.close(folder_fd)


def _exists(folder_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _prune(folder_fd: int) -> None:
    """Past :data:`_MAX_FILES` texts of the cache's own, the oldest are removed; nothing else is."""
    import contextlib

    entries = []
    with os.scandir(folder_fd) as it:
        for e in it:
            if not _is_cache_name(e.name):
                continue
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and _is_own_text(folder_fd, e.name):
                    entries.append((st.st_mtime_ns, e.name))
    entries.sort()
    for _, name in entries[: max(0, len(entries) - _MAX_FILES)]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder_fd)
