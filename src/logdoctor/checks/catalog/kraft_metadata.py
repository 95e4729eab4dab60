"""Catalog entries of the KRaft metadata log: __cluster_metadata-0's records and snapshots,
quorum-state and the bootstrap checkpoint.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "METADATA_RECORD_UNREAD",
        _W,
        "a broker registration record newer than every definition logdoctor knows: the broker's last "
        "known registration was used",
        "{path}: the {record} v{version} at offset {offset} (broker {broker}) is newer than every "
        "definition logdoctor knows ({record} versions {known_versions}, from Kafka {known_in}) and no known "
        "layout reads it exactly, so the replay skipped it. A controller writes a record version only at a "
        "metadata.version every broker supports (metadata.version here: {metadata_version}): the cluster "
        "runs a Kafka newer than these definitions. The image kept broker {broker}'s last known "
        "registration (metadata offset {kept_offset}, log dirs {log_dirs}): the checks that compare broker "
        "{broker}'s log dirs with its registered directory ids (DIRECTORY_ID_DUPLICATE's fix, which "
        "metadata log a log dir belongs to) used those, and they may be stale",
        "Nothing on disk is wrong. Install a newer logdoctor, one whose definitions include {record} "
        "v{version}, and scan again; until then `logdoctor dump {path} --print-data --offsets {offset}` "
        "shows the record with its raw bytes.",
        "K:metadata/src/main/resources/common/metadata/RegisterBrokerRecord.json, "
        "BrokerRegistrationChangeRecord.json; metadata/.../controller/ClusterControlManager.java replay; "
        "server-common/.../common/MetadataVersion.java",
        cases={
            "no-earlier": Case(
                "{path}: the {record} v{version} at offset {offset} (broker {broker}) is newer than every "
                "definition logdoctor knows ({record} versions {known_versions}, from Kafka {known_in}) and "
                "no known layout reads it exactly, so the replay skipped it. A controller writes a record "
                "version only at a metadata.version every broker supports (metadata.version here: "
                "{metadata_version}): the cluster runs a Kafka newer than these definitions. Broker "
                "{broker} has no earlier registration in this metadata log: its registered log dirs are "
                "unknown, and the checks that compare its log dirs with them had nothing to compare",
            ),
        },
    ),
    Entry(
        "METADATA_SNAPSHOT_CORRUPT",
        _E,
        "a KRaft snapshot (*.checkpoint) that cannot be read: CRC, header, footer (warning: not the latest)",
        "{path} cannot be read as a KRaft snapshot ({error}): it is the latest snapshot, which the node "
        "loads at startup: the node fails",
        "If the other controllers are healthy, stop this node, move the bad snapshot out of "
        "__cluster_metadata-0 and let the node fetch the metadata again from the quorum leader; "
        "`logdoctor dump {path}` shows where it breaks.",
        "K:raft/.../snapshot/RecordsSnapshotReader.java, core/.../raft/KafkaMetadataLog.scala",
        cases={
            "older": Case(
                "{path} cannot be read as a KRaft snapshot ({error}): an older snapshot, which the node "
                "keeps until it deletes it; a follower fetching it would fail"
            ),
        },
    ),
    Entry(
        "METADATA_SNAPSHOT_MISSING",
        _E,
        "a metadata log that starts above 0 with no snapshot at or above its start",
        "the metadata log starts at offset {log_start_offset} but no snapshot reaches it (snapshots: "
        "{snapshots}): the node stops at startup ('Inconsistent snapshot state: there must be a snapshot "
        "at an offset larger then the current log start offset')",
        "Restore the missing snapshot from a backup, or (other controllers healthy) move "
        "__cluster_metadata-0 "
        "out of the log dir so the node fetches the metadata from the quorum leader.",
        "K:core/.../raft/KafkaMetadataLog.scala recoverSnapshots ('Inconsistent snapshot state')",
    ),
    Entry(
        "METADATA_SNAPSHOT_MISMATCH",
        _W,
        "a snapshot id whose epoch disagrees with the metadata log's leader epochs",
        "snapshot {snapshot} says offset {offset} is in leader epoch {epoch}, but the metadata log's "
        "leader-epoch-checkpoint puts it in epoch {log_epoch}: the snapshot and the log come from "
        "different histories (a snapshot or log copied in from another node?)",
        "Compare with the other controllers' __cluster_metadata-0 (`logdoctor dump {path}` shows the "
        "snapshot's records, and dump of the log's segments the log's); if this node's copy is the odd one, "
        "let it fetch the metadata again.",
        "K:raft/.../snapshot/Snapshots.java, raft/.../ReplicatedLog.java validateOffsetAndEpoch",
    ),
    Entry(
        "QUORUM_STATE_MISMATCH",
        _W,
        "a quorum-state that disagrees with the metadata log (epoch behind the log, leader not a voter)",
        "{path} has leader epoch {epoch} but the metadata log holds epoch {log_epoch}: the node overrides "
        "the file and starts unattached at epoch {log_epoch} ('Epoch from quorum store file ... is smaller "
        "than last written epoch'); the file was restored from an older copy or the log copied in from "
        "another node",
        "Nothing to do if the metadata log is right: the node corrects its election state at startup. If "
        "quorum-state was restored from a backup, check the rest of __cluster_metadata-0 came from the same "
        "moment.",
        "K:raft/.../raft/QuorumState.java initialize, raft/.../FileQuorumStateStore.java",
        cases={
            "role-not-a-voter": Case(
                "{path} names node {node} as {role} but its voters are {voters}: the file does not describe "
                "one quorum"
            ),
            "voters-not-the-logs": Case(
                "{path} lists voters {voters} but the metadata log's latest election (leader {leader}) was "
                "among voters {log_voters}: a 3.x node whose controller.quorum.voters differs from the file "
                "refuses to start ('Configured voter set ... is different from the voter set read from the "
                "state file'); the file or the log comes from another quorum"
            ),
            "role-not-in-voters-record": Case(
                "{path} names node {node} as {role} but the metadata log's latest VotersRecord lists voters "
                "{log_voters}: the file does not describe this log's quorum"
            ),
        },
    ),
    Entry(
        "CONTROLLER_METADATA_LOST",
        _W,
        "a controller's metadata dir with no metadata log (formatted again, or emptied) while a scanned "
        "broker holds a copy of __cluster_metadata-0",
        "{path}: node {node} is a controller of cluster {cluster} ({why}) but its log dir holds no "
        "__cluster_metadata-0 segments: its metadata log is gone. Started like this it has an empty log: "
        "if the other controllers are healthy it fetches the log from their leader; if they are lost too "
        "(a majority of the voters), the quorum's metadata (topics, configs, ACLs, SCRAM users) survives "
        "only in the brokers' copies, such as {copy} (broker {broker}, to offset {end_offset}), and empty "
        "controllers elect a leader on an empty log",
        "Do not start node {node} on this dir while the quorum is lost. If the other controllers answer, "
        "start it and it catches up from their leader. If the quorum is lost, stop every broker and rebuild "
        "the controllers from the brokers' copies (docs/quorum-rebuild.md): {rebuild} prints the plan "
        "(add --apply to write {target}){endpoint}.",
        "K:raft/.../raft/KafkaRaftClient.java (an empty voter's log), raft/.../QuorumState.java; "
        "metadata/.../controller/ClusterControlManager.java (RegisterControllerRecord); "
        "docs/quorum-rebuild.md",
    ),
    Entry(
        "CONTROLLER_QUORUM_TOO_SMALL",
        _W,
        "a KRaft controller quorum of fewer than 3 voters: the loss of one stops the cluster's metadata "
        "(census only: once per cluster)",
        "cluster {cluster}'s controller quorum has {count} voter(s) {voters} ({source}, a {kind} quorum): a "
        "leader is elected and a metadata record committed only by a majority of the voters ({majority}), "
        "so it survives the loss of no voter: with one controller gone or its disk lost, no topic, "
        "partition leader, config or ACL changes, and the brokers are fenced once their registrations "
        "time out",
        "Run at least 3 controllers (5 to survive two losses). A dynamic quorum (kraft.version 1): format "
        "each new controller with kafka-storage.sh format --no-initial-controllers, start it, and once it "
        "has caught up add it with kafka-metadata-quorum.sh add-controller (Kafka's operations guide, "
        "'Controller membership changes'; KIP-853). A static quorum (controller.quorum.voters): its voter "
        "set changes only once the cluster's kraft.version feature is upgraded to 1 (KIP-853, Kafka 4.1 "
        "on), then as a dynamic quorum's; on an older Kafka, only by a new controller.quorum.voters on "
        "every node, restarted together.",
        "K:raft/.../raft/CandidateState.java majoritySize (election), LeaderState.java (the high watermark "
        "a majority has fetched); docs/ops.html#kraft_reconfig; KIP-853",
        "fleet",
    ),
    Entry(
        "QUORUM_STATE_CORRUPT",
        _E,
        "a quorum-state file the node cannot read",
        "{path} cannot be read ({error}): the node does not start (FileQuorumStateStore.readElectionState)",
        "Stop the node and delete {path}: the node starts unattached at the log's epoch and learns the "
        "leader "
        "from the quorum (keep a copy of the file first).",
        "K:raft/.../raft/FileQuorumStateStore.java readElectionState",
    ),
    Entry(
        "BOOTSTRAP_CHECKPOINT_CORRUPT",
        _E,
        "a bootstrap.checkpoint the node cannot read",
        "{path} cannot be read ({error}): the node reads it at every start (BootstrapDirectory.read) and "
        "does not start",
        "Copy bootstrap.checkpoint from another node of the cluster (it holds the initial metadata.version "
        "and SCRAM records `kafka-storage format` wrote), or write it again with `kafka-storage format "
        "--ignore-formatted` and the same cluster id.",
        "K:metadata/.../bootstrap/BootstrapDirectory.java read; core/.../server/KafkaRaftServer.scala",
    ),
)
