package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.TreeMap;

import static dev.varve.snapshot.RankTreeReplays.recorded;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A checkpoint taken during replay when the policy's clock has a correction ({@link RankTree#clockAsRead}): replayed
 * declarations then leave the latest time read where the recovered mark had it, and count a snapshot declared after
 * it ahead of that time, at its own. The mark recorded only that latest time, and the second replay's recovery capped
 * such a snapshot at it: older by the time between, it dropped up to a keepFor early, an acknowledged snapshot lost.
 */
class RankTreeCorrectedReplayMarkTest {
    private static final long AGE = 2_000;
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(AGE)), Retention.keepAll());
    private static final long T = Duration.ofDays(20_000).toMillis();

    private static RankTree reopened(TreeMap<Long, SnapshotRecord> live, PolicyClock recorded, long wallNow) {
        RankTree tree = new RankTree(POLICY);
        tree.reset(live.values(), recorded, wallNow);
        return tree;
    }

    private static List<Long> ids(List<RankTree.Verdict> verdicts) {
        return verdicts.stream().map(RankTree.Verdict::id).toList();
    }

    /**
     * From the recovered mark {@code recovered}, a reopen at {@code reopen} replays X's declaration and takes a mark;
     * a second reopen from that mark, at {@code secondReopen}, decides on X as the first replay would have.
     */
    private static void replayedTwice(PolicyClock recovered, long reopen, long secondReopen, SnapshotRecord x) {
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        RankTree firstReplay = reopened(live, recovered, reopen);
        live.put(x.id(), x);
        firstReplay.add(x);
        assertEquals(List.of(), firstReplay.drops(live::get, x.declaredMillis(), false));
        PolicyClock midReplay = firstReplay.clockAsRead(live::get);
        assertEquals(recovered.latestPolicyTime(), midReplay.latestPolicyTime(), "a replayed declaration moves no corrected clock");

        RankTree secondReplay = reopened(live, recorded(midReplay), secondReopen);
        assertEquals(ids(firstReplay.drops(live::get, secondReopen, true)), ids(secondReplay.drops(live::get, secondReopen, true)),
                "the second replay's end keeps what the first one's would");
        assertEquals(List.of(), ids(secondReplay.drops(live::get, secondReopen, true)), "X is within keepFor of its own time");
        long agedOut = x.declaredMillis() + AGE + 1; // by the wall clock: X was declared with the same correction
        assertEquals(List.of(x.id()), ids(firstReplay.drops(live::get, agedOut, true)));
        assertEquals(List.of(x.id()), ids(secondReplay.drops(live::get, agedOut, true)), "and ages from it as the first one's");
    }

    @Test
    void aSnapshotDeclaredAfterTheRecoveredMarkKeepsItsTimeAcrossASecondCrash() {
        RankTree run = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        run.drops(id -> null, T, true);
        run.drops(id -> null, T - 500, true); // the wall clock steps back 500 ms: the correction is 500 for good
        PolicyClock recovered = run.clock(id -> null, T - 400);
        assertEquals(500, recovered.correction());

        // X declared after that mark, a crash; the reopens replay it from there
        replayedTwice(recovered, T + 1_200, T + 2_300, new SnapshotRecord(1, 1, T + 1_000, 0, 1));
    }

    @Test
    void soDoesOneReplayedByAReopenBehindTheRecoveredMark() {
        RankTree run = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        run.drops(id -> null, T, true);
        PolicyClock recovered = run.clock(id -> null, T);
        assertEquals(0, recovered.correction());

        // the clock stepped back 300 ms while the store was down: the reopen's correction is 300
        replayedTwice(recovered, T - 300, T + 1_900, new SnapshotRecord(1, 1, T + 1_000, 0, 1));
    }
}
