package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * Thresher's rank tree: which declared snapshots a {@link RankTreePolicy} keeps. A snapshot of rank r counts at
 * levels 1..r (RT1) and lives while any of those levels keeps it, so a higher rank lives at least as long (RT2);
 * within a level, keepLast keeps the newest (RT3) and keepFor the recent.
 *
 * <p>Evaluated incrementally, so that a declaration costs the same with ten live snapshots or a million (a scan of
 * every live snapshot per declaration made a snapshot after each batch under keepLast(1000) three times slower than
 * under keep-everything). After each evaluation every live snapshot is kept by some level, and one can stop being
 * kept only by crossing a level's edge: a keepLast window moving past it as a newer snapshot is counted there (a
 * declaration, or a rank raised), or a keepFor age passing. Those are the only ones checked, each exactly as the
 * rule reads; a drop only widens the windows of the others. Time only moves forward here: an evaluation at an earlier
 * time than the last counts from the last, and a snapshot declared at an earlier time than that (a wall clock stepped
 * back) is aged from it, not from its own time, which would make it as old as the step at its declaration. A keepFor
 * level looks at its snapshots oldest first and stops at the first one still young, so one declared at a time that
 * went backwards ages out no earlier than the one before it. Guarded by the archive's state lock.
 */
final class RankTree {
    private final RankTreePolicy policy;
    private final int levels;
    /** Lowest level that keeps everything: a snapshot counted there never drops (k + 1 when no level does). */
    private final int keepAllFrom;
    /** Per level below {@link #keepAllFrom} (index j - 1): the live snapshots counted there, oldest first. */
    private final SortedIds[] counted;
    /** Per keepFor level: the snapshots counted there below this id were found aged out (they stay so). */
    private final long[] agedBelow;
    /** Snapshots to check at the next evaluation: [0, candidateCount). */
    private long[] candidates = new long[16];
    private int candidateCount;
    private long lastNow = Long.MIN_VALUE;
    /** Live snapshots declared at a time before {@link #lastNow}: the time each is aged from (lastNow when it was counted). */
    private final Map<Long, Long> agedFrom = new HashMap<>();

    RankTree(RankTreePolicy policy) {
        this.policy = policy;
        this.levels = policy.levelCount();
        int first = levels + 1;
        for (int i = levels; i >= 1; i--) if (rule(i).kind() == Retention.Kind.ALL) first = i;
        this.keepAllFrom = first;
        this.counted = new SortedIds[first - 1];
        for (int j = 0; j < counted.length; j++) counted[j] = new SortedIds();
        this.agedBelow = new long[first - 1];
    }

    /** True when no snapshot can ever drop (every level 1 keeps everything, the default): nothing to evaluate. */
    boolean keepsEverything() {
        return keepAllFrom == 1;
    }

    int levels() {
        return levels;
    }

    /** A snapshot the policy no longer keeps, with the rule of each of its levels that let it go. */
    record Verdict(long id, String why) {
    }

    /** Counts a declared snapshot (or one the archive holds, at open). */
    void add(SnapshotRecord r) {
        if (r.declaredMillis() < lastNow) agedFrom.put(r.id(), lastNow);
        countAt(r.id(), 1, r.rank());
    }

    /** Counts {@code raised}, a live snapshot whose rank went up, at the levels it was not counted at before. */
    void raise(SnapshotRecord before, SnapshotRecord raised) {
        countAt(raised.id(), Math.min(before.rank(), levels) + 1, raised.rank());
    }

    /** Stops counting a dropped snapshot: the windows of the others only widen, so nothing more is checked. */
    void remove(SnapshotRecord r) {
        agedFrom.remove(r.id());
        for (int j = 1; j < Math.min(Math.min(r.rank(), levels) + 1, keepAllFrom); j++) counted[j - 1].remove(r.id());
    }

    /** Forgets every snapshot and counts {@code live} (the archive's, at open); each is checked at the next evaluation. */
    void reset(Collection<SnapshotRecord> live) {
        for (SortedIds c : counted) c.clear();
        Arrays.fill(agedBelow, 0);
        agedFrom.clear();
        candidateCount = 0;
        for (SnapshotRecord r : live) {
            countAt(r.id(), 1, r.rank());
            candidate(r.id());
        }
    }

    private void countAt(long id, int fromLevel, int rank) {
        for (int j = fromLevel; j < Math.min(Math.min(rank, levels) + 1, keepAllFrom); j++) {
            SortedIds c = counted[j - 1];
            c.add(id);
            Retention rule = rule(j);
            if (rule.kind() == Retention.Kind.LAST && c.size() > rule.count()) candidate(c.at(c.size() - 1 - rule.count())); // just left the window
        }
    }

    private void candidate(long id) {
        if (candidateCount == candidates.length) candidates = Arrays.copyOf(candidates, candidateCount * 2);
        candidates[candidateCount++] = id;
    }

    /**
     * The live snapshots ({@code live} looks a record up, null once dropped) that no level up to their rank keeps at
     * {@code nowMillis}, oldest first; the caller drops them and {@link #remove}s each.
     */
    List<Verdict> drops(LongFunction<SnapshotRecord> live, long nowMillis) {
        if (keepsEverything()) return List.of();
        long now = Math.max(nowMillis, lastNow);
        lastNow = now;
        for (int j = 1; j < keepAllFrom; j++) {
            Retention rule = rule(j);
            if (rule.kind() != Retention.Kind.FOR) continue;
            SortedIds c = counted[j - 1];
            for (int i = c.firstAtLeast(agedBelow[j - 1]); i < c.size(); i++) {
                SnapshotRecord r = live.apply(c.at(i));
                if (now - agedFrom(r) <= rule.age().toMillis()) break;
                candidate(r.id());
                agedBelow[j - 1] = r.id() + 1;
            }
        }
        if (candidateCount == 0) return List.of();
        Arrays.sort(candidates, 0, candidateCount);
        List<Verdict> out = new ArrayList<>();
        long previous = -1;
        for (int i = 0; i < candidateCount; i++) {
            long id = candidates[i];
            if (id == previous) continue;
            previous = id;
            SnapshotRecord r = live.apply(id);
            if (r != null && !kept(r, now)) out.add(new Verdict(id, why(r)));
        }
        candidateCount = 0;
        return out;
    }

    /** Whether a level up to the rank of {@code r} keeps it: the rule read directly. */
    private boolean kept(SnapshotRecord r, long now) {
        return keptAt(r, now) > 0;
    }

    /**
     * The level whose rule keeps live snapshot {@code r} at {@code now}: the lowest keepAll level up to its rank when
     * there is one (nothing drops it then, but a budget), else the highest level up to its rank that keeps it; 0 when
     * none does (it goes at the next evaluation). The rules read directly.
     */
    int keptAt(SnapshotRecord r, long now) {
        int top = Math.min(r.rank(), levels);
        if (top >= keepAllFrom) return keepAllFrom;
        for (int j = top; j >= 1; j--) {
            Retention rule = rule(j);
            switch (rule.kind()) {
                case LAST -> {
                    SortedIds c = counted[j - 1];
                    if (c.size() - 1 - c.indexOf(r.id()) < rule.count()) return j;
                }
                case FOR -> {
                    if (now - agedFrom(r) <= rule.age().toMillis()) return j;
                }
                default -> {
                    return j;
                }
            }
        }
        return 0;
    }

    /** When {@code r} was declared, as its keepFor age counts it. */
    private long agedFrom(SnapshotRecord r) {
        Long from = agedFrom.get(r.id());
        return from == null ? r.declaredMillis() : from;
    }

    private String why(SnapshotRecord r) {
        StringBuilder why = new StringBuilder("no level up to its rank ").append(r.rank()).append(" keeps it (");
        for (int level = 1; level <= Math.min(r.rank(), levels); level++) {
            if (level > 1) why.append(", ");
            why.append("level ").append(level).append(": ").append(rule(level));
        }
        return why.append(')').toString();
    }

    private Retention rule(int level) {
        return policy.levels().get(level - 1);
    }
}
