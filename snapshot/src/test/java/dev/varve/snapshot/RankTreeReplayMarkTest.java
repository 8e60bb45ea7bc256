package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The clock a checkpoint taken during replay records ({@link RankTree#clockAsRead}): the latest time the replayed
 * records gave the policy, so that a replay after a second crash, starting from that mark, decides as the first did.
 * With the reopen's clock ({@link RankTree#clock}), which is past every record replayed, the second replay checked
 * keepFor by it and dropped at its old rank a snapshot whose raise came after the mark.
 */
class RankTreeReplayMarkTest {
    private static final long AGE = 2_000;
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(AGE)), Retention.keepAll());

    private static RankTree reopened(TreeMap<Long, SnapshotRecord> live, PolicyClock recorded, long wallNow) {
        RankTree tree = new RankTree(POLICY);
        tree.reset(live.values(), recorded, wallNow);
        return tree;
    }

    @Test
    void aMarkTakenDuringReplayRecordsTheTimeItsRecordsReached() {
        long t = Duration.ofDays(20_000).toMillis();
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        RankTree run = reopened(live, PolicyClock.NONE, 0);
        SnapshotRecord s = new SnapshotRecord(1, 1, t, 0, 1);
        live.put(s.id(), s);
        run.add(s);
        assertEquals(List.of(), run.drops(live::get, t, false));
        PolicyClock recovered = run.clock(live::get, t); // the mark both replays start from

        long reopen = t + Duration.ofHours(1).toMillis(); // S is long past level 1's keepFor by the reopen's clock
        RankTree firstReplay = reopened(live, recovered, reopen);
        PolicyClock midReplay = firstReplay.clockAsRead(live::get);
        assertEquals(t, midReplay.latestPolicyTime(), "the mark records the time the records reached, not the reopen's");

        // the second replay, from that mark: S2, declared a second after S, applies the policy at its declaration
        SnapshotRecord s2 = new SnapshotRecord(2, 1, t + 1_000, 0, 2);
        RankTree secondReplay = reopened(live, midReplay, reopen + 60_000);
        live.put(s2.id(), s2);
        secondReplay.add(s2);
        assertEquals(List.of(), secondReplay.drops(live::get, s2.declaredMillis(), false), "S is within level 1's keepFor at S2's declaration");

        live.remove(s2.id());
        RankTree byTheReopensClock = reopened(live, firstReplay.clock(live::get, reopen), reopen + 60_000);
        live.put(s2.id(), s2);
        byTheReopensClock.add(s2);
        assertEquals(List.of(s.id()), byTheReopensClock.drops(live::get, s2.declaredMillis(), false).stream().map(RankTree.Verdict::id).toList(),
                "a mark with the reopen's clock drops S at its old rank before its raise is replayed");
    }

    @Test
    void aMarkTakenBeforeThePolicyReadATimeRecordsNone() {
        RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, Duration.ofDays(20_000).toMillis());
        assertFalse(tree.clockAsRead(id -> null).known(), "no time read: the mark says so, as one of an earlier build does");
    }
}
