package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rank-tree retention: hundreds of snapshots of random ranks, some raised lazily; after each declaration the live
 * ones are exactly those the policy keeps (computed here independently), after a restart and after a crash too, and
 * every live one reads right as of its declaration. A dropped one says it was dropped, and by which rules.
 */
@Timeout(300)
class RetentionPolicyTest {
    @TempDir
    Path dir;

    private static final int[] KEEP_LAST = {6, 3}; // level 1 keeps the 6 newest, level 2 the 3 newest of rank >= 2; level 3 all

    private VarveConfig config(RecoveryMode mode) {
        return SnapshotTest.config(dir, mode).toBuilder()
                .retention(RankTreePolicy.levels(Retention.keepLast(KEEP_LAST[0]), Retention.keepLast(KEEP_LAST[1]), Retention.keepAll())).build();
    }

    /** The policy read literally: a snapshot lives while some level up to its rank has it among its newest. */
    private static TreeSet<Long> expectedLive(Map<Long, Integer> ranks) {
        TreeSet<Long> live = new TreeSet<>();
        for (int level = 1; level <= 3; level++) {
            int lv = level;
            List<Long> counted = ranks.entrySet().stream().filter(e -> e.getValue() >= lv).map(Map.Entry::getKey).sorted().collect(Collectors.toList());
            int keep = level == 3 ? Integer.MAX_VALUE : KEEP_LAST[level - 1];
            for (int i = Math.max(0, counted.size() - keep); i < counted.size(); i++) live.add(counted.get(i));
        }
        return live;
    }

    private static TreeSet<Long> live(Varve store) {
        return store.snapshots().stream().map(SnapshotInfo::id).collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void exactlyThePolicysSnapshotsLiveAndReadRight() {
        Random rnd = new Random(11);
        Map<Long, Integer> ranks = new TreeMap<>(); // every snapshot declared, with its current rank
        Map<Long, Long> batchesAt = new TreeMap<>();
        Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        long batch = 0;
        for (int i = 0; i < 300; i++) {
            DeterministicReplayTestSupport.workload(store, batch, batch + 2);
            batch += 2;
            int rank = rnd.nextInt(10) < 7 ? 1 : rnd.nextInt(10) < 7 ? 2 : 3;
            long id = store.snapshotNow(rank);
            ranks.put(id, rank);
            batchesAt.put(id, batch);
            TreeSet<Long> want = expectedLive(ranks);
            if (rnd.nextInt(8) == 0) { // lazy ranking of a live snapshot
                List<Long> candidates = new ArrayList<>(want);
                long bump = candidates.get(rnd.nextInt(candidates.size()));
                if (ranks.get(bump) < 3) {
                    store.rank(bump, ranks.get(bump) + 1);
                    ranks.put(bump, ranks.get(bump) + 1);
                    want = expectedLive(ranks);
                }
            }
            // drops are final: a snapshot dropped earlier stays dropped even if the literal reading would keep it
            TreeSet<Long> got = live(store);
            assertTrue(want.containsAll(got), "after snapshot " + id + ": live " + got + " but the policy keeps only " + want);
            for (long d : new TreeSet<>(ranks.keySet())) if (!got.contains(d)) ranks.remove(d);
            assertEquals(expectedLive(ranks), got, "after snapshot " + id);
        }
        TreeSet<Long> live = live(store);
        assertTrue(live.size() > KEEP_LAST[0] + KEEP_LAST[1], "rank-3 snapshots accumulate: " + live.size());
        checkReads(store, live, batchesAt);
        long droppedId = batchesAt.keySet().stream().filter(x -> !live.contains(x)).findFirst().orElseThrow();
        SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> store.asOf(droppedId));
        assertTrue(e.getMessage().contains("dropped") && e.getMessage().contains("keepLast(6)"), e.getMessage());
        assertThrows(SnapshotNotFoundException.class, () -> store.rank(droppedId, 3));
        store.close();

        try (Varve reopened = Varve.open(config(RecoveryMode.WAL_PHYSICAL))) {
            assertEquals(live, live(reopened), "after a restart");
            checkReads(reopened, live, batchesAt);
            assertThrows(SnapshotNotFoundException.class, () -> reopened.asOf(droppedId));
            long id = reopened.snapshotNow(3); // moves the level-1 and level-2 windows on: their oldest drop
            batchesAt.put(id, batch);
            ranks.put(id, 3);
            live.clear();
            live.addAll(expectedLive(ranks));
            assertEquals(live, live(reopened), "after a declaration in the reopened store");
            reopened.halt();
        }
        try (Varve recovered = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            assertEquals(live, live(recovered), "after a crash");
            checkReads(recovered, live, batchesAt);
        }
    }

    private static void checkReads(Varve store, TreeSet<Long> live, Map<Long, Long> batchesAt) {
        for (long id : live) {
            try (SnapshotView v = store.asOf(id)) {
                assertNull(KillWorkload.diff(v::table, KillWorkload.model(batchesAt.get(id))), "snapshot " + id);
            }
        }
    }
}
