package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
 * rule reads; a drop only widens the windows of the others.
 *
 * <p>Ages are counted on the policy's own clock, which only moves forward: the wall clock plus what it lost in the steps
 * back it took (each checkpoint mark records that clock, {@link PolicyClock}, and a restart goes on with it). A step
 * is found when an evaluation reads the clock under the archive's state lock (those reads follow each other) and gets
 * an earlier time than the latest the policy read; a declaration's time, read before that lock, may lag by a pause and is never taken for a step (nor, once a step was found, moves the
 * policy's clock: it may have been read before the step). A snapshot is counted with the offset of
 * its time, and one whose time lags the latest read is counted as declared then, so ages go on counting the time that
 * passed, across the step, for the snapshots before it and after it: held at the latest time read until the wall clock
 * came back there, a snapshot declared meanwhile was as old as the step at its declaration (dropped as declared under
 * a shorter keepFor), and the ones before the step were kept longer by it. A keepFor level looks at its snapshots
 * oldest first and stops at the first one still young, so one whose declared time reads later than a newer one's (the
 * wall clock stepped back before a restart of an earlier build, which lost the offsets) ages out no earlier than it.
 * Guarded by the archive's state lock.
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
    /** Whether a level below {@link #keepAllFrom} keeps by age: else no snapshot's declared time is ever read. */
    private final boolean ages;
    /** Snapshots to check at the next evaluation: [0, candidateCount). */
    private long[] candidates = new long[16];
    private int candidateCount;
    /** The latest time on the policy's clock, Long.MIN_VALUE before the first. */
    private long lastNow = Long.MIN_VALUE;
    /** What the wall clock lost in its steps back: the policy's clock is the wall clock plus this. */
    private long offset;
    /** From each id on (the first one counted after a step back), the offset its declared time is counted with. */
    private final TreeMap<Long, Long> offsetFrom = new TreeMap<>();
    /** Live snapshots whose declared time, with its offset, lagged the latest time read: counted as declared then. */
    private final Map<Long, Long> lagging = new HashMap<>();
    /**
     * Snapshots counted, after a step back, at a time on the policy's clock past the latest read, until the next read:
     * one whose time was read before a step that a read found while it waited for the lock is the step ahead of the
     * clock, which is counted as declared at that next read instead (it was read before it).
     */
    private final Map<Long, Long> ahead = new HashMap<>();

    RankTree(RankTreePolicy policy) {
        this.policy = policy;
        this.levels = policy.levelCount();
        int first = levels + 1;
        for (int i = levels; i >= 1; i--) if (rule(i).kind() == Retention.Kind.ALL) first = i;
        this.keepAllFrom = first;
        this.counted = new SortedIds[first - 1];
        for (int j = 0; j < counted.length; j++) counted[j] = new SortedIds();
        this.agedBelow = new long[first - 1];
        boolean byAge = false;
        for (int j = 1; j < first; j++) byAge |= rule(j).kind() == Retention.Kind.FOR;
        this.ages = byAge;
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
        if (ages) countedAt(r);
        countAt(r.id(), 1, r.rank());
    }

    /** Notes the offset a snapshot's declared time is counted with, and when that time lags the latest read. */
    private void countedAt(SnapshotRecord r) {
        if (offset != (offsetFrom.isEmpty() ? 0 : offsetFrom.lastEntry().getValue())) offsetFrom.put(r.id(), offset);
        if (r.declaredMillis() + offset < lastNow) lagging.put(r.id(), lastNow);
        else if (offset != 0 && r.declaredMillis() + offset > lastNow) ahead.put(r.id(), r.declaredMillis() + offset);
    }

    /** Counts {@code raised}, a live snapshot whose rank went up, at the levels it was not counted at before. */
    void raise(SnapshotRecord before, SnapshotRecord raised) {
        countAt(raised.id(), Math.min(before.rank(), levels) + 1, raised.rank());
    }

    /** Stops counting a dropped snapshot: the windows of the others only widen, so nothing more is checked. */
    void remove(SnapshotRecord r) {
        lagging.remove(r.id());
        ahead.remove(r.id());
        for (int j = 1; j < Math.min(Math.min(r.rank(), levels) + 1, keepAllFrom); j++) counted[j - 1].remove(r.id());
        if (ages) forgetSteps();
    }

    /**
     * Forgets the offsets no live snapshot is counted with: one is noted per step back, and a clock stepped back again
     * and again over a long run would otherwise grow them for good. Level 1 counts every live snapshot (a tree that
     * ages keeps not everything at level 1), so its oldest is the oldest live.
     */
    private void forgetSteps() {
        if (offsetFrom.size() < 2) return;
        SortedIds all = counted[0];
        Long keep = all.size() == 0 ? offsetFrom.lastKey() : offsetFrom.floorKey(all.at(0));
        if (keep != null) offsetFrom.headMap(keep).clear();
    }

    /** The offsets held for the steps back found (see {@link #forgetSteps}). */
    int stepsHeld() {
        return offsetFrom.size();
    }

    /** Forgets every snapshot and counts {@code live} (the archive's, at open); each is checked at the next evaluation. */
    void reset(Collection<SnapshotRecord> live) {
        reset(live, PolicyClock.NONE, 0);
    }

    /**
     * As {@link #reset(Collection)}, at wall-clock time {@code wallNow}, going on with the policy's clock as the
     * recovered checkpoint mark recorded it ({@link PolicyClock#NONE} from a store of an earlier build: the declared
     * times read back are then the wall clock's, as they were written). The clock never goes back across the restart,
     * and a clock behind the latest time read was stepped back meanwhile: that lag is added to the correction.
     */
    void reset(Collection<SnapshotRecord> live, PolicyClock clock, long wallNow) {
        for (SortedIds c : counted) c.clear();
        Arrays.fill(agedBelow, 0);
        offset = clock.correctionAt(wallNow);
        offsetFrom.clear();
        for (int i = 0; i < clock.steps().length; i += 2) offsetFrom.put(clock.steps()[i], clock.steps()[i + 1]);
        lagging.clear();
        ahead.clear();
        lastNow = clock.latestPolicyTime();
        candidateCount = 0;
        for (SnapshotRecord r : live) {
            countAt(r.id(), 1, r.rank());
            candidate(r.id());
        }
        if (ages && clock.known()) restoreDeclared(new ArrayList<>(live), clock);
    }

    /**
     * Recovery: when each of {@code live} (oldest first, all declared before the mark) counts as declared, from its
     * time, offset and floor; no later than the next one, nor than the latest time read at the mark (a declaration read
     * before a step back found meanwhile carries the step ahead: it counted as declared at the next read, which came
     * before the next declaration). One that the replay which took the mark counted {@link #ahead}
     * ({@link PolicyClock#aheadFrom}) is counted so again, at its own time: capped at the latest time read, which
     * replayed declarations do not move once the clock has a correction, it aged by the time between and dropped early.
     */
    private void restoreDeclared(List<SnapshotRecord> live, PolicyClock clock) {
        TreeMap<Long, Long> floors = new TreeMap<>();
        for (int i = 0; i < clock.floors().length; i += 2) floors.put(clock.floors()[i], clock.floors()[i + 1]);
        long cap = lastNow;
        for (int i = live.size() - 1; i >= 0; i--) {
            SnapshotRecord r = live.get(i);
            long own = r.declaredMillis() + offsetOf(r.id());
            if (r.id() >= clock.aheadFrom() && own > lastNow) {
                ahead.put(r.id(), own);
                continue;
            }
            Map.Entry<Long, Long> floor = floors.floorEntry(r.id());
            long at = Math.min(cap, floor == null ? own : Math.max(own, floor.getValue()));
            if (at != own) lagging.put(r.id(), at);
            cap = at;
        }
    }

    /**
     * The clock's state for a checkpoint mark at wall-clock time {@code wallNow} ({@code live} looks a record up): the
     * correction and the latest time on the policy's clock as a read now would leave them (without moving the clock:
     * the next read finds the same step), the offsets, and a floor for each run of declarations counted later than
     * their time (declared after a step back before the policy read the clock, or read before a read of it).
     */
    PolicyClock clock(LongFunction<SnapshotRecord> live, long wallNow) {
        long latest = Math.max(lastNow, wallNow + offset);
        return clock(live, latest - wallNow, wallNow, PolicyClock.NONE_AHEAD); // a read now would cap what is ahead
    }

    /**
     * As {@link #clock(LongFunction, long)}, reading no clock: the policy's clock as it stands, its latest time the
     * latest one read (unknown when none was). Replay records that at a checkpoint it takes: the latest time its records
     * gave the policy, from which a second replay after a crash decides as the first did; the reopen's clock, past every
     * record replayed, dropped at its old rank a snapshot whose raise came after the mark. The snapshots counted
     * {@link #ahead} of it (replay read no clock to cap them) are recorded as such.
     */
    PolicyClock clockAsRead(LongFunction<SnapshotRecord> live) {
        long aheadFrom = ahead.keySet().stream().mapToLong(Long::longValue).min().orElse(PolicyClock.NONE_AHEAD);
        return clock(live, offset, lastNow == Long.MIN_VALUE ? Long.MIN_VALUE : lastNow - offset, aheadFrom);
    }

    /** The clock's state with {@code correction}, {@code latestWall} and {@code aheadFrom} ({@link PolicyClock}). */
    private PolicyClock clock(LongFunction<SnapshotRecord> live, long correction, long latestWall, long aheadFrom) {
        // a tree that does not age notes no offsets: every snapshot is recorded with the whole correction, so that one
        // that ages after a restart under another policy is kept longer, not dropped early
        long[] steps = ages ? new long[2 * offsetFrom.size()] : correction == 0 ? new long[0] : new long[]{0, correction};
        int i = 0;
        for (Map.Entry<Long, Long> e : ages ? offsetFrom.entrySet() : Map.<Long, Long>of().entrySet()) {
            steps[i++] = e.getKey();
            steps[i++] = e.getValue();
        }
        List<Long> ids = new ArrayList<>(lagging.keySet());
        ids.sort(null);
        long[] floors = new long[2 * ids.size()];
        int f = 0;
        long floor = Long.MIN_VALUE;
        // floors of lags under the tolerance, the oldest (the first to age) up to MAX_STEPS: a clock stepped back a
        // little again and again would otherwise note one per step, all in every checkpoint mark. Each is recorded
        // whether or not a read found a step: replay reads no clock, and a live mark may come before the read that
        // finds it; without its floor the next recovery counts the snapshot at its own, earlier time, and the ones
        // before it, capped at that, earlier than they ever were (a drop before a raise the live run kept it for)
        int shortLags = 0;
        for (long id : ids) {
            SnapshotRecord r = live.apply(id);
            long at = lagging.get(id);
            long own = r == null ? at : r.declaredMillis() + offsetOf(id);
            if (at <= own || at <= floor) continue;
            if (at <= own + PolicyClock.FLOOR_TOLERANCE_MILLIS) {
                if (shortLags == PolicyClock.MAX_STEPS) continue;
                shortLags++;
            }
            floors[f++] = id;
            floors[f++] = at;
            floor = at;
        }
        long[] coarse = PolicyClock.coarsen(steps, correction);
        return new PolicyClock(correction, latestWall, coarse, Arrays.copyOf(floors, f), aheadFrom);
    }

    private void countAt(long id, int fromLevel, int rank) {
        for (int j = fromLevel; j < Math.min(Math.min(rank, levels) + 1, keepAllFrom); j++) {
            SortedIds c = counted[j - 1];
            c.add(id);
            Retention rule = rule(j);
            if (rule.kind() == Retention.Kind.LAST && c.size() > rule.count()) candidate(c.at(c.size() - 1 - rule.count())); // just left the window
        }
    }

    /** Checks {@code id} at the next evaluation (the registry's, for a verdict replay holds until the snapshot's raise). */
    void candidate(long id) {
        if (candidateCount == candidates.length) candidates = Arrays.copyOf(candidates, candidateCount * 2);
        candidates[candidateCount++] = id;
    }

    /**
     * The live snapshots ({@code live} looks a record up, null once dropped) that no level up to their rank keeps at
     * wall-clock time {@code nowMillis}, read under the archive's state lock; oldest first. The caller drops them and
     * {@link #remove}s each.
     */
    List<Verdict> drops(LongFunction<SnapshotRecord> live, long nowMillis) {
        return drops(live, nowMillis, true);
    }

    /**
     * As {@link #drops(LongFunction, long)}; {@code clockRead} false when {@code nowMillis} is a declaration's time
     * (read before the lock, or replayed), which moves the policy's clock forward only and finds no step.
     */
    List<Verdict> drops(LongFunction<SnapshotRecord> live, long nowMillis, boolean clockRead) {
        long now = policyTime(nowMillis, clockRead);
        if (keepsEverything()) return List.of();
        for (int j = 1; j < keepAllFrom; j++) {
            Retention rule = rule(j);
            if (rule.kind() != Retention.Kind.FOR) continue;
            SortedIds c = counted[j - 1];
            for (int i = c.firstAtLeast(agedBelow[j - 1]); i < c.size(); i++) {
                SnapshotRecord r = live.apply(c.at(i));
                if (now - declared(r) <= rule.age().toMillis()) break;
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

    /** Whether a level up to the rank of {@code r} keeps it at {@code now} on the policy's clock: the rule read directly. */
    private boolean kept(SnapshotRecord r, long now) {
        return keeping(r, now) > 0;
    }

    /**
     * The policy's clock at wall-clock time {@code wallMillis}, which it moves to; it never goes back. When
     * {@code clockRead}, an earlier time than the latest is a step back of the wall clock, added to the offset. A
     * declaration's time moves it only while no step was found: after one, that time may have been read before the step
     * (see {@link #ahead}), and the offset would carry the clock the step ahead, aging every snapshot by it at once.
     */
    private long policyTime(long wallMillis, boolean clockRead) {
        long t = wallMillis + offset;
        if (clockRead && lastNow != Long.MIN_VALUE && t < lastNow) {
            offset += lastNow - t;
            t = lastNow;
        }
        if (clockRead || offset == 0) lastNow = Math.max(t, lastNow);
        if (clockRead) {
            for (Map.Entry<Long, Long> a : ahead.entrySet()) if (a.getValue() > lastNow) lagging.put(a.getKey(), lastNow);
            ahead.clear();
        }
        return lastNow;
    }

    /** When {@code r} was declared on the policy's clock. */
    private long declared(SnapshotRecord r) {
        Long lagged = lagging.get(r.id());
        return lagged != null ? lagged : r.declaredMillis() + offsetOf(r.id());
    }

    /** The offset snapshot {@code id}'s declared time is counted with. */
    private long offsetOf(long id) {
        Map.Entry<Long, Long> from = offsetFrom.floorEntry(id);
        return from == null ? 0 : from.getValue();
    }

    /** {@link #keeping} at wall-clock time {@code wallMillis}, without moving the policy's clock. */
    int keptAt(SnapshotRecord r, long wallMillis) {
        return keeping(r, Math.max(wallMillis + offset, lastNow));
    }

    /**
     * The level whose rule keeps live snapshot {@code r} at {@code now} on the policy's clock: the lowest keepAll level
     * up to its rank when there is one (nothing drops it then, but a budget), else the highest level up to its rank that
     * keeps it; 0 when none does (it goes at the next evaluation). The rules read directly.
     */
    private int keeping(SnapshotRecord r, long now) {
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
                    if (now - declared(r) <= rule.age().toMillis()) return j;
                }
                default -> {
                    return j;
                }
            }
        }
        return 0;
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
