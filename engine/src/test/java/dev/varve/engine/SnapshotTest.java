package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * As-of reads of many snapshots, each compared with a model of the data at its declaration: while a writer keeps
 * writing and checkpoints run, after a clean restart, and after a crash in both recovery modes.
 */
@Timeout(300)
class SnapshotTest {
    @TempDir
    Path dir;

    static VarveConfig config(Path dir, RecoveryMode mode) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(3).recoveryMode(mode)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofMillis(40)).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).skippyNodeEntries(16)
                .retention(RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll(), Retention.keepAll())).walSegmentSize(4L << 20).build();
    }

    /** Applies batches [from, to) and declares a snapshot every {@code every} batches; returns id → batches it holds. */
    static Map<Long, Long> writeWithSnapshots(Varve store, long from, long to, int every) {
        Map<Long, Long> snaps = new TreeMap<>();
        for (long i = from; i < to; i++) {
            DeterministicReplayTestSupport.workload(store, i, i + 1);
            if ((i + 1) % every == 0) snaps.put(store.snapshotNow(1 + (int) (i % 3)), i + 1);
        }
        return snaps;
    }

    static void checkAll(Varve store, Map<Long, Long> snaps) {
        for (Map.Entry<Long, Long> e : snaps.entrySet()) {
            try (SnapshotView v = store.asOf(e.getKey())) {
                String d = KillWorkload.diff(v::table, KillWorkload.model(e.getValue()));
                assertNull(d, "snapshot " + e.getKey() + " (after batch " + e.getValue() + ")");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void manySnapshotsReadRightWhileWritingAfterRestartAndAfterCrash(RecoveryMode mode) throws Exception {
        Map<Long, Long> snaps = new ConcurrentHashMap<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicReference<Throwable> readerFailure = new AtomicReference<>();
        AtomicInteger concurrentChecks = new AtomicInteger();
        Varve store = Varve.open(config(dir, mode), UnforcedFileIOFactory.INSTANCE);
        Thread reader = new Thread(() -> {
            try {
                while (writing.get()) {
                    for (Map.Entry<Long, Long> e : new TreeMap<>(snaps).entrySet()) {
                        try (SnapshotView v = store.asOf(e.getKey())) {
                            String d = KillWorkload.diff(v::table, KillWorkload.model(e.getValue()));
                            if (d != null) throw new AssertionError("while writing, snapshot " + e.getKey() + ": " + d);
                            concurrentChecks.incrementAndGet();
                        }
                        if (!writing.get()) break;
                    }
                }
            } catch (Throwable t) {
                readerFailure.set(t);
            }
        });
        reader.start();
        for (long i = 0; i < 1500; i += 100) snaps.putAll(writeWithSnapshots(store, i, i + 100, 25));
        writing.set(false);
        reader.join();
        if (readerFailure.get() != null) throw new AssertionError(readerFailure.get());
        assertTrue(concurrentChecks.get() > 0, "as-of reads ran while the writer wrote");
        checkAll(store, snaps);
        assertEquals(snaps.size(), store.snapshots().size());
        assertTrue(store.metrics().archiveBytes() > 0);
        store.close();

        try (Varve reopened = Varve.open(config(dir, mode), UnforcedFileIOFactory.INSTANCE)) {
            checkAll(reopened, snaps); // clean restart
            snaps.putAll(writeWithSnapshots(reopened, 1500, 2000, 20));
            reopened.halt(); // crash: the WAL holds snaprecs and writes the archive has not made durable
        }
        RecoveryMode other = mode == RecoveryMode.WAL_PHYSICAL ? RecoveryMode.CHECKPOINT_RECOVERY_FILE : RecoveryMode.WAL_PHYSICAL;
        try (Varve recovered = Varve.open(config(dir, other), UnforcedFileIOFactory.INSTANCE)) {
            checkAll(recovered, snaps);
            assertNull(KillWorkload.diff(recovered::table, KillWorkload.model(2000)));
        }
    }

    @Test
    void viewsAreReadOnlyAndErrorsNameTheProblem() {
        try (Varve store = Varve.open(config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            store.table("early").put(b("k"), b("v1"));
            long s = store.snapshotNow();
            store.table("early").put(b("k"), b("v2"));
            store.table("late").put(b("k"), b("x"));
            SnapshotNotFoundException nf = assertThrows(SnapshotNotFoundException.class, () -> store.asOf(s + 10));
            assertTrue(nf.getMessage().contains("never declared"), nf.getMessage());
            assertThrows(IllegalArgumentException.class, () -> store.snapshotNow(4), "rank above the policy's 3 levels");
            SnapshotView v = store.asOf(s);
            assertEquals("v1", new String(v.table("early").get(b("k")), StandardCharsets.UTF_8));
            assertNull(v.table("late").get(b("k")), "a table created after the snapshot does not exist as of it");
            try (Cursor c = v.table("late").scan(null, null)) {
                assertTrue(!c.next());
            }
            assertThrows(UnsupportedOperationException.class, () -> v.table("early").put(b("k"), b("no")));
            assertThrows(UnsupportedOperationException.class, () -> v.table("early").remove(b("k")));
            v.close();
            assertThrows(IllegalStateException.class, () -> v.table("early").get(b("k")));
            assertEquals("v2", new String(store.table("early").get(b("k")), StandardCharsets.UTF_8));
            List<SnapshotInfo> infos = store.snapshots();
            assertEquals(1, infos.size());
            assertEquals(s, infos.get(0).id());
        }
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
