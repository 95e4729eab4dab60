"""``__cluster_metadata-0/quorum-state``: the KRaft election state (JSON on one line).

K: raft/src/main/resources/common/message/QuorumStateData.json, raft/.../FileQuorumStateStore.java.

The broker reads only the first line, needs a ``data_version`` (0 or 1) and then the fields of
that version (QuorumStateDataJsonConverter): v0 ``clusterId``, ``leaderId``, ``leaderEpoch``,
``votedId``, ``appliedOffset``, ``currentVoters`` (nullable list of ``{"voterId": n}``); v1
``leaderId``, ``leaderEpoch``, ``votedId``, ``votedDirectoryId``. It writes Jackson's compact
form: those fields in schema order, ``data_version`` last, no spaces, no final newline.
:func:`write_quorum_state` writes exactly that, so a broker-written file round-trips byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import FormatError, TruncatedError, UnsupportedError

LOWEST_SUPPORTED_VERSION = 0
HIGHEST_SUPPORTED_VERSION = 1
DATA_VERSION = "data_version"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MISSING = "QuorumStateData: unable to locate a mandatory field"


@dataclass(slots=True)
class QuorumState:
    """QuorumStateData plus its ``data_version``; fields of the other version stay None."""

    data_version: int
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    cluster_id: str | None = None  # v0
    applied_offset: int | None = None  # v0
    current_voters: list[int] | None = None  # v0 (None: JSON null)
    voted_directory_id: str | None = None  # v1 (Kafka Uuid text)
    trailing: bytes = b""  # whatever follows the first line (the broker ignores it)


def _fail(expected: str, found: str, source: str | None, position: int = 0) -> FormatError:
    return FormatError(f"quorum-state {expected}", source=source, position=position, found=found)


def _field(obj: dict[str, Any], key: str, source: str | None) -> Any:
    if key not in obj:
        raise _fail(f"field '{key}'", _MISSING, source)
    return obj[key]


def _int(obj: dict[str, Any], key: str, lo: int, hi: int, source: str | None) -> int:
    value = _field(obj, key, source)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _fail(f"an integer '{key}'", repr(value), source)
    return value


def _str(obj: dict[str, Any], key: str, source: str | None) -> str:
    value = _field(obj, key, source)
    if not isinstance(value, str):
        raise _fail(f"a string '{key}'", repr(value), source)
    return value


def parse_quorum_state(data: bytes | memoryview, *, source: str | None = None) -> QuorumState:
    raw = bytes(data)
    end = min((at for at in (raw.find(b"\n"), raw.find(b"\r")) if at != -1), default=len(raw))
    first, trailing = raw[:end], raw[end:]
    if not first and not trailing:
        raise TruncatedError("quorum-state JSON", source=source, position=0, found="File ended prematurely.")
    try:
        text = first.decode("utf-8")
        obj = json.loads(text)
    except UnicodeDecodeError as exc:
        raise _fail("UTF-8 JSON", f"byte {first[exc.start]:#04x}", source, exc.start) from None
    except json.JSONDecodeError as exc:
        position = len(text[: exc.pos].encode("utf-8"))
        raise _fail("JSON", exc.msg, source, position) from None
    except (ValueError, RecursionError) as exc:  # a number past Python's int digit limit, nesting too deep
        raise _fail("JSON", str(exc)[:120], source, 0) from None
    if not isinstance(obj, dict):
        raise _fail("JSON object", type(obj).__name__, source)
    if DATA_VERSION not in obj:
        raise _fail(f"a '{DATA_VERSION}' field", "none", source)
    version = _int(obj, DATA_VERSION, -(2**15), 2**15 - 1, source)
    if not LOWEST_SUPPORTED_VERSION <= version <= HIGHEST_SUPPORTED_VERSION:
        raise UnsupportedError(
            f"data_version {LOWEST_SUPPORTED_VERSION}..{HIGHEST_SUPPORTED_VERSION}",
            source=source,
            position=0,
            found=str(version),
        )
    state = QuorumState(
        version,
        _int(obj, "leaderId", INT32_MIN, INT32_MAX, source),
        _int(obj, "leaderEpoch", INT32_MIN, INT32_MAX, source),
        _int(obj, "votedId", INT32_MIN, INT32_MAX, source),
        trailing=trailing,
    )
    if version == 0:
        state.cluster_id = _str(obj, "clusterId", source)
        state.applied_offset = _int(obj, "appliedOffset", INT64_MIN, INT64_MAX, source)
        voters = _field(obj, "currentVoters", source)
        if voters is not None:
            if not isinstance(voters, list) or not all(isinstance(v, dict) for v in voters):
                raise _fail("a list of voters", repr(voters), source)
            state.current_voters = [_int(v, "voterId", INT32_MIN, INT32_MAX, source) for v in voters]
    else:
        state.voted_directory_id = _str(obj, "votedDirectoryId", source)
    return state


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def jackson_string(value: str) -> str:
    """A JSON string as Jackson writes it: short escapes, other control chars as upper-case
    ``\\u00XX``, everything else (non-ASCII included) as is."""
    escaped = (_SHORT_ESCAPES.get(ch) or (f"\\u{ord(ch):04X}" if ch < " " else ch) for ch in value)
    return '"' + "".join(escaped) + '"'


def write_quorum_state(state: QuorumState) -> bytes:
    """Jackson's compact JSON of ``state`` (fields of its data_version, ``data_version`` last)."""
    parts: list[str] = []
    if state.data_version == 0:
        parts.append(f'"clusterId":{jackson_string(state.cluster_id or "")}')
    parts += [
        f'"leaderId":{state.leader_id}',
        f'"leaderEpoch":{state.leader_epoch}',
        f'"votedId":{state.voted_id}',
    ]
    if state.data_version == 0:
        parts.append(f'"appliedOffset":{state.applied_offset if state.applied_offset is not None else 0}')
        if state.current_voters is None:
            parts.append('"currentVoters":null')
        else:
            voters = ",".join(f'{{"voterId":{v}}}' for v in state.current_voters)
            parts.append(f'"currentVoters":[{voters}]')
    else:
        directory = state.voted_directory_id or "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID
        parts.append(f'"votedDirectoryId":{jackson_string(directory)}')
    parts.append(f'"{DATA_VERSION}":{state.data_version}')
    return ("{" + ",".join(parts) + "}").encode("utf-8") + state.trailing


__all__ = ["QuorumState", "jackson_string", "parse_quorum_state", "write_quorum_state"]
