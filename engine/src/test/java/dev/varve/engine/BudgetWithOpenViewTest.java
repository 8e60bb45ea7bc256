package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An open view pins everything archived after its snapshot, so no drop of a snapshot from there on gives a byte back
 * until it closes. The budget dropped them all the same, and since reclamation gave nothing back, every declaration
 * found the archive over the budget again and dropped the next in line: a view left open drained the history down to
 * the latest snapshot. The bytes of a drop a view pins now stay counted as pending until the view is closed, so the
 * budget drops what the archive grows by, and gives them back once the view is closed.
 */
@Timeout(120)
class BudgetWithOpenViewTest {
    private static final long BUDGET = 2L << 20;
    private static final long SEGMENT = 256L << 10;
    private static final int KEYS = 3000;
    @TempDir
    Path dir;

    @Test
    void aViewKeepsTheBudgetFromDrainingTheHistoryAndItsClosingLetsItDropAgain() {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1))
                .archiveSegmentSize(SEGMENT).retention(RankTreePolicy.levels(Retention.keepAll()).withBudget(BUDGET))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(key(k), new byte[100]);
            long viewed = store.snapshotNow();
            List<Long> declared = new ArrayList<>();
            try (SnapshotView view = store.asOf(viewed)) {
                for (int round = 0; round < 40; round++) {
                    for (int k = 0; k < KEYS; k += 7) t.put(key(k), new byte[]{(byte) round, 1, 2});
                    declared.add(store.snapshotNow());
                    if (round % 4 == 3) store.checkpoint().join();
                }
                assertTrue(store.metrics().archiveBytes() > 4 * BUDGET, "the view holds the archive over its budget: " + store.metrics().archiveBytes());
                List<Long> live = store.snapshots().stream().map(SnapshotInfo::id).toList();
                // the budget drops what the rounds add, as without the view (which keeps 8 or 9 here), not all but the latest
                assertTrue(live.size() >= 5 && live.containsAll(declared.subList(declared.size() - 5, declared.size())),
                        "the latest snapshots live while the view pins the archive: " + live);
                assertEquals(new byte[100].length, view.table("t").get(key(0)).length, "the view reads its snapshot");
            }
            store.snapshotNow(); // the budget drops again
            store.checkpoint().join();
            assertTrue(store.metrics().archiveBytes() <= BUDGET + 2 * SEGMENT, "back within the budget: " + store.metrics().archiveBytes());
            assertTrue(store.snapshots().size() > 1, "and what it keeps is more than the latest");
        }
    }

    private static byte[] key(int k) {
        return String.format("k%05d", k).getBytes(StandardCharsets.UTF_8);
    }
}
