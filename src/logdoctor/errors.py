"""Typed errors shared by every layer.

Every error about bytes names the file (when the caller knows it), the byte position
and what was expected there, so a scan can report it in one line and go on.
"""

from __future__ import annotations


class LogDoctorError(Exception):
    """Base of every error this package raises on purpose."""


class FormatError(LogDoctorError):
    """Bytes that do not follow the format they should.

    ``source`` is the file path (or another name for the buffer), ``position`` the byte
    offset in that file where the problem is, ``expected`` what the format wants there.
    """

    kind = "format"

    def __init__(
        self,
        expected: str,
        *,
        source: str | None = None,
        position: int | None = None,
        found: str | None = None,
    ) -> None:
        self.expected = expected
        self.source = source
        self.position = position
        self.found = found
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source or "<buffer>"
        if self.position is not None:
            where = f"{where}@{self.position}"
        text = f"{where}: {self.kind}: expected {self.expected}"
        if self.found is not None:
            text += f", found {self.found}"
        return text

    def with_source(self, source: str, base_position: int = 0) -> FormatError:
        """Return the same error re-anchored to a file (positions shift by ``base_position``)."""
        if self.source is None:
            self.source = source
        if self.position is not None:
            self.position += base_position
        elif base_position:
            self.position = base_position
        self.args = (self._render(),)
        return self


class TruncatedError(FormatError):
    """The data ends before a complete structure (e.g. a torn final batch after a crash)."""

    kind = "truncated"


class MissingObjectError(TruncatedError):
    """A file or remote object that is not there at all (a deleted remote ``.log``): missing, not truncated.
    A TruncatedError still, for the callers that stop at the first byte they lack."""

    kind = "missing"


class CorruptRecordError(FormatError):
    """A structure is complete but its content is invalid (Kafka's CorruptRecordException)."""

    kind = "corrupt"


class CrcMismatchError(CorruptRecordError):
    """A stored checksum does not match the bytes."""

    kind = "crc mismatch"

    def __init__(
        self,
        stored: int,
        computed: int,
        *,
        source: str | None = None,
        position: int | None = None,
        what: str = "batch",
    ) -> None:
        self.stored = stored
        self.computed = computed
        super().__init__(
            f"{what} CRC {stored:#010x}",
            source=source,
            position=position,
            found=f"{computed:#010x}",
        )


class UnsupportedError(FormatError):
    """A valid but unsupported variant (e.g. an unknown magic or codec id)."""

    kind = "unsupported"


class LogDirError(LogDoctorError):
    """A problem with a log dir as a whole (not a byte-level format problem)."""


class BrokerRunningError(LogDirError):
    """The log dir's ``.lock`` is held by another process (a running broker)."""


class OutputOverlapsInputError(LogDoctorError):
    """An output location (``--out``, a report file) is an input, lies inside one, or contains one.

    Writing there would change a log dir, or deleting or replacing the output would destroy it.
    """

    def __init__(self, output: str, input_: str, relation: str) -> None:
        self.output = output
        self.input = input_
        self.relation = relation  # "is" | "inside" | "contains"
        words = {"is": "is the input", "inside": "lies inside the input", "contains": "contains the input"}
        super().__init__(
            f"output {output} {words[relation]} {input_}: choose an output outside every input "
            "(nothing was written or deleted)"
        )
