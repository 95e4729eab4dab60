"""The real data is there and as the manifest says (in CI a skip here fails the run)."""

import realworld


def test_manifest_lists_log_dirs(realworld_dir):
    names = realworld.log_dir_names()
    assert len(names) == realworld.manifest()["count"]
    for name in names:
        assert (realworld_dir / name).is_dir(), name
