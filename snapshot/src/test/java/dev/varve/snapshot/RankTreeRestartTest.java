package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy's clock across restarts ({@link RankTree#clock}, recorded with a checkpoint mark, and
 * {@link RankTree#reset(java.util.Collection, PolicyClock, long)} at open): every snapshot lives its keepFor age in
 * elapsed time across steps back of the wall clock and restarts, never less, and longer only by what the policy cannot
 * see — per restart, the time from the recorded clock to the reopen when the clock was stepped back meanwhile.
 */
@Timeout(180)
class RankTreeRestartTest {
    private static final long AGE = 30_000;

    private static SnapshotRecord snap(long id, long millis) {
        return new SnapshotRecord(id, 1, millis, 0, id);
    }

    private static RankTree reopened(TreeMap<Long, SnapshotRecord> live, PolicyClock recorded, long wallNow) {
        return reopened(RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(AGE))), live, recorded, wallNow);
    }

    private static RankTree reopened(RankTreePolicy policy, TreeMap<Long, SnapshotRecord> live, PolicyClock recorded, long wallNow) {
        RankTree tree = new RankTree(policy);
        tree.reset(live.values(), recorded, wallNow);
        return tree;
    }

    /**
     * Random histories as RankTreeTest#keepForCountsRealTimeAcrossStepsBack's — steps back up to twice the age,
     * declarations that read their time up to half a second before they are counted, a check at least every second —
     * with restarts, some after a step back taken while the store was down.
     */
    @Test
    void keepForCountsRealTimeAcrossStepsBackAndRestarts() {
        Random rnd = new Random(11);
        long unseen = 2_500; // a read's lag (0.5 s), and the time between two checks (up to 2 s here)
        for (int round = 0; round < 50; round++) {
            RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
            TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
            Map<Long, Long> readAt = new HashMap<>();
            Map<Long, Long> allowed = new HashMap<>(); // how much longer than its age each may live
            long real = Duration.ofDays(20_000).toMillis();
            long checked = real;
            long skew = 0;
            long next = 1;
            for (int step = 0; step < 800; step++) {
                real += rnd.nextInt(1_000);
                if (rnd.nextInt(60) == 0) {
                    skew -= 1 + rnd.nextInt((int) (2 * AGE));
                    for (long id : live.keySet()) allowed.merge(id, unseen, Long::sum);
                }
                if (rnd.nextInt(40) == 0) { // a close (its checkpoint records the clock), down a while, a reopen
                    PolicyClock recorded = tree.clock(live::get, real + skew);
                    long down = rnd.nextInt(5_000);
                    real += down;
                    if (rnd.nextBoolean()) skew -= 1 + rnd.nextInt((int) (2 * AGE)); // stepped back while down
                    else skew += rnd.nextInt(100); // or a little forward (ages by it, as documented)
                    for (long id : live.keySet()) allowed.merge(id, down + unseen, Long::sum);
                    tree = reopened(live, recorded, real + skew);
                    checked = real;
                    for (long id : dropped(tree, live, real + skew)) assertNotEarly(round, step, id, real, readAt, unseen + 100);
                } else if (real - checked < 1_000 && rnd.nextBoolean()) {
                    long lag = rnd.nextInt(500);
                    SnapshotRecord r = snap(next++, real - lag + skew);
                    readAt.put(r.id(), real - lag);
                    live.put(r.id(), r);
                    tree.add(r);
                    for (RankTree.Verdict v : tree.drops(live::get, r.declaredMillis(), false)) {
                        assertNotEarly(round, step, v.id(), real, readAt, unseen);
                        tree.remove(live.remove(v.id()));
                    }
                } else {
                    checked = real;
                    for (long id : dropped(tree, live, real + skew)) assertNotEarly(round, step, id, real, readAt, unseen + 100);
                    for (SnapshotRecord r : live.values())
                        assertTrue(real - readAt.get(r.id()) <= AGE + unseen + allowed.getOrDefault(r.id(), 0L),
                                "round " + round + " step " + step + ": snapshot " + r.id() + " kept late");
                }
            }
        }
    }

    /**
     * A clock stepped back a little again and again (a hypervisor's time sync): the checkpoint records at most
     * {@link PolicyClock#MAX_STEPS} offsets, merged into the larger, and after a restart no snapshot goes early.
     */
    @Test
    void manyStepsBackAreRecordedMergedAndDropNothingEarly() {
        RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        Map<Long, Long> readAt = new HashMap<>();
        long real = Duration.ofDays(20_000).toMillis();
        long skew = 0;
        for (long id = 1; id <= 1_000; id++) {
            real += 20;
            dropped(tree, live, real + skew);
            skew -= 7; // stepped back, found by the next check
            dropped(tree, live, real + skew);
            SnapshotRecord r = snap(id, real + skew);
            readAt.put(id, real);
            live.put(id, r);
            tree.add(r);
        }
        PolicyClock recorded = tree.clock(live::get, real + skew);
        assertTrue(recorded.steps().length / 2 <= PolicyClock.MAX_STEPS + 1, recorded.steps().length / 2 + " offsets recorded");
        assertEquals(-skew, recorded.correction());
        tree = reopened(live, recorded, real + skew);
        for (long t = real; !live.isEmpty(); t += 100)
            for (long id : dropped(tree, live, t + skew)) {
                assertTrue(t - readAt.get(id) > AGE, "snapshot " + id + " dropped early");
                assertTrue(t - readAt.get(id) <= AGE + 100 + 7_000 / PolicyClock.MAX_STEPS + 7, "snapshot " + id + " kept late");
            }
    }

    /**
     * A declaration that read its time before a step back the check found while it waited for the lock carries the
     * step ahead of the policy's clock (RankTreeTest#aDeclarationReadBeforeAStepFoundMeanwhileAgesNothingEarly): after
     * a restart it counts no later than the next declaration, not the step later, holding that one too.
     */
    @Test
    void aDeclarationReadBeforeAStepIsNotHeldTheStepAfterARestart() {
        RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        long hour = Duration.ofHours(1).toMillis();
        declare(tree, live, snap(1, t));
        assertEquals(List.of(), dropped(tree, live, t + 4_000));
        long read = t + 4_100; // snapshot 2 reads its time, then waits for the lock
        long stepped = read - hour + 100; // meanwhile the clock goes back an hour, and the check finds it
        assertEquals(List.of(), dropped(tree, live, stepped));
        declare(tree, live, snap(2, read));
        assertEquals(List.of(), dropped(tree, live, stepped + 1_000));
        declare(tree, live, snap(3, stepped + 2_000));
        tree = reopened(live, tree.clock(live::get, stepped + 3_000), stepped + 3_000);
        assertEquals(List.of(), dropped(tree, live, stepped + 3_000));
        assertEquals(List.of(1L), dropped(tree, live, stepped + AGE - 4_000 + 1), "snapshot 1 at its age");
        assertEquals(List.of(), dropped(tree, live, stepped + 1_000 + AGE));
        assertEquals(List.of(2L, 3L), dropped(tree, live, stepped + 2_000 + AGE + 1), "2 and 3 within a second of their age, not an hour on");
    }

    /**
     * A step back shorter than a second, taken after the latest read and before a declaration read its time: the
     * declaration is counted as declared at that latest read until the next check finds the step. A restart counted it
     * at its own time with the offset before the step, the step earlier than it was (no floor was recorded for a lag
     * under a second, taken for a pause before the lock), and dropped it that much before its age.
     */
    @Test
    void aDeclarationAfterAStepUnderASecondIsNotCountedEarlierAfterARestart() {
        RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        declare(tree, live, snap(1, t));
        assertEquals(List.of(), dropped(tree, live, t + 100)); // the latest read
        long step = 500; // then the clock goes back half a second
        SnapshotRecord r = snap(2, t + 110 - step); // read 10 ms after the latest read, in real time
        declare(tree, live, r);
        assertEquals(List.of(), tree.drops(live::get, r.declaredMillis(), false).stream().map(RankTree.Verdict::id).toList());
        assertEquals(List.of(), dropped(tree, live, t + 120 - step)); // the check finds the step
        tree = reopened(live, tree.clock(live::get, t + 130 - step), t + 130 - step);
        assertEquals(List.of(1L), dropped(tree, live, t + AGE + 101 - step), "snapshot 1 at its age");
        assertEquals(List.of(), dropped(tree, live, t + AGE + 120 - step), "snapshot 2 lives its age, not half a second less");
        assertEquals(List.of(2L), dropped(tree, live, t + AGE + 121 - step), "counted at the latest read, as before the restart");
    }

    /**
     * A clock stepped back a little again and again, each step with a declaration before the next check: the
     * checkpoint records at most {@link PolicyClock#MAX_STEPS} floors for those short lags, not one per step.
     */
    @Test
    void shortStepsBackRecordBoundedFloors() {
        RankTree tree = reopened(new TreeMap<>(), PolicyClock.NONE, 0);
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long wall = Duration.ofDays(20_000).toMillis();
        for (long id = 1; id <= 500; id++) {
            wall += 100;
            dropped(tree, live, wall);
            wall -= 50; // stepped back
            declare(tree, live, snap(id, wall + 1));
            wall += 2;
            dropped(tree, live, wall); // the check finds the step
        }
        PolicyClock recorded = tree.clock(live::get, wall);
        assertTrue(recorded.floors().length / 2 <= PolicyClock.MAX_STEPS, recorded.floors().length / 2 + " floors recorded");
        assertTrue(recorded.floors().length > 0);
    }

    /**
     * A policy that ages nothing (keepLast) notes no offsets, only the correction: reopened under a keepFor policy, the
     * snapshots declared before a step back a year long are not taken for a year older than they are.
     */
    @Test
    void aPolicyThatAgedNothingRecordsNoSnapshotOlderThanItIs() {
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        RankTree tree = reopened(RankTreePolicy.levels(Retention.keepLast(10)), live, PolicyClock.NONE, 0);
        long t = Duration.ofDays(20_000).toMillis();
        long year = Duration.ofDays(365).toMillis();
        declare(tree, live, snap(1, t + year)); // the clock ran a year ahead
        assertEquals(List.of(), dropped(tree, live, t + year));
        assertEquals(List.of(), dropped(tree, live, t)); // and was stepped back
        declare(tree, live, snap(2, t + 1_000));
        tree = reopened(live, tree.clock(live::get, t + 2_000), t + 2_000); // now under keepFor
        assertEquals(List.of(), dropped(tree, live, t + 2_000), "neither is older than its age");
        assertEquals(List.of(1L, 2L), dropped(tree, live, t + 2_000 + AGE), "both go, within their age and two seconds");
    }

    private static void declare(RankTree tree, TreeMap<Long, SnapshotRecord> live, SnapshotRecord r) {
        live.put(r.id(), r);
        tree.add(r);
    }

    private static void assertNotEarly(int round, int step, long id, long real, Map<Long, Long> readAt, long unseen) {
        assertTrue(real - readAt.get(id) > AGE - unseen, "round " + round + " step " + step + ": snapshot " + id + " dropped early");
    }

    private static List<Long> dropped(RankTree tree, TreeMap<Long, SnapshotRecord> live, long now) {
        List<Long> ids = tree.drops(live::get, now).stream().map(RankTree.Verdict::id).toList();
        for (long id : ids) tree.remove(live.remove(id));
        return ids;
    }
}
