"""How a parallel run hands out the suite (``make test``: pytest-xdist, ``-n 2 --dist loadfile``).

A worker is given whole test modules: a module runs on one worker, in its own order, so its
module-scoped fixtures (generated fleets, Spark clusters, servers) are built once and its tests share
them as they do in one process. The modules of a :data:`SERIAL_GROUPS` group go to one worker, one
after the other: what must not run at the same time as each other. Of the modules left, the longest is
handed out first (:data:`LONGEST`, then by number of tests), so no long module starts
last while the other worker has nothing left to do.

The order changes only which worker runs a module and when, never what a test does or checks.
"""

from __future__ import annotations

from collections import OrderedDict

from xdist.scheduler import LoadScopeScheduling

# The Spark standalone clusters start 3 JVMs and 2 executors each: two at once, beside each worker's
# own Spark session, would crowd the 24 GiB machine.
SERIAL_GROUPS = {
    "tests/spark/test_cluster.py": "spark-standalone",
    "tests/spark/test_tables_cluster.py": "spark-standalone",
}

# The longest work units, longest first (from `pytest --durations` of a whole `make test`, summed per
# module: BENCHMARKS.md, "The test suite"); a unit not named here comes after them, the one with the most
# tests first (pytest-xdist's own order).
LONGEST: list[str] = [
    "tests/spark/test_tables_commit.py",  # 476 s
    "tests/spark/test_object_storage.py",  # 372 s
    "spark-standalone",  # 242 s: test_cluster.py 152 s, then test_tables_cluster.py 90 s
    "tests/spark/test_every_record_once.py",  # 156 s
    "tests/procedures/test_move_partition.py",  # 111 s
    "tests/cli/test_dump_remote.py",  # 92 s
    "tests/spark/test_inventory_census.py",  # 91 s
]


def _rank(scope: str, tests: int) -> tuple[int, int]:
    try:
        return LONGEST.index(scope), 0
    except ValueError:
        return len(LONGEST), -tests


class _LongestFirst(OrderedDict):
    """The scheduler's queue of work units (scope -> {nodeid: done}); a unit is taken with
    ``popitem(last=False)`` (the only way LoadScopeScheduling takes one): here the longest one left."""

    def popitem(self, last: bool = True):
        if last:
            return super().popitem(last=True)
        scope = min(self, key=lambda s: _rank(s, len(self[s])))
        return scope, self.pop(scope)


class ModuleScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with a module (or a :data:`SERIAL_GROUPS` group) as the scope
    and the longest unit first."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.workqueue = _LongestFirst()

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return SERIAL_GROUPS.get(module, module)
