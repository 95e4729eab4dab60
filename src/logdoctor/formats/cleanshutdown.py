"""``.kafka_cleanshutdown``: the marker a broker leaves in each log dir after a clean shutdown.

K: storage/.../checkpoint/CleanShutdownFileHandler.java (3.7+): Jackson's compact JSON of
``{"version":0,"brokerEpoch":<long>}``, no final newline. Older brokers (K: LogManager.scala,
before KIP-966 work) created an empty file. Its mere existence is what makes LogManager treat the
shutdown as clean; the content only carries the broker epoch (unreadable content: no epoch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from logdoctor.errors import FormatError

CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"
CLEAN_SHUTDOWN_VERSION = 0


@dataclass(slots=True)
class CleanShutdown:
    """``version``/``broker_epoch`` None with ``empty`` True: the empty marker of older brokers."""

    version: int | None
    broker_epoch: int | None
    empty: bool = False


def parse_clean_shutdown(data: bytes | memoryview, *, source: str | None = None) -> CleanShutdown:
    raw = bytes(data)
    if not raw:
        return CleanShutdown(None, None, empty=True)
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text)
    except UnicodeDecodeError as exc:
        raise FormatError("UTF-8 JSON", source=source, position=exc.start) from None
    except json.JSONDecodeError as exc:
        raise FormatError(
            "clean shutdown JSON", source=source, position=len(text[: exc.pos].encode()), found=exc.msg
        ) from None
    if not isinstance(obj, dict):
        raise FormatError("a JSON object", source=source, position=0, found=type(obj).__name__)
    version = obj.get("version", 0)  # Jackson leaves a missing int field at 0
    epoch = obj.get("brokerEpoch")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FormatError("an integer 'version'", source=source, position=0, found=repr(version))
    if epoch is not None and (isinstance(epoch, bool) or not isinstance(epoch, int)):
        raise FormatError("an integer 'brokerEpoch'", source=source, position=0, found=repr(epoch))
    return CleanShutdown(version, epoch)


def write_clean_shutdown(marker: CleanShutdown) -> bytes:
    """Jackson's bytes for the marker (fields in declaration order), or b"" for the empty marker."""
    if marker.empty:
        return b""
    epoch = "null" if marker.broker_epoch is None else str(marker.broker_epoch)
    version = CLEAN_SHUTDOWN_VERSION if marker.version is None else marker.version
    return f'{{"version":{version},"brokerEpoch":{epoch}}}'.encode()


__all__ = [
    "CLEAN_SHUTDOWN_FILE_NAME",
    "CleanShutdown",
    "parse_clean_shutdown",
    "write_clean_shutdown",
]
