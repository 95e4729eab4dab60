"""The remote-tier options `dump` and `export` share (docs/remote-tier.md; the readers are
:mod:`logdoctor.logdir.remote_store`). ``--remote-storage`` says per command what its FILES or PATHS are."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from logdoctor.logdir.remote_store import RemoteOptions

RemoteLayoutOption = Annotated[
    str | None,
    typer.Option("--remote-layout", help="kafka-local or aiven (default: detected from what is stored)."),
]
RemotePrivateKeyOption = Annotated[
    str | None,
    typer.Option(
        "--remote-private-key",
        metavar="[KEYPAIRID=]PEM",
        help="RSA private key of Aiven's encryption (PKCS#8 PEM); KEYPAIRID= is checked against manifests.",
    ),
]


def remote_options(storage: str | None, layout: str | None, private_key: str | None) -> RemoteOptions | None:
    """``--remote-storage``, ``--remote-layout`` and ``--remote-private-key`` as the readers take them (None:
    no remote tier); a bad value raises :class:`~logdoctor.logdir.remote_store.RemoteTierError`."""
    from logdoctor.logdir.remote_store import RemoteOptions

    return RemoteOptions.from_options(
        {"remoteStorage": storage, "remoteLayout": layout, "remotePrivateKey": private_key}
    )


def require_remote_inputs(storage: str | None, private_key: str | None) -> None:
    """Exit 66 (EX_NOINPUT) before anything is read when the local ``--remote-storage`` folder or the
    ``--remote-private-key`` file does not exist: a missing input, not a corrupt or truncated segment."""
    from logdoctor.cli.input_checks import require_input_file, require_inputs_exist

    if storage is not None:
        require_inputs_exist([storage])
    from logdoctor.logdir.remote_store import private_key_spec

    if private_key is not None:
        path = private_key_spec(private_key.strip())[1]
        if "://" not in path:
            require_input_file(path, "--remote-private-key")
            if not os.access(path, os.R_OK):  # never "corrupt" segments: an input this user cannot read
                from logdoctor.cli.error_lines import fail
                from logdoctor.cli.exit_codes import EX_NOINPUT

                fail(f"error: --remote-private-key {path} cannot be read", EX_NOINPUT)
