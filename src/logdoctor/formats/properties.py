"""``meta.properties`` and the Java Properties text format it is written in.

K: metadata/src/main/java/org/apache/kafka/metadata/properties/MetaProperties.java,
PropertiesUtils.java (``props.store(printWriter, "")``; read with ``Properties.load(InputStream)``,
i.e. ISO-8859-1 with ``\\uXXXX`` escapes).

Java's ``store`` writes a ``#`` line (the empty comment), a ``#<Date.toString()>`` line, then
``key=value`` lines (hash order on old JDKs, sorted by key since JDK 18), each ending in a newline.

Two forms (MetaProperties.Builder(Properties)):
- ZooKeeper, ``version=0`` (also when ``version`` is missing): optional ``broker.id`` and
  ``cluster.id``.
- KRaft, ``version=1``: required ``node.id``, ``cluster.id``; both may carry ``directory.id`` (KIP-858).

The parsed :class:`PropertiesFile` keeps every physical line (comments, blank lines, key order,
line ends), so :func:`write_meta_properties` gives back the very bytes it read unless a field was
changed; a changed field rewrites only its own line, the way ``Properties.store`` would format it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from logdoctor.errors import FormatError, UnsupportedError
from logdoctor.formats.checkpoint import parse_java_int
from logdoctor.formats.partition_metadata import uuid_bytes_from_kafka

VERSION_PROP = "version"
BROKER_ID_PROP = "broker.id"
NODE_ID_PROP = "node.id"
CLUSTER_ID_PROP = "cluster.id"
DIRECTORY_ID_PROP = "directory.id"

_PHYSICAL_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
_WS = " \t\f"


@dataclass(frozen=True, slots=True)
class PropertiesLine:
    """One logical line: ``raw`` is its text (continuations included) without the final line end."""

    raw: str
    ending: str
    number: int  # 1-based physical line number where it starts
    position: int  # byte offset where it starts
    key: str | None = None  # None for comments and blank lines
    value: str | None = None


@dataclass(slots=True)
class PropertiesFile:
    """A Java Properties file as read, line by line."""

    lines: list[PropertiesLine] = field(default_factory=list)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value the JDK would return (the last occurrence of a key wins)."""
        return next((line.value for line in reversed(self.lines) if line.key == key), default)

    def keys(self) -> list[str]:
        return list(dict.fromkeys(line.key for line in self.lines if line.key is not None))

    def comments(self) -> list[str]:
        return [line.raw.lstrip(_WS)[1:] for line in self.lines if line.key is None and line.raw.strip(_WS)]

    def with_property(self, key: str, value: str | None) -> PropertiesFile:
        """A copy with ``key`` set (its last line rewritten, or appended) or removed (``value`` None)."""
        lines = list(self.lines)
        if value is None:
            return PropertiesFile([line for line in lines if line.key != key])
        text = f"{store_escape(key, is_key=True)}={store_escape(value, is_key=False)}"
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].key == key:
                lines[i] = replace(lines[i], raw=text, key=key, value=value)
                return PropertiesFile(lines)
        if lines and lines[-1].ending == "":
            lines[-1] = replace(lines[-1], ending="\n")
        lines.append(PropertiesLine(text, "\n", 0, 0, key, value))
        return PropertiesFile(lines)

    def to_bytes(self) -> bytes:
        return "".join(line.raw + line.ending for line in self.lines).encode("latin-1", "backslashreplace")


def store_escape(text: str, *, is_key: bool) -> str:
    """Properties.saveConvert with escUnicode=false (what ``store(Writer, ...)`` writes)."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ord(ch) > 0xFF:
            out.append(f"\\u{ord(ch):04X}")  # kept readable by load(InputStream)
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str, number: int, position: int, source: str | None) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise FormatError(
                    f"a \\uXXXX escape on line {number}", source=source, position=position, found=repr(digits)
                )
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key_value(logical: str) -> tuple[str, str]:
    # Properties.load: the key ends at the first unescaped '=', ':' or whitespace; then whitespace,
    # at most one '=' or ':', whitespace; the rest is the value.
    i = 0
    n = len(logical)
    while i < n:
        ch = logical[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WS:
            break
        i += 1
    key = logical[:i]
    j = i
    while j < n and logical[j] in _WS:
        j += 1
    if j < n and logical[j] in "=:":
        j += 1
        while j < n and logical[j] in _WS:
            j += 1
    return key, logical[j:]


def _continues(text: str) -> bool:
    trailing = len(text) - len(text.rstrip("\\"))
    return trailing % 2 == 1


def parse_properties(data: bytes | memoryview, *, source: str | None = None) -> PropertiesFile:
    """Parse a Java Properties file (ISO-8859-1, as ``Properties.load(InputStream)``)."""
    text = bytes(data).decode("latin-1")
    physical = [(m.group(1), m.group(2), m.start()) for m in _PHYSICAL_LINE.finditer(text)]
    if physical and physical[-1][0] == "" and physical[-1][1] == "":
        physical.pop()  # the empty match at the very end
    lines: list[PropertiesLine] = []
    i = 0
    while i < len(physical):
        body, ending, start = physical[i]
        number = i + 1
        stripped = body.lstrip(_WS)
        if not stripped or stripped[0] in "#!":
            lines.append(PropertiesLine(body, ending, number, start))
            i += 1
            continue
        raw_parts = [body]
        logical = stripped
        while _continues(logical) and i + 1 < len(physical) and ending:
            logical = logical[:-1]
            raw_parts.append(ending)
            i += 1
            body, ending, _ = physical[i]
            raw_parts.append(body)
            logical += body.lstrip(_WS)
        if _continues(logical):
            logical = logical[:-1]  # a final backslash at end of file is dropped
        key, value = _split_key_value(logical)
        lines.append(
            PropertiesLine(
                "".join(raw_parts),
                ending,
                number,
                start,
                _unescape(key, number, start, source),
                _unescape(value, number, start, source),
            )
        )
        i += 1
    return PropertiesFile(lines)


def write_properties(props: PropertiesFile) -> bytes:
    return props.to_bytes()


# --- meta.properties -------------------------------------------------------------------------------


@dataclass(slots=True)
class MetaProperties:
    """The typed view of ``meta.properties``; ``properties`` is the file as read (None when new)."""

    version: int
    node_id: int | None  # broker.id (version 0, optional) or node.id (version 1, required)
    cluster_id: str | None
    directory_id: str | None = None  # Kafka Uuid text
    properties: PropertiesFile | None = None

    @property
    def is_kraft(self) -> bool:
        return self.version == 1

    @property
    def broker_id(self) -> int | None:
        return self.node_id

    @property
    def date_comment(self) -> str | None:
        """The ``#<date>`` line Java's store wrote (the second comment), if any."""
        if self.properties is None:
            return None
        comments = [c for c in self.properties.comments() if c]
        return comments[0] if comments else None


def _line_of(props: PropertiesFile, key: str) -> PropertiesLine | None:
    for line in reversed(props.lines):
        if line.key == key:
            return line
    return None


def _meta_from(props: PropertiesFile, source: str | None) -> MetaProperties:
    def where(key: str) -> int:
        line = _line_of(props, key)
        return line.position if line is not None else 0

    version_text = props.get(VERSION_PROP, "0") or ""
    version = parse_java_int(version_text)
    if version is None:
        raise FormatError(
            "a version number", source=source, position=where(VERSION_PROP), found=repr(version_text)
        )
    if version not in (0, 1):
        raise UnsupportedError(
            "meta.properties version 0 or 1",
            source=source,
            position=where(VERSION_PROP),
            found=f"Unknown meta.properties version number {version}",
        )
    id_prop = BROKER_ID_PROP if version == 0 else NODE_ID_PROP
    id_text = props.get(id_prop)
    node_id: int | None = None
    if id_text is None:
        if version == 1:
            raise FormatError(f"{NODE_ID_PROP} in a version 1 meta.properties", source=source, position=0,
                              found=f"Failed to find {NODE_ID_PROP}")
    else:
        node_id = parse_java_int(id_text)
        if node_id is None:
            raise FormatError(
                f"{id_prop} as a base-10 number", source=source, position=where(id_prop), found=repr(id_text)
            )
    directory_id = props.get(DIRECTORY_ID_PROP)
    if directory_id is not None and uuid_bytes_from_kafka(directory_id) is None:
        raise FormatError(
            f"{DIRECTORY_ID_PROP} as a Uuid", source=source, position=where(DIRECTORY_ID_PROP),
            found=repr(directory_id),
        )
    return MetaProperties(version, node_id, props.get(CLUSTER_ID_PROP), directory_id, props)


def parse_meta_properties(data: bytes | memoryview, *, source: str | None = None) -> MetaProperties:
    """Parse ``meta.properties`` as MetaProperties.Builder does (an empty file is version 0, no ids)."""
    return _meta_from(parse_properties(data, source=source), source)


def java_date(moment: datetime | None = None) -> str:
    """java.util.Date.toString(): ``EEE MMM dd HH:mm:ss zzz yyyy``."""
    moment = moment or datetime.now(UTC)
    zone = moment.tzname() or "UTC"
    return moment.strftime(f"%a %b %d %H:%M:%S {zone} %Y")


def _desired(meta: MetaProperties) -> dict[str, str | None]:
    return {
        VERSION_PROP: str(meta.version),
        CLUSTER_ID_PROP: meta.cluster_id,
        BROKER_ID_PROP: None if meta.version != 0 or meta.node_id is None else str(meta.node_id),
        NODE_ID_PROP: None if meta.version == 0 or meta.node_id is None else str(meta.node_id),
        DIRECTORY_ID_PROP: meta.directory_id,
    }


def write_meta_properties(meta: MetaProperties, *, date: datetime | None = None) -> bytes:
    """The bytes of ``meta``: the file it was read from, with only the changed fields rewritten.

    A MetaProperties built in memory gets Java's layout: ``#``, ``#<date>``, then the keys in
    sorted order (JDK 18+ ``Properties.store``).
    """
    if meta.properties is None:
        head = [PropertiesLine("#", "\n", 1, 0), PropertiesLine(f"#{java_date(date)}", "\n", 2, 0)]
        props = PropertiesFile(head)
        for key, value in sorted(_desired(meta).items()):
            if value is not None:
                props = props.with_property(key, value)
        return props.to_bytes()
    props = meta.properties
    current = _desired(_meta_from(props, None)) if _readable(props) else {}
    for key, value in _desired(meta).items():
        if current.get(key) != value:
            props = props.with_property(key, value)
    return props.to_bytes()


def _readable(props: PropertiesFile) -> bool:
    try:
        _meta_from(props, None)
    except FormatError:
        return False
    return True


__all__ = [
    "BROKER_ID_PROP",
    "CLUSTER_ID_PROP",
    "DIRECTORY_ID_PROP",
    "NODE_ID_PROP",
    "VERSION_PROP",
    "MetaProperties",
    "PropertiesFile",
    "PropertiesLine",
    "java_date",
    "parse_meta_properties",
    "parse_properties",
    "store_escape",
    "write_meta_properties",
    "write_properties",
]
