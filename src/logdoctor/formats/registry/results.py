"""What every format's decoder gives back: :class:`Decoded` and :class:`SchemaError` for a schema that does
not parse. (A format's module imports them from here, as :mod:`.decoder` imports the format modules.)"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


class SchemaError(ValueError):
    """A registered schema that cannot be parsed or compiled (its id and the library's words)."""


@dataclass(slots=True)
class Decoded:
    """What a decoder made of a batch of payloads: ``values`` (an array of the decoder's ``arrow_type``,
    one element per payload, null where it did not decode) and ``reasons`` (None where it decoded, else one
    of :data:`.reasons.REASONS`)."""

    values: pa.Array
    reasons: list[str | None]


class Payloads(Sequence[bytes]):
    """A batch of payloads as spans of one buffer (``data[starts[i]:ends[i]]``, numpy int64 arrays): what the
    typed tables hand the decoders, sliced from the Arrow column without a Python object per payload. The C
    decoders read the spans in place; as a sequence it gives each payload's bytes, the same objects each time
    (made once, on first use: a reader may tell payloads apart by identity, as a list's)."""

    __slots__ = ("_listed", "data", "ends", "starts")

    def __init__(self, data: Any, starts: np.ndarray, ends: np.ndarray) -> None:
        self.data = data
        self.starts = starts
        self.ends = ends
        self._listed: list[bytes] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        return self.as_list()[i]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.as_list())

    def as_list(self) -> list[bytes]:
        if self._listed is None:
            view = memoryview(self.data)
            starts, ends = self.starts.tolist(), self.ends.tolist()
            self._listed = [bytes(view[a:b]) for a, b in zip(starts, ends, strict=True)]
        return self._listed
