"""The remote-tier options `dump` and `export` share (README "Reading the remote tier"; the readers are
:mod:`logdoctor.logdir.remote_tier`). ``--remote-storage`` says per command what its FILES or PATHS are."""

from __future__ import annotations

from typing import Annotated

import typer

RemoteLayoutOption = Annotated[
    str | None,
    typer.Option("--remote-layout", help="kafka-local or aiven (default: detected from what is stored)."),
]
RemotePrivateKeyOption = Annotated[
    str | None,
    typer.Option(
        "--remote-private-key", metavar="PEM", help="RSA private key of Aiven's encryption (PKCS#8 PEM)."
    ),
]
