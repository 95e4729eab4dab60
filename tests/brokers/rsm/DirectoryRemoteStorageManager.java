package logdoctor.test;

import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.server.log.remote.storage.*;

/** Segments as files under DIR/kafka-tiered-storage/TOPIC-P-TOPICID/ (LocalTieredStorage's layout). */
public final class DirectoryRemoteStorageManager implements RemoteStorageManager {
    private Path root;

    @Override public void configure(Map<String, ?> configs) {
        root = Paths.get(String.valueOf(configs.get("dir")), "kafka-tiered-storage");
    }

    private Path folder(RemoteLogSegmentMetadata m) {
        var tp = m.topicIdPartition();
        return root.resolve(tp.topic() + "-" + tp.partition() + "-" + tp.topicId());
    }

    private Path file(RemoteLogSegmentMetadata m, String suffix) {
        String name = String.format("%020d-%s%s", m.startOffset(), m.remoteLogSegmentId().id(), suffix);
        return folder(m).resolve(name);
    }

    @Override public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(
            RemoteLogSegmentMetadata m, LogSegmentData data) throws RemoteStorageException {
        try {
            Files.createDirectories(folder(m));
            Files.copy(data.offsetIndex(), file(m, ".index"));
            Files.copy(data.timeIndex(), file(m, ".timeindex"));
            Files.copy(data.producerSnapshotIndex(), file(m, ".snapshot"));
            if (data.transactionIndex().isPresent()) Files.copy(data.transactionIndex().get(), file(m, ".txnindex"));
            var epochs = data.leaderEpochIndex().duplicate();
            var bytes = new byte[epochs.remaining()];
            epochs.get(bytes);
            Files.write(file(m, ".leader-epoch-checkpoint"), bytes);
            Files.copy(data.logSegment(), file(m, ".log"));  // last: a .log is a finished upload
            return Optional.empty();
        } catch (IOException e) {
            throw new RemoteStorageException(e);
        }
    }

    private InputStream open(Path p, int start, int end) throws RemoteStorageException {
        try {
            byte[] all = Files.readAllBytes(p);
            int to = Math.min(all.length, end == Integer.MAX_VALUE ? all.length : end + 1);
            return new ByteArrayInputStream(all, start, Math.max(0, to - start));
        } catch (IOException e) {
            throw new RemoteResourceNotFoundException(e);
        }
    }

    @Override public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start) throws RemoteStorageException {
        return open(file(m, ".log"), start, Integer.MAX_VALUE);
    }

    @Override public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start, int end) throws RemoteStorageException {
        return open(file(m, ".log"), start, end);
    }

    @Override public InputStream fetchIndex(RemoteLogSegmentMetadata m, IndexType type) throws RemoteStorageException {
        String suffix = switch (type) {
            case OFFSET -> ".index";
            case TIMESTAMP -> ".timeindex";
            case PRODUCER_SNAPSHOT -> ".snapshot";
            case TRANSACTION -> ".txnindex";
            case LEADER_EPOCH -> ".leader-epoch-checkpoint";
        };
        return open(file(m, suffix), 0, Integer.MAX_VALUE);
    }

    @Override public void deleteLogSegmentData(RemoteLogSegmentMetadata m) throws RemoteStorageException {
        try (var files = Files.list(folder(m))) {
            String prefix = String.format("%020d-%s", m.startOffset(), m.remoteLogSegmentId().id());
            for (Path p : (Iterable<Path>) files.filter(f -> f.getFileName().toString().startsWith(prefix))::iterator) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // nothing uploaded
        } catch (IOException e) {
            throw new RemoteStorageException(e);
        }
    }

    @Override public void close() {}
}
