"""`logdoctor scan`: check log dirs at one depth, partitions in parallel, findings in a stable order.

The log-dir level (lock, meta.properties, checkpoints, clean-shutdown marker, root leftovers) runs
in this process; each partition folder is one task for a process pool (all cores); the checks that
need every partition (checkpoints against the folders, duplicates across log dirs, meta.properties
and topic ids across dirs, unclean-shutdown evidence) run when all partitions are back.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import operator
import os
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ParamSpec

from logdoctor.checks.access import BrokerUser
from logdoctor.checks.checkpoints import checkpoints_against_partitions, unclean_shutdown
from logdoctor.checks.consequences import link_consequences
from logdoctor.checks.context import Depth, PartitionReport, PartitionTask, ScanOptions
from logdoctor.checks.cross_dir import broker_groups, cross_dir
from logdoctor.checks.disk_space import check_disks
from logdoctor.checks.findings import Finding
from logdoctor.checks.kraft import check_kraft, metadata_not_scanned
from logdoctor.checks.partition import Tiers, check_partition
from logdoctor.checks.remote_tier import check_remote_tier, remote_metadata_for_scan
from logdoctor.checks.root_files import check_root
from logdoctor.checks.scan_report import LogDirReport, ScanReport, ScanUsageError
from logdoctor.checks.state.fast_lane import limit_walk_threads
from logdoctor.checks.tiered import (
    BrokerRemoteEvidence,
    broker_remote_evidence,
    could_be_tiered,
    remote_metadata_evidence,
    tiering,
    topic_tiering,
)
from logdoctor.checks.tiered import usable_offsets as _usable_offsets
from logdoctor.checks.topic_config import (
    LOG_RETENTION_MS,
    TRANSACTION_MAX_TIMEOUT_MS,
    ConfigInputs,
    TopicConfigResolver,
)
from logdoctor.formats.folders import Listed, list_folders
from logdoctor.logdir.model import LogDir, shared_log_dirs
from logdoctor.logdir.names import (
    CONSUMER_OFFSETS_TOPIC,
    METADATA_TOPIC,
    OFFSET_CHECKPOINT_FILES,
    TRANSACTION_STATE_TOPIC,
    DirKind,
    RootEntryKind,
    parse_partition_dir,
)
from logdoctor.logdir.offsets import log_start_offsets
from logdoctor.logdir.recognize import recognize

if TYPE_CHECKING:
    # imported where a scan meets what needs them (issue 35): the remote tier audit's modules when it has
    # remote log metadata, the metadata log's when a broker has one, the replica and coordinator checks
    # when there are replicas of several brokers / a __consumer_offsets or __transaction_state partition
    from logdoctor.checks.remote_audit import StoreIndex
    from logdoctor.logdir.metadata_image import MetadataImage
    from logdoctor.logdir.remote_metadata import RemoteLogMetadata

__all__ = ["LogDirReport", "ScanReport", "ScanUsageError", "scan", "topic_config_resolver"]


# --- orchestration ------------------------------------------------------------------------------------


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent: int) -> None:
    """Worker initializer: a scan killed with SIGKILL (an operator's kill -9, an OOM kill) takes its
    workers with it instead of leaving them blocked forever on the pool's queue (Linux prctl
    PR_SET_PDEATHSIG; elsewhere nothing is set). Ctrl-C reaches the whole process group: workers ignore
    it (each printed a KeyboardInterrupt traceback); the parent stops them (:func:`_run`)."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by _run across the fork
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _worker_init(parent: int) -> None:
    """Pool worker: dies with its parent; its garbage collector on (the parent's is off during a scan, see
    :func:`_young_collections_only`) with what it inherited frozen, so collections never walk the
    parent's objects; its deep walks one segment at a time (memory: one mapped segment per worker)."""
    _die_with_parent(parent)
    gc.freeze()
    gc.enable()
    limit_walk_threads(1)  # the pool spreads the partitions; one segment walked at a time per worker


_P = ParamSpec("_P")

# collect cyclic garbage (Partition <-> Segment) of the partitions checked in this process after every N
# partitions that had segments: a partition without one leaves no cycle (50,000 empty partitions: 193 objects
# in all), and each collection walks every object made since the last one, the reports kept too (3,125
# collections, 0.10-0.29 s of `scan --quick` of 50,000 empty partitions; issue 49 goal 4, BENCHMARKS.md
# "Scan")
_COLLECT_EVERY = 16


def _young_collections_only(fn: Callable[_P, ScanReport]) -> Callable[_P, ScanReport]:
    """Run ``fn`` with the automatic garbage collector off. A scan keeps tens of thousands of long-lived
    objects (tasks, reports, findings) and each automatic full collection walks all of them again:
    with 50,000 partitions that was half of the CPU time of ``scan --quick``. The scan collects the
    young generations itself (after every ``_COLLECT_EVERY`` partitions with segments), so the cyclic
    garbage of checked partitions is still freed as it goes."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> ScanReport:
        enabled = gc.isenabled()
        gc.disable()
        try:
            with shared_log_dirs():
                return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return wrapper


# Below this many seconds of checking per partition the process pool costs more than a second core gives:
# each partition sent to a worker costs the parent ~15-20 us (the task pickled, the report unpickled, its
# future handled), measured with 50,000 empty partitions (BENCHMARKS.md, issue 26), where one check takes
# ~30 us. A partition with data (its active segment read with CRCs, at least) takes milliseconds.
_POOL_MIN_S_PER_PARTITION = 100e-6
_PROBE = 4  # partitions checked here before the first decision: the run's first check pays for lazy
# imports and cold caches (~100 us, as much as the limit), so the decision is the median of the other three,
# which resists one more slow check (a garbage collection); more would check that many costly partitions of
# a deep scan one after another, not on the pool
_WINDOW = 256  # then decided again after every this many


def __getattr__(name: str) -> Any:
    """``ProcessPoolExecutor``, imported on first use (module attribute, PEP 562): multiprocessing and
    the process pool (pickle, sockets, subprocess: ~6 ms of CPU) are needed only once partitions go to a
    pool, never by a scan of a few partitions (a `scan --deep` of one big partition, issue 35)."""
    if name != "ProcessPoolExecutor":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    pool = globals().get(name)
    if pool is None:
        from concurrent.futures import ProcessPoolExecutor as pool

        globals()[name] = pool
    return pool


def _run(tasks: list[PartitionTask], jobs: int, listed: list[Listed | None]) -> Iterator[PartitionReport]:
    """Check every task: here while checks are cheap (the median time of the last few is below
    ``_POOL_MIN_S_PER_PARTITION``), the rest in a pool of ``jobs`` processes once they are not.
    ``listed``: each task's folder as listed before (see :func:`_listed`), for the checks made here."""
    tiers: Tiers = {}
    if jobs <= 1 or len(tasks) <= 1:
        for t, lt in zip(tasks, listed, strict=True):
            yield check_partition(t, lt, tiers)
        return
    done, window, first = 0, _PROBE, True
    while done < len(tasks):
        batch = tasks[done : done + window]
        times = []
        for i, t in enumerate(batch, done):
            started = time.thread_time()  # CPU: other processes on the cores do not make a check look costly
            rep = check_partition(t, listed[i], tiers)
            times.append(time.thread_time() - started)
            yield rep
        done += len(batch)
        if first and len(times) > 1:
            del times[0]  # the run's first check: lazy imports and cold caches
        first = False
        if sorted(times)[len(times) // 2] >= _POOL_MIN_S_PER_PARTITION and done < len(tasks):
            yield from _run_pool(tasks[done:], jobs)
            return
        window = _WINDOW


def _run_pool(tasks: list[PartitionTask], jobs: int) -> Iterator[PartitionReport]:
    if len(tasks) <= 1:
        for t in tasks:
            yield check_partition(t)
        return
    import multiprocessing  # see __getattr__

    ctx = multiprocessing.get_context("fork")
    chunk = max(1, min(64, len(tasks) // (jobs * 8)))
    ex = __getattr__("ProcessPoolExecutor")(
        max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
    )
    # The fork context starts every worker at the first submit, inside map(): SIGINT stays blocked
    # (pending, not lost) across the forks, so that no worker sees one before its initializer ignores it.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        results = ex.map(check_partition, tasks, chunksize=chunk)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:
        yield from results
    except BaseException:  # Ctrl-C, or the caller stopped early: no waiting for the queued partitions
        if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
            # the pool still writes to the pipes of the workers stopped here: an EPIPE there is expected,
            # never a death by SIGPIPE (read-only commands take SIGPIPE's default: cli/main.py)
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        _stop_pool(ex)
        raise
    ex.shutdown(wait=True)


def _stop_pool(ex: Any) -> None:
    """Stop a process pool at once: its workers terminated, the partitions not yet started dropped.

    ``Executor.map`` has just cancelled the futures not yet started. In Python 3.11 the pool's manager
    thread, seeing its workers die, then marks every pending future failed, the cancelled ones too, and
    ``set_exception`` on a cancelled future raises InvalidStateError in that thread: its traceback reached
    stderr before the one line of an interrupted command (3 stops in 30 here). CPython ignores that error
    there since 3.12 (gh-107219, concurrent/futures/process.py ``terminate_broken``); here it is dropped for
    that thread while the pool stops, and any other thread's exception goes to the hook as before."""
    from concurrent.futures import InvalidStateError

    manager = getattr(ex, "_executor_manager_thread", None)
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if args.thread is not manager or not issubclass(args.exc_type, InvalidStateError):
            previous(args)

    threading.excepthook = hook
    try:
        workers = list((getattr(ex, "_processes", None) or {}).values())
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
        # A worker terminated while it wrote a result leaves part of a message in the result pipe, and the
        # pool's manager thread, which had begun reading it, waits for the rest for ever: the pipe never
        # ends while this process holds a write end of it too (Python 3.11's concurrent/futures/process.py,
        # wait_result_broken_or_wakeup; Ctrl-C hung 1 scan in 10 at load 7 here). With the workers gone,
        # closing that write end ends the pipe: the read fails, and the manager marks the pool broken and
        # stops. Nothing in this process writes results.
        writer = getattr(getattr(ex, "_result_queue", None), "_writer", None)
        if writer is not None:
            writer.close()
        ex.shutdown(wait=True, cancel_futures=True)  # joins the manager thread: its exceptions are past
    finally:
        threading.excepthook = previous


def topic_config_resolver(
    log_dirs: Iterable[str | os.PathLike[str]], options: ScanOptions
) -> TopicConfigResolver:
    """The retention settings of every topic of one broker's log dirs, as ``options`` ask (scan, retention,
    census and the report all resolve them here)."""
    inputs = options.config_inputs or ConfigInputs()
    if options.retention_ms is not None:
        inputs = dataclasses.replace(
            inputs, broker_overrides={**inputs.broker_overrides, LOG_RETENTION_MS: str(options.retention_ms)}
        )
    return TopicConfigResolver.for_log_dirs(log_dirs, inputs)


@_young_collections_only
def scan(
    log_dirs: Iterable[str | os.PathLike[str]],
    options: ScanOptions,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ScanReport:
    """Scan the log dirs of one broker. Never stops on a finding; raises ScanUsageError for bad paths."""
    started = time.perf_counter()
    if options.now_ms <= 0:
        options = dataclasses.replace(options, now_ms=int(time.time() * 1000))
    paths = []
    for d in log_dirs:
        p = os.path.abspath(os.fspath(d))
        what = recognize(p)
        if not what.is_log_dir:  # never advice for what is not a log dir (a partition folder, /etc)
            raise ScanUsageError(what.refusal())
        if p not in paths:
            paths.append(p)
    reports: list[LogDirReport] = []
    dirs: list[LogDir] = []
    tasks: list[PartitionTask] = []
    listed: list[Listed | None] = []
    configs = topic_config_resolver(paths, options)
    txn_timeout = _transaction_timeout(configs)
    keep_producers = options.depth is not Depth.QUICK and (
        options.keep_producers
        or any(
            parse_partition_dir(n) is not None and n.startswith(TRANSACTION_STATE_TOPIC + "-")
            for p in paths
            for n in _names(p)
        )
    )
    remote = broker_remote_evidence(paths)
    for p in paths:
        ld = LogDir.shared(p)
        listing = _Listing.begin(ld) if options.depth is Depth.QUICK else None
        user = options.broker_user or BrokerUser.owner_of(p)
        rep = LogDirReport(p, user)
        check_root(ld, rep)
        # the broker uses an unreadable checkpoint's entries as empty (LogManager.loadLogs)
        rp_of, ls_of, hw_of, cl_of = (_usable_offsets(ld.checkpoint(n)) for n in OFFSET_CHECKPOINT_FILES)
        clean = rep.clean_shutdown
        log_kind = DirKind.LOG.value  # the live folders (no enum lookup for each of 50,000)
        for dn, path, name in ld.partition_folders:  # no Partition made for each (50,000)
            topic, partition = dn.topic, dn.partition
            meta_log = topic == METADATA_TOPIC
            tp = (topic, partition)
            tasks.append(
                PartitionTask(
                    log_dir=p,
                    path=path,
                    name=name,
                    topic=topic,
                    partition=partition,
                    kind=log_kind,
                    recovery_point=None if meta_log else rp_of.get(tp),
                    log_start_checkpoint=None if meta_log else ls_of.get(tp),
                    high_watermark=None if meta_log else hw_of.get(tp),
                    clean_shutdown=clean and not meta_log,
                    broker_user=user,
                    options=options,
                    topic_config=None if meta_log else configs.resolve(topic),
                    remote_evidence=remote,
                    transaction_timeout=txn_timeout,
                    keep_producers=keep_producers,
                    cleaner_checkpoint=None if meta_log else cl_of.get(tp),
                    live=rep.locked,
                )
            )
        here = tasks[len(listed) :]
        listed.extend(listing.of(here) if listing is not None else [None] * len(here))
        rep.partitions = len(ld.partition_folders)
        reports.append(rep)
        dirs.append(ld)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    results: list[PartitionReport] = []
    with_segments = 0  # partitions with segments since the last collection (see _COLLECT_EVERY)
    for rep_p in _run(tasks, jobs, listed):
        results.append(rep_p)
        if rep_p.segments:
            with_segments += 1
            if with_segments == _COLLECT_EVERY:
                gc.collect(1)
                with_segments = 0
        if progress is not None:
            progress(len(results), len(tasks))
    by_dir: dict[str, list[PartitionReport]] = defaultdict(list)
    for r in results:
        by_dir[r.log_dir].append(r)
    for ld, rep in zip(dirs, reports, strict=True):
        parts = by_dir[str(ld.path)]
        checkpoints_against_partitions(ld, rep, parts)
        unclean_shutdown(ld, rep, parts)
    findings: list[Finding] = [f for rep in reports for f in rep.findings]
    order = {p: i for i, p in enumerate(paths)}
    # KRaft checks per broker: the log dirs of several brokers scanned together each get their own
    # broker's metadata log (a replica of broker 2 is not "not assigned to broker 1", and another
    # cluster's metadata says nothing of this broker's topics)
    images: dict[str, MetadataImage] = {}

    def image_of(mdir: str) -> MetadataImage:
        if mdir not in images:
            from logdoctor.logdir.metadata_image import replay

            images[mdir] = replay(mdir)
        return images[mdir]

    groups = broker_groups(reports, image_of)
    image: MetadataImage | None = None
    kraft_findings: list[Finding] = []
    for group in groups:
        mdir = group.metadata_dir
        group_image = image_of(mdir) if mdir is not None else None
        image = image if image is not None else group_image
        members = set(group.dirs)
        group_parts = [r for r in results if r.log_dir in members]
        kraft_findings.extend(check_kraft(group.dirs, group_parts, group_image)[1])
        if mdir is not None:
            from logdoctor.checks.metadata_log import check_metadata_log

            kraft_findings.extend(check_metadata_log(mdir, group_image))
            _metadata_log_damage(mdir, group_image, results)
        elif group.mode == "kraft":
            kraft_findings.append(metadata_not_scanned(group))
    if len(groups) > 1 and any(g.metadata_dir is not None for g in groups):  # a controller's log gone
        from logdoctor.checks.metadata_log import controller_metadata_lost

        lost = controller_metadata_lost(groups, image_of)
        gone = {f.path for f in lost}  # its metadata log is lost, not left out of the scan: said once
        kraft_findings = [
            f
            for f in kraft_findings
            if not (f.code == "KRAFT_METADATA_NOT_SCANNED" and os.path.dirname(f.path) in gone)
        ]
        kraft_findings.extend(lost)
    findings.extend(itertools.chain.from_iterable(map(operator.attrgetter("findings"), results)))
    findings.extend(cross_dir(reports, results, groups, images, options.one_broker))
    if len(groups) > 1:  # replicas of one broker only: none to compare (checks.divergence)
        from logdoctor.checks.divergence import replicas_diverged
        from logdoctor.checks.replica_lag import replicas_lagging

        clusters = {r.path: r.cluster_id for r in reports}
        diverged = replicas_diverged(results, groups, clusters)
        findings.extend(diverged)
        # the census's lag rule, on the same replicas: a diverged replica does not lag, it loses records
        findings.extend(replicas_lagging(results, groups, clusters, {f.path for f in diverged}))
    topics = {r.topic for r in results} if options.depth is not Depth.QUICK else set()
    levels: dict[str, Any] = {}
    # each compares a coordinator's partitions with the logs: nothing without them
    if "__share_group_state" in topics:
        from logdoctor.checks.consumer_groups import clusters_of
        from logdoctor.checks.share_groups import share_groups_behind_log_start
        from logdoctor.logdir.metadata_image import cluster_features

        levels = {  # each broker's log dirs: its cluster's feature levels choose the share-group layouts
            d: cluster_features(g.metadata_dir, image_of(g.metadata_dir))
            for g in groups
            if g.metadata_dir is not None
            for d in g.dirs
        }
        findings.extend(share_groups_behind_log_start(results, clusters_of(groups), levels))
    if CONSUMER_OFFSETS_TOPIC in topics or TRANSACTION_STATE_TOPIC in topics:
        from logdoctor.checks.consumer_groups import clusters_of, offsets_out_of_range

        clusters = clusters_of(groups)
        findings.extend(offsets_out_of_range(results, clusters))
        if TRANSACTION_STATE_TOPIC in topics:
            from logdoctor.checks.transaction_state import (
                transaction_state_mismatches,
                two_phase_commit_advice,
            )

            findings.extend(transaction_state_mismatches(results, clusters))
            findings = two_phase_commit_advice(findings, results, clusters)
    findings.extend(check_disks(reports, results, options))
    findings.extend(kraft_findings)
    remote_md = remote_metadata_for_scan(paths, results, image, options.config_inputs)
    by_task = functools.cache(lambda: {(t.log_dir, t.path): t for t in tasks})  # indexed once, if needed
    _replayed_tiering(results, by_task, remote, remote_md)
    _tiered_topics(results, by_task, remote)
    index = _store_index(remote_md, options)
    findings.extend(
        check_remote_tier(paths, results, remote_md, remote_storage=options.remote_storage, index=index)
    )
    if remote_md is not None:  # the remote tier audit: the store's listing against the metadata, and what
        # the metadata and the log dirs show alone (checks.remote_store)
        from logdoctor.checks.remote_store import (
            check_metadata_retention,
            check_remote_store,
            check_upload_stalled,
        )

        findings.extend(check_remote_store(paths, results, remote_md, index))
        findings.extend(check_upload_stalled(results, remote_md, options.now_ms))
        findings.extend(check_metadata_retention(results, remote_md))
    findings.sort(key=lambda f: (_dir_index(f.path, order), *f.sort_key()))
    findings = link_consequences(findings)
    if len(order) == 1:  # one log dir: its order is the same for all (attrgetter: no Python call each)
        results.sort(key=operator.attrgetter("topic", "partition", "path"))
    else:
        results.sort(key=lambda r: (order.get(r.log_dir, 0), r.topic, r.partition, r.path))
    return ScanReport(
        depth=options.depth,
        now_ms=options.now_ms,
        log_dirs=reports,
        partitions=results,
        findings=findings,
        elapsed_s=time.perf_counter() - started,
        bytes_read=sum(r.bytes_read for r in results),
        metadata=image,
        remote=remote_md,
        features=levels,
    )


class _Listing(threading.Thread):
    """The live partition folders of a quick scan's log dir listed in one call (formats.folders: each
    folder's stat and names, its empty folders then reported without their full check, checks.partition),
    on a thread: the call makes its system calls without the GIL, while this thread checks the root and
    makes the tasks (50,000 folders: ~0.2 s of system calls beside ~0.3 s of Python)."""

    def __init__(self, root: str, names: list[str]) -> None:
        super().__init__(name="logdoctor-listing", daemon=True)
        self.root, self.names = root, names
        self.got: dict[str, Listed] = {}

    @classmethod
    def begin(cls, ld: LogDir) -> _Listing | None:
        """Started on the root's listing (None: the root cannot be listed; its checks say why)."""
        folder, log = RootEntryKind.PARTITION, DirKind.LOG
        try:
            names = [
                re.name
                for re, _p in ld.listing
                if re.kind is folder and re.partition is not None and re.partition.kind is log
            ]
        except OSError:
            return None
        listing = cls(str(ld.path), names)
        listing.start()
        return listing

    def run(self) -> None:
        try:
            self.got = dict(zip(self.names, list_folders(self.root, self.names), strict=True))
        except (OSError, MemoryError):  # each folder's check lists it, and says what it finds
            self.got = {}

    def of(self, tasks: list[PartitionTask]) -> list[Listed | None]:
        """Each task's folder as listed (None: not listed)."""
        self.join()
        got = self.got
        return [got.get(t.name) for t in tasks]


def _names(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _transaction_timeout(configs: TopicConfigResolver) -> tuple[int, str] | None:
    """transaction.max.timeout.ms of the broker's configs (None: not set, Kafka's default applies)."""
    got = configs.broker_config(TRANSACTION_MAX_TIMEOUT_MS)
    if got is None:
        return None
    value, source = got
    try:
        return int(value.strip()), source
    except ValueError:  # a metadata ConfigRecord the broker would refuse too: its default is what is known
        return None


def _store_index(md: RemoteLogMetadata | None, options: ScanOptions) -> StoreIndex | None:
    """The store's listing for the remote tier audit (None without remote log metadata or a store). An
    inventory report that cannot be read is a usage error; a --remote-storage that cannot be listed
    lists nothing (REMOTE_UPLOAD_UNFINISHED says why)."""
    if md is None or (options.remote_inventory is None and options.remote_storage is None):
        return None
    from logdoctor.checks.remote_store import store_index
    from logdoctor.logdir.store_listing import InventoryError

    try:
        return store_index(options.remote_storage, options.remote_inventory)
    except (InventoryError, OSError, ValueError) as e:
        if options.remote_inventory is not None:
            raise ScanUsageError(f"--remote-inventory {options.remote_inventory}: {e}") from None
    return None


def _replayed_tiering(
    results: list[PartitionReport],
    by_task: Callable[[], dict[tuple[str, str], PartitionTask]],
    remote: BrokerRemoteEvidence,
    metadata: RemoteLogMetadata | None,
) -> None:
    """The remote log metadata's evidence (checks.tiered, step 4 of its order, before what the log dir
    shows) for the partitions the workers judged without it: one whose COPY_SEGMENT_FINISHED segments the
    replay lists is a remote log, with its offsets as the broker loads one (logdir.offsets;
    K:storage/.../log/LogLoader.java). The partition's whole decision is taken again with it, so the
    evidence named is the first in the order."""
    if metadata is None:
        return
    tasks = by_task()
    for r in results:
        task = tasks.get((r.log_dir, r.path))
        if r.kind != DirKind.LOG.value or task is None:
            continue
        seen = remote_metadata_evidence(metadata, r.topic_id, r.topic, r.partition)
        if seen is None:
            continue
        cp = task.log_start_checkpoint
        tier = tiering(r.topic, task.topic_config, remote, cp, r.first_base_offset, seen)
        if tier.remote_log_enabled:
            r.remote_log_enabled, r.tiering_evidence = True, tier.evidence
            r.log_start_offset, r.local_log_start_offset = log_start_offsets(cp, r.first_base_offset, True)


def _tiered_topics(
    results: list[PartitionReport],
    by_task: Callable[[], dict[tuple[str, str], PartitionTask]],
    remote: BrokerRemoteEvidence,
) -> None:
    """remote.storage.enable is a topic config: where the log dir's evidence shows one partition of a
    topic tiered, every partition of that topic here is (unless a config says otherwise), with its offsets
    as the broker computes them for a remote log (logdir.offsets)."""
    tiered = {}
    log = DirKind.LOG.value  # once, not an enum attribute lookup per partition (50,000)
    for r in results:
        if r.remote_log_enabled and r.kind == log:
            tiered.setdefault(r.topic, r)
    if not tiered:  # no partition tiered: nothing to spread (the tasks not even indexed)
        return
    tasks = by_task()
    for r in results:
        src = tiered.get(r.topic)
        task = tasks.get((r.log_dir, r.path))
        if src is None or r.remote_log_enabled or r.kind != DirKind.LOG.value or task is None:
            continue
        if not could_be_tiered(r.topic, task.topic_config, remote):
            continue
        tier = topic_tiering(f"{src.topic}-{src.partition}", src.tiering_evidence)
        r.remote_log_enabled, r.tiering_evidence = True, tier.evidence
        r.log_start_offset, r.local_log_start_offset = log_start_offsets(
            task.log_start_checkpoint, r.first_base_offset, True
        )


def _metadata_log_damage(mdir: str, image: MetadataImage | None, results: list[PartitionReport]) -> None:
    """LOG_CORRUPT of the broker's own metadata log said as what it is (checks.metadata_log): its voters,
    its latest snapshot, what a truncation loses; never the generic "let it re-replicate"."""
    from logdoctor.checks.metadata_log import metadata_log_corrupt

    for r in results:
        if r.path != mdir:
            continue
        r.findings = [
            metadata_log_corrupt(f, r.log_dir, r.log_end_offset, image)
            if f.code == "LOG_CORRUPT" and f.details.get("kind") != "overlap"
            else f
            for f in r.findings
        ]


def _dir_index(path: str, order: dict[str, int]) -> int:
    return min((i for d, i in order.items() if path == d or path.startswith(d + os.sep)), default=len(order))
