package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Snapshot invariants: I9 (a snapshot is a cut of the WAL order), I4 and I5 (archive durability order). */
@Timeout(600)
class SnapshotInvariantTest {
    @TempDir
    Path dir;

    private static long seqOf(byte[] v) {
        return v == null ? 0 : ByteBuffer.wrap(v).getLong();
    }

    private static byte[] seq(long s) {
        return ByteBuffer.allocate(8).putLong(s).array();
    }

    /**
     * I9: writers keep writing while snapshots are declared. As of each snapshot every writer's value was written
     * no earlier than its last write completed before the call and no later than its last write started before
     * the return; and a writer's pair (A then B, same number) is never seen with B ahead of A.
     */
    @Test
    void aSnapshotIsACutOfTheWalOrder() throws Exception {
        int writers = 3;
        AtomicLongArray started = new AtomicLongArray(writers);
        AtomicLongArray completed = new AtomicLongArray(writers);
        AtomicBoolean stop = new AtomicBoolean();
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            Table t = store.table("cut");
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int id = w;
                Thread th = new Thread(() -> {
                    for (long s = 1; !stop.get(); s++) {
                        started.set(id, s);
                        t.put(("a" + id).getBytes(), seq(s));
                        t.put(("b" + id).getBytes(), seq(s));
                        completed.set(id, s);
                    }
                });
                threads.add(th);
                th.start();
            }
            List<long[][]> bounds = new ArrayList<>();
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                long[] lo = new long[writers];
                long[] hi = new long[writers];
                for (int w = 0; w < writers; w++) lo[w] = completed.get(w);
                ids.add(store.snapshotNow());
                for (int w = 0; w < writers; w++) hi[w] = started.get(w);
                bounds.add(new long[][]{lo, hi});
                Thread.sleep(2);
            }
            stop.set(true);
            for (Thread th : threads) th.join();
            for (int i = 0; i < ids.size(); i++) {
                try (SnapshotView v = store.asOf(ids.get(i))) {
                    for (int w = 0; w < writers; w++) {
                        long a = seqOf(v.table("cut").get(("a" + w).getBytes()));
                        long b = seqOf(v.table("cut").get(("b" + w).getBytes()));
                        long lo = bounds.get(i)[0][w];
                        long hi = bounds.get(i)[1][w];
                        assertTrue(b >= lo && a <= hi, "snapshot " + ids.get(i) + " writer " + w + ": a=" + a + " b=" + b + " outside [" + lo + ", " + hi + "]");
                        assertTrue(a == b || a == b + 1, "snapshot " + ids.get(i) + " writer " + w + " is not a cut: a=" + a + " b=" + b);
                    }
                }
            }
        }
    }

    private static int first(List<String> log, int from, String prefix) {
        for (int i = from; i < log.size(); i++) if (log.get(i).startsWith(prefix)) return i;
        return -1;
    }

    /**
     * I4 and I5: in a checkpoint whose pages had pre-states captured, the Pagelog is made durable before the
     * Maplog (data before metadata, I5), the Maplog before the Start records, and all of them before the start
     * marker — so before any page of the checkpoint can reach a page file (I4).
     */
    @Test
    void archiveIsDurableInOrderBeforeTheStartMarker() throws Exception {
        FileOpLog io = new FileOpLog();
        VarveConfig cfg = SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().checkpointFrequency(java.time.Duration.ofHours(1)).build();
        try (Varve store = Varve.open(cfg, io)) {
            DeterministicReplayTestSupport.workload(store, 0, 300);
            store.checkpoint().get();
            store.snapshotNow();
            DeterministicReplayTestSupport.workload(store, 300, 600); // changes pages: their pre-states are captured
            int from = io.ops.size();
            store.checkpoint().get();
            List<String> log = new ArrayList<>(io.ops.subList(from, io.ops.size()));
            int pagelog = first(log, 0, "force pagelog-");
            int maplog = first(log, 0, "force maplog-L0");
            int start = first(log, 0, "force snapshots.log");
            int mark = first(log, 0, "force archive-marks");
            int startMarker = -1; // the start marker's rename (recovery files are renamed into place before it)
            for (int i = 0; i < log.size() && startMarker < 0; i++) if (log.get(i).startsWith("rename cp-") && log.get(i).endsWith("-start.bin")) startMarker = i;
            int pageFile = first(log, 0, "force t0");
            assertTrue(pagelog >= 0 && maplog >= 0 && start >= 0 && mark >= 0 && startMarker >= 0 && pageFile >= 0, "all steps ran: " + log);
            assertTrue(pagelog < maplog, "I5: Pagelog durable before Maplog: " + log);
            assertTrue(maplog < start && start < mark, "Maplog before Start records before the mark record: " + log);
            assertTrue(mark < startMarker && startMarker < pageFile, "I4: archive durable before the start marker and any page-file fsync: " + log);
        }
    }
}
