"""The state of one partition's check and the reads of its segments, one concept a module (lowest first:
each imports only those above it in this list):

- :mod:`.time_words`: timestamps and durations as a finding's text words them.
- :mod:`.fast_lane`: the segment walk's C fast lane (whole v2 batches without the GIL) and the walk
  threads that run it on every core, a big run's CRCs checked in slices on them.
- :mod:`.segment_walk`: the walk of one segment's batches (:func:`~.segment_walk.walk`), what it found
  (:class:`~.segment_walk.WalkResult`) and the first damage (:class:`~.segment_walk.Damage`), as the
  broker's recovery walks them.
- :mod:`.early_mappings`: a ``repair``'s big .log files mapped and populated while its modules load.
- :mod:`.kept_mappings`: the mappings a command keeps for its later reads of the same files (and adopts
  from the early ones), and what a clean CRC walk over one spares.
- :mod:`.file_records`: a segment's .log read as the scan reads it (mapped, or a chunk at a time, up to
  its listed size) and walked.
- :mod:`.partition`: :class:`~.partition.PartitionState`, the state of one partition's check: its
  report, findings, access checks and the reads it caches.

Nothing is re-exported here: import each name from its module.
"""
