package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lazy ranking and the hybrid page window: a snapshot raised after its declaration reads right while it is still
 * page-based at its declared level, while an open view straddles its copy, after the checkpoint that copies it into
 * its new level as byte-range diffs (and after a second raise copies it out again), at every step across the window
 * boundary, after its old level has reclaimed everything it used to read there, and after a restart.
 */
@Timeout(600)
class LazyRankingTest {
    private static final int WINDOW = 3;
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder().checkpointFrequency(Duration.ofHours(1)).archiveSegmentSize(256L << 10)
                .snapshotPageWindow(WINDOW)
                .retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(4), Retention.keepAll())).build();
    }

    @Test
    void reRankedSnapshotsReadRightBeforeDuringAndAfterTheirCopy() {
        Map<Long, Long> batchesAt = new TreeMap<>();
        long batch;
        long v;
        long u;
        long w;
        try (Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            VarveMetrics m = store.metrics();
            DeterministicReplayTestSupport.workload(store, 0, 28);
            w = store.snapshotNow(2); // eager: level 2's page-based pre-states of w are the diff bases for v
            batchesAt.put(w, 28L);
            DeterministicReplayTestSupport.workload(store, 28, 30);
            v = store.snapshotNow(1);
            batchesAt.put(v, 30L);
            DeterministicReplayTestSupport.workload(store, 30, 60); // changes most pages after v: level 1 holds their pre-states
            store.rank(v, 2);
            store.checkpoint().join();
            assertEquals(0, m.archiveBytesCopiedByRanking(), "inside the window a rank change copies nothing");
            check(store, v, 30);
            SnapshotView straddling = store.asOf(v); // opened page-based, read after the copy too
            batch = 60;
            for (int i = 0; i < WINDOW; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 2);
                batch += 2;
                batchesAt.put(store.snapshotNow(1), batch);
            }
            store.checkpoint().join(); // v has left the window: copied into level 2
            long copied = m.archiveBytesCopiedByRanking();
            double r = m.diffCompactness();
            System.out.printf("lazy ranking copied %d bytes, R = %.3f%n", copied, r);
            assertTrue(copied > 0, "the checkpoint after the window copied the re-ranked snapshot");
            assertTrue(r > 0 && r < 0.5, "diffs against level 2's pages are much smaller than the pages: R = " + r);
            check(store, v, 30);
            assertNull(KillWorkload.diff(straddling::table, KillWorkload.model(30)), "a view opened before the copy");
            straddling.close();

            // raised right after its declaration, x has nothing to copy: level 2 records every page it needs
            long x = store.snapshotNow(1);
            batchesAt.put(x, batch);
            store.rank(x, 2);
            long copiedBefore = m.archiveBytesCopiedByRanking();

            // across the window boundary: u is read after every declaration and checkpoint, on both sides of its copy
            u = store.snapshotNow(1);
            batchesAt.put(u, batch);
            DeterministicReplayTestSupport.workload(store, batch, batch + 4); // what its copy brings over
            batch += 4;
            store.rank(u, 2);
            for (int i = 0; i <= WINDOW + 1; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 3);
                batch += 3;
                batchesAt.put(store.snapshotNow(1), batch);
                store.checkpoint().join();
                check(store, u, batchesAt.get(u));
            }
            assertTrue(m.archiveBytesCopiedByRanking() > copiedBefore, "u was copied when it left the window");
            check(store, x, batchesAt.get(x));
            assertTrue(store.snapshots().stream().anyMatch(s -> s.id() == x));

            // dozens more snapshots, one of rank 2: level 2 (keepLast(4) of w, v, x, u, it) drops w, whose pre-states are
            // v's diff bases, and
            // level 1 drops everything v and u used to read there; both levels reclaim whole segments around them
            long reclaimed = m.archiveBytesReclaimed();
            for (int i = 0; i < 40; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 3);
                batch += 3;
                batchesAt.put(store.snapshotNow(i == 3 ? 2 : 1), batch);
                if (i % 5 == 4) store.checkpoint().join();
            }
            store.checkpoint().join();
            assertTrue(m.archiveBytesReclaimed() > reclaimed, "whole segments were reclaimed");
            assertTrue(store.snapshots().stream().noneMatch(s -> s.id() == w), "level 2 dropped w");
            check(store, v, 30);
            check(store, u, batchesAt.get(u));

            // a second raise after the window copies v out of its level-2 extent into level 3
            long before = m.archiveBytesCopiedByRanking();
            store.rank(v, 3);
            store.checkpoint().join();
            assertTrue(m.archiveBytesCopiedByRanking() > before, "the raise after the window copied v again");
            check(store, v, 30);
            assertEquals(List.of(), store.danglingArchiveMappings(), "I8 with ranked extents");
        }
        try (Varve reopened = Varve.open(config(RecoveryMode.WAL_PHYSICAL))) {
            check(reopened, v, 30);
            check(reopened, u, batchesAt.get(u));
            for (SnapshotInfo s : reopened.snapshots()) check(reopened, s.id(), batchesAt.get(s.id()));
            assertEquals(List.of(), reopened.danglingArchiveMappings());
        }
    }

    /**
     * The diff bases a copy uses are the page-based pre-states of an older snapshot of the new level; when the policy
     * drops that one, its segments must stay while the copy lives (the extent pins them), and go once it is gone.
     */
    @Test
    void diffBasesOutliveTheSnapshotTheyBelongTo() {
        try (Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            VarveMetrics m = store.metrics();
            Table t = store.table("bulk");
            putAll(t, 0);
            long w = store.snapshotNow(2);
            putAll(t, 1); // every leaf's generation-0 image goes to level 2's volume for w: a few whole segments
            long v = store.snapshotNow(1);
            putAll(t, 2); // and its generation-1 image to level 1 for v
            store.rank(v, 2);
            for (int i = 0; i < WINDOW; i++) store.snapshotNow(1);
            long reclaimed = m.archiveBytesReclaimed();
            store.checkpoint().join(); // v is copied: generation 1 as diffs against w's generation-0 pages
            assertTrue(m.archiveBytesReclaimed() > reclaimed, "level 1 reclaimed what v read there before its copy");
            double r = m.diffCompactness();
            System.out.printf("one changed byte per 100-byte value: R = %.4f, %d bytes copied%n", r, m.archiveBytesCopiedByRanking());
            assertTrue(r < 0.1, "a page of values that each changed in one byte diffs to a small fraction of the page: " + r);
            for (int i = 0; i < 3; i++) store.snapshotNow(2); // level 2 keeps v and these three: w is dropped
            assertTrue(store.snapshots().stream().noneMatch(s -> s.id() == w));
            putAll(t, 3); // new level-2 segments, so w's are no longer the ones being written
            store.snapshotNow(1);
            putAll(t, 4); // and new level-1 segments
            store.checkpoint().join();
            store.checkpoint().join(); // w's level-2 segments are unreachable by any snapshot but hold v's diff bases
            try (SnapshotView past = store.asOf(v)) {
                Table pt = past.table("bulk");
                for (int k = 0; k < BULK_KEYS; k++) assertArrayEquals(value(k, 1), pt.get(key(k)), "key " + k + " as of v");
            }
            assertEquals(List.of(), store.danglingArchiveMappings());
            long reclaimedWhileCopyLived = m.archiveBytesReclaimed();

            for (int i = 0; i < 3; i++) store.snapshotNow(2); // v is dropped: its extent goes, and with it the pin on w's pages
            assertTrue(store.snapshots().stream().noneMatch(s -> s.id() == v));
            putAll(t, 5);
            store.checkpoint().join();
            store.checkpoint().join();
            assertTrue(m.archiveBytesReclaimed() > reclaimedWhileCopyLived, "w's level-2 segments went once the copy was gone");
            try (var files = java.nio.file.Files.walk(dir)) {
                assertEquals(0, files.filter(f -> f.getFileName().toString().startsWith("extent-")).count(), "v's extent was deleted");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            assertEquals(List.of(), store.danglingArchiveMappings());
        }
    }

    private static final int BULK_KEYS = 3000;

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A 100-byte value whose last byte is the generation: one changed byte per value from one generation to the next. */
    private static byte[] value(int k, int generation) {
        byte[] v = new byte[100];
        java.util.Arrays.fill(v, (byte) (k * 31));
        v[99] = (byte) generation;
        return v;
    }

    private static void putAll(Table t, int generation) {
        for (int k = 0; k < BULK_KEYS; k++) t.put(key(k), value(k, generation));
    }

    private static void check(Varve store, long id, long batches) {
        try (SnapshotView view = store.asOf(id)) {
            assertNull(KillWorkload.diff(view::table, KillWorkload.model(batches)), "snapshot " + id + " as of " + batches + " batches");
        }
    }
}
