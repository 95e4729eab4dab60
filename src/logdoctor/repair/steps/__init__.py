"""The step kinds of a repair plan (``Step.op``): one module per kind, each holding its operation
(a subclass of :class:`~logdoctor.repair.steps.base.Operation`) and the builder that plans its steps.

- :mod:`.base`: the contract every step kind keeps (states, idempotent apply and undo, backup before
  removal), the context the engine gives it, and the backup names of a plan.
- :mod:`.write` (``write``), :mod:`.truncate` (``truncate``), :mod:`.move` (``move``), :mod:`.rename`
  (``rename``), :mod:`.chmod` (``chmod``): the repair planner's file steps.
- :mod:`.copying`: what the copying steps share: progress, manifests of checksums in the backup dir,
  the copies this process verified.
- :mod:`.verified_copy` (``copy-tree``, ``copy-partition``, ``remove-copied``): the operator procedures'
  verified copies.
- :mod:`.mkdir` (``mkdir``), :mod:`.fetch_remote` (``fetch-remote``), :mod:`.rebuild_index`
  (``rebuild-index``): restoring a partition from the remote tier.
- :mod:`.registry`: every step kind a journal can name, by its ``op``.

A journal names its steps by ``op`` and ``params`` only (:class:`logdoctor.repair.plan.Step`), never by
module: where a step kind's code lives is free to change.
"""
