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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Eager ranked segregation (Thresher): with a two-level policy, a pre-state the rank-2 snapshots need lives in level
 * 2's region, so level 1's short-lived history is reclaimed by whole segments although rank-2 snapshots live far
 * longer. Both regions plateau under a continuous write + snapshot-per-batch load, nothing is copied, no dead
 * pre-state is ever stuck behind a live one (fragmentation 0 after every round), and every live snapshot reads
 * right — after a restart and a crash too.
 */
@Timeout(300)
class RankedReclamationTest {
    @TempDir
    Path dir;

    static final long SEGMENT = 256L << 10;

    private VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder().archiveSegmentSize(SEGMENT).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(10), Retention.keepLast(4))).build();
    }

    @Test
    void bothLevelsPlateauWithoutCopying() throws Exception {
        Map<Long, Long> batchesAt = new TreeMap<>();
        List<String> table = new ArrayList<>();
        List<long[]> perLevel = new ArrayList<>();
        long batch = 0;
        Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
        for (int round = 0; round < 40; round++) {
            for (int i = 0; i < 20; i++) {
                DeterministicReplayTestSupport.workload(store, batch, batch + 1);
                batch++;
                batchesAt.put(store.snapshotNow(batch % 5 == 0 ? 2 : 1), batch);
            }
            store.checkpoint().get();
            assertEquals(0, store.metrics().archiveDeadBytes(), "round " + round + ": no dead pre-state behind a live one");
            assertEquals(0, store.metrics().archiveBytesCopiedByRanking(), "eager ranking copies nothing");
            long[] bytes = store.metrics().archiveBytesPerLevel();
            perLevel.add(bytes);
            table.add(round + ": level 1 " + bytes[0] + ", level 2 " + bytes[1] + ", reclaimed " + store.metrics().archiveBytesReclaimed());
        }
        System.out.println("archive bytes per level after each round of 20 snapshots:\n  " + String.join("\n  ", table));
        for (int level = 0; level < 2; level++) {
            int l = level;
            long early = perLevel.subList(10, 20).stream().mapToLong(b -> b[l]).max().orElseThrow();
            long late = perLevel.subList(30, 40).stream().mapToLong(b -> b[l]).max().orElseThrow();
            assertTrue(late <= early * 2, "level " + (level + 1) + " plateaus: " + table);
        }
        assertTrue(store.metrics().archiveBytesReclaimed() > 10 * SEGMENT, "whole segments were reclaimed");
        List<SnapshotInfo> live = store.snapshots();
        assertEquals(10 + 4 - countRank2AmongNewest10(live), live.size(), "the policy's snapshots: " + live);
        checkLive(store, batchesAt);
        store.close();
        try (Varve reopened = Varve.open(config(RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            checkLive(reopened, batchesAt);
            for (int i = 0; i < 25; i++) {
                DeterministicReplayTestSupport.workload(reopened, batch, batch + 1);
                batch++;
                batchesAt.put(reopened.snapshotNow(batch % 5 == 0 ? 2 : 1), batch);
            }
            reopened.halt();
        }
        try (Varve recovered = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            checkLive(recovered, batchesAt);
            System.out.println("after the crash: per level " + Arrays.toString(recovered.metrics().archiveBytesPerLevel()));
        }
    }

    /** Rank-2 snapshots among the 10 newest count at level 1 and at level 2: the live set is the union. */
    private static int countRank2AmongNewest10(List<SnapshotInfo> live) {
        int n = 0;
        for (int i = Math.max(0, live.size() - 10); i < live.size(); i++) if (live.get(i).rank() == 2) n++;
        return Math.min(n, 4);
    }

    private static void checkLive(Varve store, Map<Long, Long> batchesAt) {
        for (SnapshotInfo s : store.snapshots()) {
            try (SnapshotView v = store.asOf(s.id())) {
                assertNull(KillWorkload.diff(v::table, KillWorkload.model(batchesAt.get(s.id()))), "snapshot " + s.id() + " (rank " + s.rank() + ")");
            }
        }
    }
}
