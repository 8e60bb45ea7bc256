package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rank-tree rules RT1–RT3, checked against a direct reading of the policy. */
@Timeout(180)
class RankTreeTest {
    private static SnapshotRecord snap(long id, int rank, long millis) {
        return new SnapshotRecord(id, rank, millis, 0, id);
    }

    @Test
    void keepLastPerLevelWithRanks() {
        // level 1 keeps the 3 newest of all, level 2 the 2 newest of rank >= 2, level 3 everything of rank 3
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2), Retention.keepAll()));
        List<SnapshotRecord> live = new ArrayList<>();
        int[] ranks = {3, 1, 2, 1, 2, 1, 2, 1, 1, 1};
        for (int i = 0; i < ranks.length; i++) live.add(snap(i + 1, ranks[i], 0));
        Set<Long> dropped = tree.drops(live, 0).stream().map(RankTree.Verdict::id).collect(Collectors.toCollection(TreeSet::new));
        // kept: 8, 9, 10 (level 1); 5, 7 (level 2: newest rank>=2 are 7 and 5); 1 (rank 3)
        assertEquals(Set.of(2L, 3L, 4L, 6L), dropped);
    }

    @Test
    void keepForDropsOldOnesOnly() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10)), Retention.keepFor(Duration.ofHours(1))));
        long now = Duration.ofHours(5).toMillis();
        List<SnapshotRecord> live = List.of(snap(1, 1, now - Duration.ofMinutes(30).toMillis()), snap(2, 2, now - Duration.ofMinutes(30).toMillis()),
                snap(3, 1, now - Duration.ofMinutes(5).toMillis()), snap(4, 2, now - Duration.ofHours(2).toMillis()));
        Set<Long> dropped = tree.drops(live, now).stream().map(RankTree.Verdict::id).collect(Collectors.toSet());
        assertEquals(Set.of(1L, 4L), dropped);
        String why = tree.drops(live, now).get(0).why();
        assertTrue(why.contains("level 1: keepFor(PT10M)"), why);
    }

    /** RT2 on random histories: raising a snapshot's rank never makes it drop earlier. */
    @Test
    void higherRankNeverDropsSooner() {
        Random rnd = new Random(5);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3), Retention.keepLast(2));
        RankTree tree = new RankTree(policy);
        for (int round = 0; round < 200; round++) {
            List<SnapshotRecord> live = new ArrayList<>();
            for (int i = 1; i <= 20; i++) live.add(snap(i, 1 + rnd.nextInt(3), i));
            int victim = rnd.nextInt(live.size());
            SnapshotRecord v = live.get(victim);
            boolean droppedLow = tree.drops(live, 100).stream().anyMatch(d -> d.id() == v.id());
            if (v.rank() < 3) live.set(victim, snap(v.id(), v.rank() + 1, v.declaredMillis()));
            boolean droppedHigh = tree.drops(live, 100).stream().anyMatch(d -> d.id() == v.id());
            assertTrue(!droppedHigh || droppedLow, "raising the rank of " + v + " made it drop");
        }
    }
}
