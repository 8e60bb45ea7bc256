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

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy's clock across crashes: the reopen goes on from the clock the last checkpoint mark recorded, which misses
 * what came after it — steps back found since, declarations that replay counts again. A model of elapsed time checks
 * that no snapshot goes before its keepFor age, and none outlives it by more than the documented bound (per restart,
 * the time from the mark to the reopen), also when a reopen switches to a policy that ages nothing and back.
 */
@Timeout(60)
class RankTreeCrashRestartTest {
    private static final long AGE = 30_000;
    /** A declaration reads its time up to half a second before it is counted; a check runs at least every 2 s. */
    private static final long UNSEEN = 2_500;
    private static final RankTreePolicy KEEP_FOR = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(AGE)));

    private final Map<Long, Long> readAt = new HashMap<>();
    private final Map<Long, Long> allowed = new HashMap<>();
    private final TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
    private RankTree tree;
    private long real;
    private long skew;
    private String where;
    /** Set once a reopen switched to a policy that ages nothing: its snapshots may then live any time. */
    private boolean agesNotChecked;

    @Test
    void noSnapshotGoesEarlyAcrossCrashesAfterStepsBack() {
        Random rnd = new Random(1);
        for (int round = 0; round < 650; round++) {
            live.clear();
            agesNotChecked = false;
            readAt.clear();
            allowed.clear();
            tree = new RankTree(KEEP_FOR);
            tree.reset(List.of(), PolicyClock.NONE, 0);
            real = Duration.ofDays(20_000).toMillis() + rnd.nextInt(1_000_000);
            skew = 0;
            long checked = real;
            long next = 1;
            long lastRead = real;
            PolicyClock markClock = tree.clock(live::get, real);
            long markReal = real;
            long markLatest = 0;
            for (int step = 0; step < 600; step++) {
                where = "round " + round + " step " + step;
                real += rnd.nextInt(1_000);
                int what = rnd.nextInt(100);
                if (what < 3) { // a step back, found by the next check
                    skew -= 1 + rnd.nextInt(rnd.nextBoolean() ? 3_000 : (int) (2 * AGE));
                    for (long id : live.keySet()) allowed.merge(id, UNSEEN, Long::sum);
                } else if (what < 8) { // a checkpoint mark
                    markClock = tree.clock(live::get, real + skew);
                    markReal = real;
                    markLatest = next - 1;
                } else if (what < 11) { // killed, down a while (the clock maybe stepped back meanwhile), reopened
                    real += rnd.nextInt(5_000);
                    if (rnd.nextBoolean()) skew -= 1 + rnd.nextInt((int) (2 * AGE));
                    for (long id : live.keySet()) allowed.merge(id, real - markReal + UNSEEN, Long::sum);
                    int policy = rnd.nextInt(6); // mostly keepFor; sometimes a policy that ages nothing, then keepFor again
                    agesNotChecked |= policy >= 4;
                    reopen(markClock, markLatest, policy == 4 ? RankTreePolicy.levels(Retention.keepLast(100_000))
                            : policy == 5 ? RankTreePolicy.levels(Retention.keepAll()) : KEEP_FOR);
                    checked = real;
                } else if (real - checked < 1_000 && rnd.nextBoolean()) {
                    // declarations read the clock in the order of their ids (under the store's checkpoint lock)
                    long read = Math.max(real - rnd.nextInt(500), lastRead);
                    lastRead = read;
                    SnapshotRecord r = new SnapshotRecord(next++, 1, read + skew, 0, next);
                    readAt.put(r.id(), read);
                    declare(r);
                } else {
                    checked = real;
                    check(real + skew, true);
                    for (SnapshotRecord r : live.values())
                        assertTrue(agesNotChecked || real - readAt.get(r.id()) <= AGE + UNSEEN + allowed.getOrDefault(r.id(), 0L),
                                where + ": snapshot " + r.id() + " kept late");
                }
            }
        }
    }

    /** Recovery from the mark: the snapshots declared before it, then replay's declarations of the later ones. */
    private void reopen(PolicyClock markClock, long markLatest, RankTreePolicy policy) {
        TreeMap<Long, SnapshotRecord> after = new TreeMap<>(live.tailMap(markLatest, false));
        live.keySet().removeAll(after.keySet());
        tree = new RankTree(policy);
        tree.reset(live.values(), markClock, real + skew);
        for (SnapshotRecord r : after.values()) declare(r);
        check(real + skew, true);
    }

    private void declare(SnapshotRecord r) {
        live.put(r.id(), r);
        tree.add(r);
        check(r.declaredMillis(), false);
    }

    private void check(long now, boolean clockRead) {
        for (RankTree.Verdict v : tree.drops(live::get, now, clockRead)) {
            assertTrue(real - readAt.get(v.id()) > AGE, where + ": snapshot " + v.id() + " dropped early, at "
                    + (real - readAt.get(v.id())) + " ms");
            tree.remove(live.remove(v.id()));
        }
    }
}
