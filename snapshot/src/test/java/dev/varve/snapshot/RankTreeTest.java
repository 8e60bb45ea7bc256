package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rank-tree rules RT1–RT3, and its incremental evaluation checked against a direct reading of the policy. */
@Timeout(180)
class RankTreeTest {
    private static SnapshotRecord snap(long id, int rank, long millis) {
        return new SnapshotRecord(id, rank, millis, 0, id);
    }

    /** What the tree decides about {@code live} (ascending ids) at {@code now}, counted from nothing. */
    private static List<RankTree.Verdict> drops(RankTreePolicy policy, List<SnapshotRecord> live, long now) {
        RankTree tree = new RankTree(policy);
        tree.reset(live);
        Map<Long, SnapshotRecord> byId = new HashMap<>();
        for (SnapshotRecord r : live) byId.put(r.id(), r);
        return tree.drops(byId::get, now);
    }

    /** The policy read directly, every live snapshot at every level: the definition the tree must agree with. */
    private static Set<Long> reference(RankTreePolicy policy, Collection<SnapshotRecord> live, long now) {
        int k = policy.levelCount();
        Set<Long> kept = new HashSet<>();
        for (int level = 1; level <= k; level++) {
            Retention rule = policy.levels().get(level - 1);
            List<SnapshotRecord> counted = new ArrayList<>();
            for (SnapshotRecord r : live) if (Math.min(r.rank(), k) >= level) counted.add(r);
            for (int i = 0; i < counted.size(); i++) {
                SnapshotRecord r = counted.get(i);
                int newer = counted.size() - 1 - i;
                boolean keeps = switch (rule.kind()) {
                    case LAST -> newer < rule.count();
                    case FOR -> now - r.declaredMillis() <= rule.age().toMillis();
                    case ALL -> true;
                };
                if (keeps) kept.add(r.id());
            }
        }
        Set<Long> dropped = new TreeSet<>();
        for (SnapshotRecord r : live) if (!kept.contains(r.id())) dropped.add(r.id());
        return dropped;
    }

    @Test
    void keepLastPerLevelWithRanks() {
        // level 1 keeps the 3 newest of all, level 2 the 2 newest of rank >= 2, level 3 everything of rank 3
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2), Retention.keepAll());
        List<SnapshotRecord> live = new ArrayList<>();
        int[] ranks = {3, 1, 2, 1, 2, 1, 2, 1, 1, 1};
        for (int i = 0; i < ranks.length; i++) live.add(snap(i + 1, ranks[i], 0));
        Set<Long> dropped = drops(policy, live, 0).stream().map(RankTree.Verdict::id).collect(Collectors.toCollection(TreeSet::new));
        // kept: 8, 9, 10 (level 1); 5, 7 (level 2: newest rank>=2 are 7 and 5); 1 (rank 3)
        assertEquals(Set.of(2L, 3L, 4L, 6L), dropped);
    }

    @Test
    void keepForDropsOldOnesOnly() {
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10)), Retention.keepFor(Duration.ofHours(1)));
        long now = Duration.ofHours(5).toMillis();
        List<SnapshotRecord> live = List.of(snap(1, 1, now - Duration.ofMinutes(30).toMillis()), snap(2, 2, now - Duration.ofMinutes(30).toMillis()),
                snap(3, 1, now - Duration.ofMinutes(5).toMillis()), snap(4, 2, now - Duration.ofHours(2).toMillis()));
        Set<Long> dropped = drops(policy, live, now).stream().map(RankTree.Verdict::id).collect(Collectors.toSet());
        assertEquals(Set.of(1L, 4L), dropped);
        String why = drops(policy, live, now).get(0).why();
        assertTrue(why.contains("level 1: keepFor(PT10M)"), why);
    }

    /** RT2 on random histories: raising a snapshot's rank never makes it drop earlier. */
    @Test
    void higherRankNeverDropsSooner() {
        Random rnd = new Random(5);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3), Retention.keepLast(2));
        for (int round = 0; round < 200; round++) {
            List<SnapshotRecord> live = new ArrayList<>();
            for (int i = 1; i <= 20; i++) live.add(snap(i, 1 + rnd.nextInt(3), i));
            int victim = rnd.nextInt(live.size());
            SnapshotRecord v = live.get(victim);
            boolean droppedLow = drops(policy, live, 100).stream().anyMatch(d -> d.id() == v.id());
            if (v.rank() < 3) live.set(victim, snap(v.id(), v.rank() + 1, v.declaredMillis()));
            boolean droppedHigh = drops(policy, live, 100).stream().anyMatch(d -> d.id() == v.id());
            assertTrue(!droppedHigh || droppedLow, "raising the rank of " + v + " made it drop");
        }
    }

    /**
     * The incremental evaluation against the direct reading, on random policies and histories: declarations, rank
     * raises, budget drops and time passing, each followed by an evaluation as the registry makes one. It fails when
     * a snapshot that crossed an edge is not checked, or one still kept is dropped.
     */
    @Test
    void incrementalEvaluationDropsExactlyWhatTheRulesSay() {
        Random rnd = new Random(11);
        for (int round = 0; round < 300; round++) {
            int k = 1 + rnd.nextInt(3);
            Retention[] rules = new Retention[k];
            for (int j = 0; j < k; j++) {
                int kind = rnd.nextInt(5);
                rules[j] = kind < 2 ? Retention.keepLast(1 + rnd.nextInt(6)) : kind < 4 ? Retention.keepFor(Duration.ofMillis(5 + rnd.nextInt(40)))
                        : Retention.keepAll();
            }
            RankTreePolicy policy = RankTreePolicy.levels(rules);
            RankTree tree = new RankTree(policy);
            TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
            long now = 1_000;
            long next = 1;
            for (int step = 0; step < 150; step++) {
                int op = rnd.nextInt(10);
                if (op < 6 || live.isEmpty()) {
                    SnapshotRecord r = snap(next++, 1 + rnd.nextInt(k + 1), now);
                    live.put(r.id(), r);
                    tree.add(r);
                } else if (op < 8) {
                    SnapshotRecord r = pick(live, rnd);
                    SnapshotRecord raised = snap(r.id(), r.rank() + 1 + rnd.nextInt(2), r.declaredMillis());
                    live.put(r.id(), raised);
                    tree.raise(r, raised);
                } else if (op < 9) {
                    SnapshotRecord r = live.remove(pick(live, rnd).id()); // the budget, which drops kept snapshots too
                    tree.remove(r);
                }
                now += rnd.nextInt(4) == 0 ? rnd.nextInt(30) : rnd.nextInt(3);
                Set<Long> expected = reference(policy, live.values(), now);
                Set<Long> got = new TreeSet<>();
                for (RankTree.Verdict v : tree.drops(live::get, now)) got.add(v.id());
                assertEquals(expected, got, "round " + round + " step " + step + " under " + policy);
                for (long id : got) tree.remove(live.remove(id));
            }
        }
    }

    /**
     * A wall clock stepped back (NTP correcting a clock that ran ahead) further than a keepFor age: the policy held the
     * latest time it had read until the clock was back there, and a snapshot declared meanwhile was aged from its own,
     * earlier, declaration time against that later one, so it was dropped as it was declared. Ages count the time that
     * passed, across the step: the snapshot lives its age from its declaration.
     */
    @Test
    void aSnapshotDeclaredAfterTheClockSteppedBackLivesItsAge() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10))));
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        declare(tree, live, snap(1, 1, t));
        assertEquals(List.of(), dropped(tree, live, t));
        long later = t + minutes(30); // the archiver's check, half an hour on: snapshot 1 aged out
        assertEquals(List.of(1L), dropped(tree, live, later));

        long stepped = later - minutes(60); // the clock goes back an hour
        declare(tree, live, snap(2, 1, stepped));
        assertEquals(List.of(), dropped(tree, live, stepped), "the snapshot just declared is kept");
        assertEquals(List.of(), dropped(tree, live, stepped + minutes(10)), "for its age");
        assertEquals(List.of(2L), dropped(tree, live, stepped + minutes(10) + 1), "and no longer");
    }

    /** One declared before the step lives its age too, not its age and the step. */
    @Test
    void aSnapshotDeclaredBeforeTheClockSteppedBackLivesItsAge() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10))));
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        declare(tree, live, snap(1, 1, t));
        assertEquals(List.of(), dropped(tree, live, t + minutes(4)));
        long stepped = t + minutes(4) - minutes(60); // four minutes on, the clock goes back an hour
        assertEquals(List.of(), dropped(tree, live, stepped));
        assertEquals(List.of(), dropped(tree, live, stepped + minutes(6)));
        assertEquals(List.of(1L), dropped(tree, live, stepped + minutes(6) + 1));
    }

    /**
     * A declaration reads its time before it takes the lock the archiver's check holds, so after a pause (a GC) it may
     * bring a time well before the latest the policy read: that is no step back of the clock, or the offset would run
     * the policy's clock ahead of the wall's and drop the snapshots before it early. It is counted as declared at the
     * latest time read instead.
     */
    @Test
    void aDeclarationWhoseTimeLagsACheckIsNoStep() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10))));
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        declare(tree, live, snap(1, 1, t));
        assertEquals(List.of(), dropped(tree, live, t + 5_000)); // the archiver's check
        declare(tree, live, snap(2, 1, t + 2_000)); // read three seconds before it
        assertEquals(List.of(), tree.drops(live::get, t + 2_000, false), "evaluated at its declaration");
        assertEquals(List.of(), dropped(tree, live, t + minutes(10)));
        assertEquals(List.of(1L), dropped(tree, live, t + minutes(10) + 1), "snapshot 1 lives its age, not less");
        assertEquals(List.of(), dropped(tree, live, t + 5_000 + minutes(10)));
        assertEquals(List.of(2L), dropped(tree, live, t + 5_000 + minutes(10) + 1));
    }

    /**
     * A declaration reads its time before it takes the state lock, and the clock may step back in between, found by the
     * archiver's check before the declaration is counted: its time is then from before the step, and adding the step to
     * it put the declaration the step ahead of the policy's clock, which it moved there, so every keepFor snapshot aged
     * the step at once. The policy's clock only follows reads taken under the lock; such a declaration counts as
     * declared at the next one.
     */
    @Test
    void aDeclarationReadBeforeAStepFoundMeanwhileAgesNothingEarly() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10))));
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long t = Duration.ofDays(20_000).toMillis();
        declare(tree, live, snap(1, 1, t));
        assertEquals(List.of(), dropped(tree, live, t + minutes(4)));
        long read = t + minutes(4) + 100; // snapshot 2 reads its time, then waits for the lock
        long stepped = read - minutes(60) + 100; // meanwhile the clock goes back an hour, and the check finds it
        assertEquals(List.of(), dropped(tree, live, stepped));
        declare(tree, live, snap(2, 1, read));
        assertEquals(List.of(), tree.drops(live::get, read, false), "snapshot 1, four minutes old, is kept");
        assertEquals(List.of(), dropped(tree, live, stepped + 1_000), "at the next check too");
        assertEquals(List.of(), dropped(tree, live, stepped + minutes(6)));
        assertEquals(List.of(1L), dropped(tree, live, stepped + minutes(6) + 1),
                "snapshot 1 goes at its age (but for the 0.2 s between the check before the step and the one after)");
        assertEquals(List.of(), dropped(tree, live, stepped + 1_000 + minutes(10)), "snapshot 2 lives its age");
        assertEquals(List.of(2L), dropped(tree, live, stepped + 1_000 + minutes(10) + 1),
                "and is not held the step longer: it counts as declared at the check after it");
    }

    /**
     * A clock that steps back again and again over a long run (a hypervisor's time sync stepping a guest that runs ahead),
     * with a snapshot declared after each step and dropped once aged: the tree notes the offset from the first snapshot
     * after each step, and held every note for good, one per step; the ones before the oldest live snapshot go.
     */
    @Test
    void theStepsBackOfALongRunAreForgottenWithTheirSnapshots() {
        RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofSeconds(5))));
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        long wall = Duration.ofDays(20_000).toMillis();
        for (long id = 1; id <= 5_000; id++) {
            wall += 2_000;
            dropped(tree, live, wall);
            wall -= 500; // stepped back, found by the next check
            dropped(tree, live, wall);
            declare(tree, live, snap(id, 1, wall));
        }
        assertTrue(live.size() <= 4, live.size() + " live");
        assertTrue(tree.stepsHeld() <= live.size() + 1, tree.stepsHeld() + " steps held for " + live.size() + " live snapshots");
    }

    /**
     * Random histories of a wall clock that steps back (up to twice the age at a time) while snapshots are declared, each
     * declaration having read its time up to half a second before it is counted, and the policy reading the clock at
     * least every second (the archiver's check): under keepFor, every snapshot lives its age in real time, to within
     * the time the policy cannot see — the read's lag, and per step the time from the last read before it to the check
     * that finds it. (Holding the latest time read until the clock came back kept snapshots the whole step longer.)
     */
    @Test
    void keepForCountsRealTimeAcrossStepsBack() {
        Random rnd = new Random(7);
        long age = 30_000;
        long unseen = 2_500; // a read's lag (0.5 s), and the time between two checks (up to 2 s here)
        for (int round = 0; round < 50; round++) {
            RankTree tree = new RankTree(RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(age))));
            TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
            Map<Long, Long> readAt = new HashMap<>(); // real time each declaration read its clock
            Map<Long, Integer> stepsAtRead = new HashMap<>();
            int steps = 0;
            long real = Duration.ofDays(20_000).toMillis();
            long checked = real; // when the archiver last read the clock
            long skew = 0; // wall = real + skew
            long next = 1;
            for (int step = 0; step < 800; step++) {
                real += rnd.nextInt(1_000);
                if (rnd.nextInt(60) == 0) { // NTP steps the clock back
                    skew -= 1 + rnd.nextInt((int) (2 * age));
                    steps++;
                }
                if (real - checked < 1_000 && rnd.nextBoolean()) {
                    long lag = rnd.nextInt(500);
                    SnapshotRecord r = snap(next++, 1, real - lag + skew);
                    readAt.put(r.id(), real - lag);
                    stepsAtRead.put(r.id(), steps);
                    declare(tree, live, r);
                    for (RankTree.Verdict v : tree.drops(live::get, r.declaredMillis(), false)) {
                        assertTrue(real - readAt.get(v.id()) > age - unseen, "round " + round + " step " + step + ": snapshot " + v.id() + " dropped early");
                        tree.remove(live.remove(v.id()));
                    }
                } else {
                    checked = real;
                    for (long id : dropped(tree, live, real + skew))
                        assertTrue(real - readAt.get(id) > age - unseen, "round " + round + " step " + step + ": snapshot " + id + " dropped early");
                    for (SnapshotRecord r : live.values())
                        assertTrue(real - readAt.get(r.id()) <= age + unseen * (1 + steps - stepsAtRead.get(r.id())), "round " + round + " step " + step + ": snapshot " + r.id() + " kept late");
                }
            }
        }
    }

    private static long minutes(int n) {
        return Duration.ofMinutes(n).toMillis();
    }

    private static void declare(RankTree tree, TreeMap<Long, SnapshotRecord> live, SnapshotRecord r) {
        live.put(r.id(), r);
        tree.add(r);
    }

    /** Evaluates at {@code now} and drops what it found, as the registry does: the ids dropped. */
    private static List<Long> dropped(RankTree tree, TreeMap<Long, SnapshotRecord> live, long now) {
        List<Long> ids = tree.drops(live::get, now).stream().map(RankTree.Verdict::id).toList();
        for (long id : ids) tree.remove(live.remove(id));
        return ids;
    }

    private static SnapshotRecord pick(TreeMap<Long, SnapshotRecord> live, Random rnd) {
        List<SnapshotRecord> all = new ArrayList<>(live.values());
        return all.get(rnd.nextInt(all.size()));
    }
}
