"""The remote store as the user names it: the options that say where the remote tier is and how to read it
(:class:`RemoteOptions`, the data-source options and the CLI's ``--remote-*``), the store opened, and the
two errors of a store: :class:`RemoteTierError` for a bad option or a store that cannot be used (shown to the
user as is), :func:`missing_object` for an object the store does not have (a
:class:`~logdoctor.errors.FormatError` naming its key).

Invariant: :meth:`RemoteOptions.from_options` of :meth:`RemoteOptions.to_options` is equal; local paths are
made absolute, so that every Spark executor reads the same store and key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import TruncatedError
from logdoctor.logdir.remote_layouts import LAYOUTS
from logdoctor.logdir.storage import Storage

__all__ = ["RemoteOptions", "RemoteTierError", "missing_object", "open_store", "private_key_spec"]


class RemoteTierError(ValueError):
    """A bad remote-tier option or a store that cannot be used (shown to the user as is)."""


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """Where the remote tier is and how to read it (the data-source options ``remoteStorage``,
    ``remoteLayout`` and ``remotePrivateKey``; the CLI's ``--remote-storage/-layout/-private-key``)."""

    storage: str
    layout: str | None = None  # None: detected per partition from what is stored
    private_key: str | None = None  # a PEM file (Aiven's encryption): path on every executor

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> RemoteOptions | None:
        opts = {str(k).lower(): v for k, v in (options or {}).items() if v is not None and str(v).strip()}
        store = opts.get("remotestorage")
        layout = opts.get("remotelayout")
        key = opts.get("remoteprivatekey")
        if store is None:
            if layout is not None or key is not None:
                raise RemoteTierError("remoteLayout / remotePrivateKey need remoteStorage (the remote store)")
            return None
        if layout is not None:
            layout = str(layout).strip().lower()
            if layout == "auto":
                layout = None
            elif layout not in LAYOUTS:
                raise RemoteTierError(f"remoteLayout: expected auto, {' or '.join(LAYOUTS)}, got {layout!r}")
        if key is not None:
            key_id, path = private_key_spec(str(key).strip())
            path = os.path.abspath(path) if "://" not in path else path
            key = path if key_id is None else f"{key_id}={path}"
        store = str(store).strip()
        if "://" not in store:
            store = os.path.abspath(store)
        return cls(store, layout, key)

    def to_options(self) -> dict[str, str]:
        """The data-source options that give these (:meth:`from_options` of them is equal)."""
        out = {"remoteStorage": self.storage, "remoteLayout": self.layout or "auto"}
        if self.private_key is not None:
            out["remotePrivateKey"] = self.private_key
        return out


def open_store(opts: RemoteOptions) -> tuple[Storage, str]:
    """The store's Storage and root location; RemoteTierError when it is not a folder."""
    try:
        storage, root = Storage.of(opts.storage)
    except (ValueError, OSError) as exc:
        raise RemoteTierError(f"remote storage {opts.storage}: {exc}") from None
    entry = storage.info(root)
    if entry is None or not entry.is_dir():
        raise RemoteTierError(f"remote storage {opts.storage}: no such folder")
    return storage, root


def missing_object(location: str, what: str) -> TruncatedError:
    from logdoctor.errors import MissingObjectError

    return MissingObjectError(f"the {what} object", source=location, position=0, found="no such object")


_KEY_PAIR = re.compile(r"([A-Za-z0-9._-]+)=(.+)", re.S)


def private_key_spec(spec: str) -> tuple[str | None, str]:
    """``--remote-private-key`` / ``remotePrivateKey``: ``PEM`` or ``KEYPAIRID=PEM`` (the plugin's
    ``encryption.key.pair.id`` the key belongs to, checked against each manifest's data key): (id, path)."""
    m = _KEY_PAIR.fullmatch(spec)
    if m is None or "/" in m.group(1) or "://" in spec.split("=", 1)[0]:
        return None, spec
    return m.group(1), m.group(2)
