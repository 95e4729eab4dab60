"""``python -m logdoctor ...``: the CLI, also the entry for ``spark-submit`` (see docs/cluster.md)."""

from __future__ import annotations

from logdoctor.cli.main import main

if __name__ == "__main__":
    main()
