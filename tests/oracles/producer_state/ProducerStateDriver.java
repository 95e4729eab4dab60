package logdoctor.oracle;

import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AbortedTxn;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import org.apache.kafka.storage.internals.log.*;

/**
 * Kafka's own producer state over one segment, three ways (tests/producer_state_oracle.py runs it):
 *
 * recover: as LogLoader.recoverSegment, UnifiedLog.rebuildProducerState up to the segment's base offset
 *   (the snapshot there), then LogSegment.recover;
 * load: as a starting broker, UnifiedLog.rebuildProducerState from the snapshot to the log end;
 * open: the partition folder opened as a broker opens it after an unclean shutdown (UnifiedLog.create:
 *   LogLoader recovers every segment from recovery point 0, then rebuilds the producer state), end to end.
 *
 * recover and load each run twice on copies of the files: Kafka's own method (the truth for the end state) and a
 * walk of the same steps through Kafka's public pieces (LogSegment.updateProducerState's for recover,
 * UnifiedLog.loadProducersFromRecords' for load), which sees what the method keeps to itself (each
 * completed transaction and its last stable offset, the batch an exception came from). The walk's end
 * state must equal the method's: "walk_differs" names what does not.
 *
 * Input lines (a file named by the only argument): name, log file, base offset, snapshot file or "-",
 * now in ms, producer.id.expiration.ms, log start offset, tab separated. Output: one line
 * "RESULT {json}" per case.
 */
public final class ProducerStateDriver {
    static final TopicPartition TP = new TopicPartition("t", 0);
    static final int MAX_TXN_TIMEOUT_MS = 900_000;

    record Case(String name, Path log, long base, Path snapshot, long now, int expirationMs, long logStart) {}

    record Run(ProducerStateManager psm, long logEnd, Map<String, Object> out) {}

    static Map<String, Object> open(Case c, Path root) throws Exception {
        File dir = folder(c, root);
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        BrokerTopicStats stats = new BrokerTopicStats();
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            UnifiedLog log = UnifiedLog.create(dir, new LogConfig(new HashMap<>()), c.logStart, 0L, scheduler, stats,
                    clock(c.now), MAX_TXN_TIMEOUT_MS, new ProducerStateManagerConfig(c.expirationMs, false), 600_000,
                    new LogDirFailureChannel(1), false, Optional.empty());
            out.put("raised", null);
            out.put("log_end_offset", log.logEndOffset());
            out.putAll(state(log.producerStateManager(), log.logEndOffset()));
            log.close();
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null) cause = cause.getCause();
            out.put("raised", Map.of("exception", e.getClass().getSimpleName(),
                    "cause", cause.getClass().getSimpleName()));
        } finally {
            scheduler.shutdown();
            stats.close();
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("producer-state-driver");
        try {
            for (String line : Files.readAllLines(Paths.get(args[0]))) {
                if (line.isBlank()) continue;
                String[] f = line.split("\t");
                Case c = new Case(f[0], Paths.get(f[1]), Long.parseLong(f[2]),
                        f[3].equals("-") ? null : Paths.get(f[3]), Long.parseLong(f[4]), Integer.parseInt(f[5]),
                        Long.parseLong(f[6]));
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("name", c.name);
                out.put("recover", recover(c, work.resolve(c.name + "-recover")));
                out.put("load", load(c, work.resolve(c.name + "-load")));
                out.put("open", open(c, work.resolve(c.name + "-open")));
                System.out.println("RESULT " + json(out));
            }
        } finally {
            try (var walk = Files.walk(work)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    static Time clock(long now) {
        return new Time() {
            public long milliseconds() { return now; }
            public long nanoseconds() { return now * 1_000_000L; }
            public void sleep(long ms) {}
        };
    }

    /** A partition folder holding the case's segment (and its snapshot at the base offset). */
    static File folder(Case c, Path root) throws IOException {
        Path dir = root.resolve("t-0");
        Files.createDirectories(dir);
        Files.copy(c.log, dir.resolve(String.format("%020d.log", c.base)));
        if (c.snapshot != null) Files.copy(c.snapshot, dir.resolve(String.format("%020d.snapshot", c.base)));
        return dir.toFile();
    }

    static ProducerStateManager manager(File dir, Case c) throws IOException {
        return new ProducerStateManager(TP, dir, MAX_TXN_TIMEOUT_MS,
                new ProducerStateManagerConfig(c.expirationMs, false), clock(c.now));
    }

    static LogSegments segments(File dir, Case c) throws IOException {
        LogSegments segs = new LogSegments(TP);
        segs.add(LogSegment.open(dir, c.base, new LogConfig(new HashMap<>()), clock(c.now), true, 0, false, ""));
        return segs;
    }

    /** The offset after the last batch of the file, CRC unchecked (as the broker reads before recovery). */
    static long logEnd(File dir, Case c) throws IOException {
        long end = c.base;
        try (FileRecords records = FileRecords.open(new File(dir, String.format("%020d.log", c.base)))) {
            for (RecordBatch b : records.batches()) end = b.lastOffset() + 1;
        }
        return end;
    }

    static Map<String, Object> recover(Case c, Path root) throws IOException {
        // Kafka's method
        File dir = folder(c, root.resolve("kafka"));
        ProducerStateManager psm = manager(dir, c);
        LogSegments segs = segments(dir, c);
        LogSegment seg = segs.values().iterator().next();
        UnifiedLog.rebuildProducerState(psm, segs, c.logStart, c.base, clock(c.now), false, "");
        Map<String, Object> kafka = new LinkedHashMap<>();
        int sizeBefore = seg.size();
        try {
            int truncated = seg.recover(psm, null);  // no leader epoch cache: the table's batches have none
            kafka.put("valid_bytes", sizeBefore - truncated);
        } catch (RuntimeException e) {
            kafka.put("raised", e.getClass().getSimpleName());
        }
        List<Object> index = new ArrayList<>();
        for (AbortedTxn t : seg.txnIndex().allAbortedTxns())
            index.add(List.of(t.producerId(), t.firstOffset(), t.lastOffset(), t.lastStableOffset()));
        long end = seg.readNextOffset();
        kafka.put("state", state(psm, end));
        segs.close();

        // the walk: LogSegment.recover's loop and updateProducerState, through the same public pieces
        File wdir = folder(c, root.resolve("walk"));
        ProducerStateManager wpsm = manager(wdir, c);
        LogSegments wsegs = segments(wdir, c);
        UnifiedLog.rebuildProducerState(wpsm, wsegs, c.logStart, c.base, clock(c.now), false, "");
        wsegs.close();
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> completed = new ArrayList<>();
        List<Object> walkIndex = new ArrayList<>();
        int batches = 0, validBytes = 0;
        Object stopped = null, raised = null;
        try (FileRecords records = FileRecords.open(new File(wdir, String.format("%020d.log", c.base)))) {
            for (RecordBatch b : records.batches()) {
                try {
                    b.ensureValid();
                    validBytes += b.sizeInBytes();
                    if (b.magic() < RecordBatch.MAGIC_VALUE_V2) {
                        batches++;
                        continue;
                    }
                    if (b.hasProducerId()) {
                        ProducerAppendInfo info = wpsm.prepareUpdate(b.producerId(), AppendOrigin.REPLICATION);
                        Optional<CompletedTxn> done = info.append(b, Optional.empty());
                        wpsm.update(info);
                        if (done.isPresent()) {
                            CompletedTxn t = done.get();
                            long lso = wpsm.lastStableOffset(t);
                            completed.add(txn(t, lso));
                            if (t.isAborted())
                                walkIndex.add(List.of(t.producerId(), t.firstOffset(), t.lastOffset(), lso));
                            wpsm.completeTxn(t);
                        }
                    }
                    wpsm.updateMapEndOffset(b.lastOffset() + 1);
                    batches++;
                } catch (org.apache.kafka.common.errors.CorruptRecordException
                         | org.apache.kafka.common.InvalidRecordException e) {  // what recover catches
                    stopped = Map.of("offset", b.baseOffset(), "exception", e.getClass().getSimpleName());
                    break;
                } catch (RuntimeException e) {
                    raised = Map.of("offset", b.baseOffset(), "exception", e.getClass().getSimpleName(),
                            "message", String.valueOf(e.getMessage()));
                    break;
                }
            }
        }
        out.put("batches", batches);
        out.put("stopped", stopped);
        out.put("raised", raised);
        out.put("valid_bytes", raised == null ? validBytes : null);  // raised: recover truncates nothing
        out.put("completed", completed);
        out.put("aborted_index", index);
        Map<String, Object> walked = state(wpsm, end);
        out.putAll(walked);
        List<String> differs = new ArrayList<>();
        if (!index.equals(walkIndex)) differs.add("aborted_index " + walkIndex);
        if (!Objects.equals(kafka.get("raised"), raised == null ? null : ((Map<?, ?>) raised).get("exception")))
            differs.add("raised " + kafka.get("raised"));
        if (raised == null && !Objects.equals(kafka.get("valid_bytes"), validBytes))
            differs.add("valid_bytes " + kafka.get("valid_bytes"));
        if (!kafka.get("state").equals(walked)) differs.add("state " + json(kafka.get("state")));
        out.put("walk_differs", differs);
        return out;
    }

    static Map<String, Object> load(Case c, Path root) throws IOException {
        // Kafka's method
        File dir = folder(c, root.resolve("kafka"));
        long end = logEnd(dir, c);
        ProducerStateManager psm = manager(dir, c);
        LogSegments segs = segments(dir, c);
        String kafkaRaised = null;
        try {
            UnifiedLog.rebuildProducerState(psm, segs, c.logStart, end, clock(c.now), false, "");
        } catch (RuntimeException e) {
            kafkaRaised = e.getClass().getSimpleName();
        }
        segs.close();

        // the walk: truncateAndReload, then loadProducersFromRecords over the segment read from the snapshot
        File wdir = folder(c, root.resolve("walk"));
        ProducerStateManager wpsm = manager(wdir, c);
        LogSegments wsegs = segments(wdir, c);
        LogSegment seg = wsegs.values().iterator().next();
        wpsm.truncateAndReload(c.logStart, end, c.now);
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> completed = new ArrayList<>();
        int batches = 0;
        Object raised = null;
        long start = Math.max(Math.max(seg.baseOffset(), wpsm.mapEndOffset()), c.logStart);
        FetchDataInfo read = end > start ? seg.read(start, Integer.MAX_VALUE, seg.size()) : null;
        if (read != null) {
            Map<Long, ProducerAppendInfo> loaded = new HashMap<>();
            List<CompletedTxn> done = new ArrayList<>();
            try {
                for (RecordBatch b : read.records.batches()) {
                    if (b.hasProducerId()) {
                        Optional<CompletedTxn> t = UnifiedLog.updateProducers(wpsm, b, loaded, Optional.empty(),
                                AppendOrigin.REPLICATION, (short) 0);
                        t.ifPresent(done::add);
                    }
                    batches++;
                }
                loaded.values().forEach(wpsm::update);
                done.forEach(wpsm::completeTxn);
                for (CompletedTxn t : done) completed.add(txn(t, null));
            } catch (RuntimeException e) {
                RecordBatch failed = null;
                int i = 0;
                for (RecordBatch b : read.records.batches()) if (i++ == batches) { failed = b; break; }
                raised = Map.of("offset", failed == null ? -1 : failed.baseOffset(),
                        "exception", e.getClass().getSimpleName(), "message", String.valueOf(e.getMessage()));
            }
        }
        wpsm.updateMapEndOffset(end);
        wsegs.close();
        out.put("batches", batches);
        out.put("raised", raised);
        out.put("completed", completed);
        Map<String, Object> walked = state(wpsm, end), kafka = state(psm, end);
        out.putAll(walked);
        List<String> differs = new ArrayList<>();
        if (!Objects.equals(kafkaRaised, raised == null ? null : ((Map<?, ?>) raised).get("exception")))
            differs.add("raised " + kafkaRaised);
        if (kafkaRaised == null && !kafka.equals(walked)) differs.add("state " + json(kafka));
        out.put("walk_differs", differs);
        return out;
    }

    static Map<String, Object> txn(CompletedTxn t, Long lso) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("producer_id", t.producerId());
        m.put("first_offset", t.firstOffset());
        m.put("last_offset", t.lastOffset());
        m.put("aborted", t.isAborted());
        if (lso != null) m.put("lso", lso);
        return m;
    }

    /** The producers' entries and the first unstable offset with the high watermark at the log end. */
    static Map<String, Object> state(ProducerStateManager psm, long logEnd) {
        Map<String, Object> producers = new TreeMap<>();
        for (ProducerStateEntry e : psm.activeProducers().values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            BatchMetadata last = null;
            for (BatchMetadata b : e.batchMetadata()) last = b;
            m.put("producer_epoch", (int) e.producerEpoch());
            m.put("last_sequence", last == null ? -1 : last.lastSeq());
            m.put("last_offset", e.lastDataOffset());
            m.put("last_timestamp", e.lastTimestamp());
            m.put("coordinator_epoch", e.coordinatorEpoch());
            OptionalLong txn = e.currentTxnFirstOffset();
            m.put("current_txn_first_offset", txn.isPresent() ? txn.getAsLong() : null);
            producers.put(String.valueOf(e.producerId()), m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("producers", producers);
        out.put("first_unstable_offset_before_hw", psm.firstUnstableOffset().map(o -> o.messageOffset).orElse(null));
        psm.onHighWatermarkUpdated(logEnd);
        out.put("first_unstable_offset", psm.firstUnstableOffset().map(o -> o.messageOffset).orElse(null));
        return out;
    }

    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char ch : s.toCharArray()) {
                if (ch == '"' || ch == '\\') b.append('\\').append(ch);
                else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
                else b.append(ch);
            }
            return b.append('"').toString();
        }
        if (o instanceof Map<?, ?> m) {
            StringJoiner j = new StringJoiner(", ", "{", "}");
            m.forEach((k, v) -> j.add(json(String.valueOf(k)) + ": " + json(v)));
            return j.toString();
        }
        if (o instanceof Collection<?> l) {
            StringJoiner j = new StringJoiner(", ", "[", "]");
            l.forEach(v -> j.add(json(v)));
            return j.toString();
        }
        return String.valueOf(o);  // numbers, booleans
    }
}
