package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reclamation under a continuous write + snapshot-per-batch load with a bounded policy: whole archive segments go
 * once no live snapshot or open view can reach them, so the archive plateaus; every live snapshot still reads
 * right, an open view keeps its snapshot readable after the policy drops it, and all of it survives a restart and
 * a crash.
 */
@Timeout(300)
class ReclamationTest {
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder().archiveSegmentSize(256L << 10).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(8))).build();
    }

    @Test
    void archivePlateausAndLiveSnapshotsReadRight() throws Exception {
        Map<Long, Long> batchesAt = new TreeMap<>();
        List<Long> archiveBytes = new ArrayList<>();
        long batch = 0;
        Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
        SnapshotView pinned = null;
        long pinnedId = -1;
        for (int round = 0; round < 40; round++) {
            for (int i = 0; i < 20; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 1);
                batch++;
                batchesAt.put(store.snapshotNow(), batch);
            }
            if (round == 20) { // a reader holds the oldest live snapshot while the policy moves past it
                pinnedId = store.snapshots().get(0).id();
                pinned = store.asOf(pinnedId);
            }
            store.checkpoint().get();
            archiveBytes.add(store.metrics().archiveBytes());
            if (round == 25) {
                long id = pinnedId;
                assertThrows(SnapshotNotFoundException.class, () -> store.asOf(id), "the policy dropped it");
                assertNull(KillWorkload.diff(pinned::table, KillWorkload.model(batchesAt.get(pinnedId))), "the open view still reads its snapshot");
                assertTrue(archiveBytes.get(25) > 2 * archiveBytes.get(19), "nothing is reclaimed under an open view: " + archiveBytes);
                pinned.close();
            }
        }
        System.out.println("archive bytes after each round of 20 snapshots: " + archiveBytes + "; reclaimed " + store.metrics().archiveBytesReclaimed());
        long plateau = archiveBytes.subList(5, 20).stream().max(Long::compare).orElseThrow();
        long afterPin = archiveBytes.subList(30, 40).stream().max(Long::compare).orElseThrow();
        assertTrue(store.metrics().archiveBytesReclaimed() > 0, "whole segments were reclaimed");
        // Pagelog segments are reclaimed; the Maplog (32 bytes a mapping) is not yet, hence the headroom
        assertTrue(afterPin <= plateau * 2, "the archive plateaus again once the view closed: " + archiveBytes);
        assertEquals(8, store.snapshots().size());
        checkLive(store, batchesAt);
        store.close();
        try (Varve reopened = Varve.open(config(RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            checkLive(reopened, batchesAt);
            for (int i = 0; i < 30; i++) {
                DeterministicReplayTestSupport.workload(reopened, batch, batch + 1);
                batch++;
                batchesAt.put(reopened.snapshotNow(), batch);
            }
            reopened.checkpoint().get();
            checkLive(reopened, batchesAt);
            reopened.halt();
        }
        try (Varve recovered = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            assertEquals(8, recovered.snapshots().size());
            checkLive(recovered, batchesAt);
        }
    }

    /**
     * The archiver writes pre-states while checkpoints force and reclaim the same archive: with small segments and
     * a checkpoint every few milliseconds their writes meet at segment boundaries. Nothing may fail, and every live
     * snapshot reads right.
     */
    @Test
    @Timeout(300)
    void archiverAndCheckpointsMeetAtSegmentBoundaries() throws Exception {
        VarveConfig cfg = config(RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().checkpointFrequency(Duration.ofMillis(3)).build();
        Map<Long, Long> batchesAt = new TreeMap<>();
        try (Varve store = Varve.open(cfg, UnforcedFileIOFactory.INSTANCE)) {
            // until enough checkpoints met the archiver (no wall-clock bound: a loaded machine only takes longer)
            for (long batch = 0; store.metrics().checkpointsCompleted() <= 20 || store.metrics().archiveBytesReclaimed() == 0; ) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 1);
                batch++;
                batchesAt.put(store.snapshotNow(), batch);
            }
            store.checkpoint().get();
            assertTrue(store.metrics().checkpointsCompleted() > 20, "checkpoints ran meanwhile: " + store.metrics().checkpointsCompleted());
            assertTrue(store.metrics().archiveBytesReclaimed() > 0, "segments were created and reclaimed meanwhile");
            checkLive(store, batchesAt);
        }
    }

    private static void checkLive(Varve store, Map<Long, Long> batchesAt) {
        for (SnapshotInfo s : store.snapshots()) {
            try (SnapshotView v = store.asOf(s.id())) {
                assertNull(KillWorkload.diff(v::table, KillWorkload.model(batchesAt.get(s.id()))), "snapshot " + s.id());
            }
        }
    }
}
