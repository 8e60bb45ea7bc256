package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The archive budget: with a policy that would keep everything, the archive stays within its budget (plus what one
 * round adds before reclamation gives whole segments back), the snapshots it drops are the oldest of the lowest rank
 * first, each says the budget dropped it, and the ones it keeps read right — also after a restart.
 */
@Timeout(300)
class BudgetTest {
    private static final long SEGMENT = 256L << 10;
    private static final long BUDGET = 4L << 20;
    private static final int KEYS = 3000;
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder().archiveSegmentSize(SEGMENT).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll()).withBudget(BUDGET)).build();
    }

    @Test
    void archiveStaysWithinItsBudgetDroppingTheLeastValuableFirst() {
        Map<Long, Integer> generationOf = new TreeMap<>();
        Map<Long, Integer> rankOf = new TreeMap<>();
        List<String> sizes = new ArrayList<>();
        long maxAfterReclaim = 0;
        try (Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("bulk");
            putAll(t, 0);
            for (int round = 1; round <= 60; round++) {
                int rank = round % 8 == 0 ? 2 : 1;
                long id = store.snapshotNow(rank);
                generationOf.put(id, round - 1);
                rankOf.put(id, rank);
                putAll(t, round); // every leaf's pre-state goes to the archive: about half a MiB a round
                store.checkpoint().join();
                long bytes = store.metrics().archiveBytes();
                maxAfterReclaim = Math.max(maxAfterReclaim, bytes);
                sizes.add(round + ": " + bytes);
                checkOrder(store, rankOf);
            }
            System.out.println("archive bytes after each round's checkpoint (budget " + BUDGET + "): " + String.join(", ", sizes));
            // a round adds ~0.35 MiB before the next declaration sees it, and reclamation frees whole segments per level
            assertTrue(maxAfterReclaim <= BUDGET + (1L << 20), "archive " + maxAfterReclaim + " bytes, budget " + BUDGET);
            long dropped = generationOf.keySet().stream().filter(id -> store.snapshots().stream().noneMatch(s -> s.id() == id)).findFirst().orElseThrow();
            SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> store.asOf(dropped));
            assertTrue(e.getMessage().contains("budget"), e.getMessage());
            checkReads(store, generationOf);
            assertEquals(List.of(), store.danglingArchiveMappings());
        }
        try (Varve reopened = Varve.open(config(RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            long dropped = generationOf.keySet().iterator().next();
            SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> reopened.asOf(dropped));
            assertTrue(e.getMessage().contains("budget"), e.getMessage());
            checkReads(reopened, generationOf);
        }
    }

    /** Lowest rank first: no rank-2 snapshot goes while an older-or-newer rank-1 one (but the latest) lives; oldest first within a rank. */
    private static void checkOrder(Varve store, Map<Long, Integer> rankOf) {
        List<Long> live = store.snapshots().stream().map(SnapshotInfo::id).collect(Collectors.toList());
        long latest = ((TreeMap<Long, Integer>) rankOf).lastKey();
        for (int rank = 1; rank <= 2; rank++) {
            int r = rank;
            List<Long> ofRank = rankOf.keySet().stream().filter(id -> rankOf.get(id) == r).collect(Collectors.toList());
            List<Long> liveOfRank = ofRank.stream().filter(live::contains).collect(Collectors.toList());
            assertEquals(ofRank.subList(ofRank.size() - liveOfRank.size(), ofRank.size()), liveOfRank, "rank " + rank + ": the oldest go first");
        }
        boolean rank2Dropped = rankOf.keySet().stream().anyMatch(id -> rankOf.get(id) == 2 && !live.contains(id));
        if (rank2Dropped) {
            assertTrue(live.stream().allMatch(id -> rankOf.get(id) == 2 || id == latest), "a rank-2 snapshot went while rank-1 ones lived: " + live);
        }
    }

    /**
     * Reads every live snapshot back. The archiver enforces the budget on its own too (once the captures of the last
     * round are written), so a snapshot listed here may be dropped before it is opened: that is allowed when the
     * budget is the reason; the latest snapshot is never dropped, so at least one is read.
     */
    private static void checkReads(Varve store, Map<Long, Integer> generationOf) {
        int read = 0;
        for (SnapshotInfo s : store.snapshots()) {
            SnapshotView view;
            try {
                view = store.asOf(s.id());
            } catch (SnapshotNotFoundException e) {
                assertTrue(e.getMessage().contains("budget"), e.getMessage());
                continue;
            }
            try (SnapshotView v = view) {
                Table t = v.table("bulk");
                for (int k = 0; k < KEYS; k += 7) assertArrayEquals(value(k, generationOf.get(s.id())), t.get(key(k)), "snapshot " + s.id() + " key " + k);
            }
            read++;
        }
        assertTrue(read > 0, "no snapshot left to read");
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int k, int generation) {
        return String.format("%06d-%06d-%s", k, generation, "x".repeat(80)).getBytes(StandardCharsets.UTF_8);
    }

    private static void putAll(Table t, int generation) {
        for (int k = 0; k < KEYS; k++) t.put(key(k), value(k, generation));
    }
}
