package dev.varve.snapshot;

import java.util.Arrays;

import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_AHEAD_FROM;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_CORRECTION;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_FLOOR_AT;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_FLOOR_FROM;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_LATEST_WALL;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_STEP_FROM;
import static dev.varve.snapshot.ArchiveMarksDescriptor.CLOCK_STEP_OFFSET;

/**
 * What the retention policy's clock ({@link RankTree}) had found at a checkpoint mark, recorded with the mark
 * ({@link ArchiveMarks}) so that a restart goes on counting keepFor ages in elapsed time: without it a restart forgot
 * the steps back of the wall clock, and a snapshot declared while the clock ran ahead held every later one of its level
 * until the clock passed its time again.
 *
 * @param correction what the wall clock lost in its steps back so far: the policy's clock is the wall clock plus this
 * @param latestWall the latest wall-clock time the policy read (its latest time less the correction); Long.MIN_VALUE
 *                   when it read none, or the mark is of an earlier build, which recorded none
 * @param steps      (id, offset) pairs, ids increasing: from each id on, a declared time is counted with that offset
 * @param floors     (id, time) pairs, ids increasing: from each id on, a snapshot counts as declared no earlier than
 *                   that time on the policy's clock (one declared after a step back before the policy read the clock)
 * @param aheadFrom  from this snapshot id on, one whose own time is past the latest time read counts as declared
 *                   then, not at that latest time: a mark replay took, which read no clock, counted its replayed
 *                   declarations so ({@link RankTree#clockAsRead}); {@link #NONE_AHEAD} when none was
 */
record PolicyClock(long correction, long latestWall, long[] steps, long[] floors, long aheadFrom) {
    /** {@link #aheadFrom} when no snapshot counted ahead of the clock (every mark but one replay took). */
    static final long NONE_AHEAD = Long.MAX_VALUE;
    /** A mark of an earlier build, or of a store that never read the clock: no correction. */
    static final PolicyClock NONE = new PolicyClock(0, Long.MIN_VALUE, new long[0], new long[0], NONE_AHEAD);
    /**
     * Offsets recorded at most: a clock stepped back again and again (a hypervisor's time sync) notes one per step
     * among the live snapshots; past this many the closest ones are recorded merged into the larger, so that a restart
     * keeps those snapshots longer (by at most the correction over this), never drops one early.
     */
    static final int MAX_STEPS = 64;
    /**
     * A declaration counted this much later than its own time or less (a pause before the lock, or a short step back)
     * records its floor only among the {@link #MAX_STEPS} oldest such, so that a clock stepped back a little again and
     * again does not grow every mark by one floor per step.
     */
    static final long FLOOR_TOLERANCE_MILLIS = 1_000;

    /** Whether the mark recorded the clock (a store of an earlier build did not). */
    boolean known() {
        return latestWall != Long.MIN_VALUE;
    }

    /** The latest time the policy's clock read, Long.MIN_VALUE when unknown. */
    long latestPolicyTime() {
        return known() ? latestWall + correction : Long.MIN_VALUE;
    }

    /**
     * The correction at an open at wall-clock time {@code wallNow}: a clock behind the latest time the store read was
     * stepped back after that read (while the store was down, or after its last checkpoint), by at least the lag.
     */
    long correctionAt(long wallNow) {
        return known() ? correction + Math.max(0, latestWall - wallNow) : correction;
    }

    /** Receives a mark's entries. */
    interface Entries {
        void put(long key, long value);
    }

    /** Writes the entries of a checkpoint mark's group; none for {@link #NONE}'s unknown latest time. */
    void writeTo(Entries out) {
        out.put(CLOCK_CORRECTION, correction);
        if (known()) out.put(CLOCK_LATEST_WALL, latestWall);
        for (int i = 0; i < steps.length; i += 2) {
            out.put(CLOCK_STEP_FROM, steps[i]);
            out.put(CLOCK_STEP_OFFSET, steps[i + 1]);
        }
        for (int i = 0; i < floors.length; i += 2) {
            out.put(CLOCK_FLOOR_FROM, floors[i]);
            out.put(CLOCK_FLOOR_AT, floors[i + 1]);
        }
        if (aheadFrom != NONE_AHEAD) out.put(CLOCK_AHEAD_FROM, aheadFrom);
    }

    /** Reads the entries {@link #writeTo} wrote from a mark's group; {@link #NONE} when the group holds none. */
    static PolicyClock read(long[] what, long[] value) {
        long correction = 0;
        long latest = Long.MIN_VALUE;
        long aheadFrom = NONE_AHEAD;
        long[] steps = new long[8];
        long[] floors = new long[8];
        int s = 0;
        int f = 0;
        for (int i = 0; i < what.length; i++) {
            boolean pair = i + 1 < what.length;
            if (what[i] == CLOCK_CORRECTION) correction = value[i];
            else if (what[i] == CLOCK_LATEST_WALL) latest = value[i];
            else if (what[i] == CLOCK_AHEAD_FROM) aheadFrom = value[i];
            else if (what[i] == CLOCK_STEP_FROM && pair && what[i + 1] == CLOCK_STEP_OFFSET) {
                if (s == steps.length) steps = Arrays.copyOf(steps, 2 * s);
                steps[s++] = value[i];
                steps[s++] = value[++i];
            } else if (what[i] == CLOCK_FLOOR_FROM && pair && what[i + 1] == CLOCK_FLOOR_AT) {
                if (f == floors.length) floors = Arrays.copyOf(floors, 2 * f);
                floors[f++] = value[i];
                floors[f++] = value[++i];
            }
        }
        return new PolicyClock(correction, latest, Arrays.copyOf(steps, s), Arrays.copyOf(floors, f), aheadFrom);
    }

    /**
     * {@code steps} ((id, offset) pairs, offsets increasing with the ids) cut to at most {@link #MAX_STEPS}: a run of
     * offsets closer than the correction over that many is recorded as one, from its first id, with its largest
     * offset — the snapshots of the run count as declared later, never earlier, than they were.
     */
    static long[] coarsen(long[] steps, long correction) {
        int n = steps.length / 2;
        if (n <= MAX_STEPS) return steps;
        long grain = Math.max(1, correction / MAX_STEPS + 1);
        long[] out = new long[steps.length];
        int k = 0;
        long runFrom = steps[2 * (n - 1)];
        long runOffset = steps[2 * (n - 1) + 1];
        for (int i = n - 2; i >= 0; i--) { // newest first: a run takes the offset of its newest step
            if (runOffset - steps[2 * i + 1] >= grain) {
                out[k++] = runOffset;
                out[k++] = runFrom;
                runOffset = steps[2 * i + 1];
            }
            runFrom = steps[2 * i];
        }
        out[k++] = runOffset;
        out[k++] = runFrom;
        long[] ordered = new long[k]; // written newest first, offset before id: turn it round
        for (int i = 0; i < k; i += 2) {
            ordered[i] = out[k - 1 - i];
            ordered[i + 1] = out[k - 2 - i];
        }
        return ordered;
    }
}
