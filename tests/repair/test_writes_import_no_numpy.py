"""Issue 35: the writing commands the suite runs hundreds of times (and an operator runs once, waiting)
import no numpy (~45 ms of a ~190 ms start): a damaged log dir's `repair --apply` (its zero-filled tails
found without numpy: checks.state.segment_walk._all_zero), `move-partition --copy --apply` and
`sync-replica --apply` (the last batch of a segment found from its offset index's last entry:
formats.index.real_entry_count in C, parse_offset_index with struct for a few entries). Each run is checked
to have done its work."""

from __future__ import annotations

from pathlib import Path

import pytest
import write_runs as wr

from imported import imported_by


@pytest.mark.parametrize("command", ["repair", "move-partition", "sync-replica"])
def test_a_writing_command_imports_no_numpy(tmp_path: Path, command: str) -> None:
    case = {"repair": wr.repair_case, "move-partition": wr.move_case, "sync-replica": wr.sync_case}[command](
        tmp_path / "case"
    )
    root = wr.clone(case.template, tmp_path / "run")
    before = wr.tree(root)
    modules = imported_by(*case.args(root, tmp_path / "backup"))
    assert wr.tree(root) != before  # it did its work (the matrix checks what exactly: test_write_matrix)
    assert "logdoctor.repair.apply" in modules
    assert "numpy" not in modules
