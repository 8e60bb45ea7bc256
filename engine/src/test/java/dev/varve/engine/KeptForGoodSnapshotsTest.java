package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.varve.engine.LogCompactionRanksTest.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The docs' case of a snapshot kept for good — rank 2 under {@code keepLast(2), keepAll()}, then thousands of rank-1
 * snapshots, a checkpoint every thousand — through the store: the snapshot log keeps the records of the live
 * snapshots, not of every one declared after the kept one, and after a crash the store holds the same snapshots,
 * refuses every dropped one as dropped, and hands out the next id.
 */
@Timeout(600)
class KeptForGoodSnapshotsTest {
    private static final int STEPS = 6000;

    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir, RecoveryMode mode) {
        return LogCompactionRanksTest.config(dir, "levels", mode).toBuilder().retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepAll())).build();
    }

    private static long step(Varve s, long i) {
        return s.writeAndSnapshot(b -> b.put("t", utf8("k" + (i % 40)), utf8("v" + i)), i == 1 ? 2 : 1);
    }

    @Test
    void aSnapshotKeptForGoodDoesNotPinTheLogs() throws Exception {
        Path dir = tmp.resolve("store");
        Varve s = Varve.open(config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        for (long i = 1; i <= STEPS; i++) {
            assertEquals(i, step(s, i));
            if (i % 1000 == 0) s.checkpoint().join();
        }
        long log = Files.size(dir.resolve("archive").resolve("snapshots.log"));
        assertTrue(log < 64 << 10, "snapshots.log holds " + log + " bytes after " + STEPS + " snapshots, 3 live");
        s.halt();
        try (Varve r = Varve.open(config(dir, RecoveryMode.WAL_PHYSICAL))) {
            assertEquals(List.of(1L, STEPS - 1L, (long) STEPS), r.snapshots().stream().map(SnapshotInfo::id).toList());
            assertEquals(2, r.snapshots().get(0).rank());
            for (long id : new long[]{1, STEPS - 1, STEPS})
                try (SnapshotView v = r.asOf(id)) {
                    assertArrayEquals(utf8("v" + id), v.table("t").get(utf8("k" + (id % 40))), "snapshot " + id);
                }
            for (long id = 2; id <= STEPS - 2; id++) {
                long x = id;
                String told = assertThrows(SnapshotNotFoundException.class, () -> r.asOf(x).close()).getMessage();
                assertTrue(told.startsWith("snapshot " + id + " was dropped by the retention policy "), told);
            }
            assertEquals(STEPS - 3, r.droppedSnapshots(Integer.MAX_VALUE).size());
            String never = assertThrows(SnapshotNotFoundException.class, () -> r.asOf(STEPS + 1).close()).getMessage();
            assertTrue(never.contains("never declared (latest is " + STEPS + ")"), never);
            assertEquals(STEPS + 1, step(r, STEPS + 1), "the next id");
        }
    }

    /**
     * A view opened before its snapshot is dropped reads it whole while thousands of snapshots and log compactions
     * past the one kept for good go by: the compactions let the dropped snapshot's records go, never the declaration
     * the open view pins, so the pages changed after the drop still record their pre-states at its level.
     */
    @Test
    void aViewOpenedBeforeItsSnapshotIsDroppedReadsItThroughTheCompactions() throws Exception {
        try (Varve s = Varve.open(config(tmp.resolve("store"), RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            for (long i = 1; i <= 50; i++) step(s, i);
            try (SnapshotView v = s.asOf(50)) {
                for (long i = 51; i <= STEPS; i++) {
                    step(s, i);
                    if (i % 1000 == 0) s.checkpoint().join();
                }
                assertTrue(StoreInspector.droppedBefore(s).orElseThrow().below() > 50, "compacted past the viewed snapshot");
                assertThrows(SnapshotNotFoundException.class, () -> s.asOf(50).close(), "dropped");
                for (long m = 0; m < 40; m++) {
                    long j = 50 - Math.floorMod(50 - m, 40);
                    assertArrayEquals(utf8("v" + j), v.table("t").get(utf8("k" + m)), "key k" + m + " as of snapshot 50");
                }
            }
        }
    }
}
