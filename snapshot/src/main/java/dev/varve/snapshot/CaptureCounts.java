package dev.varve.snapshot;

import java.util.Arrays;

/**
 * What the pre-states first captured for each snapshot take in the archive, in bytes, counted for the byte budget
 * ({@link RetentionEnforcer}; a diff's count shrinks when the next diff of its pack arrives): a run of counts
 * indexed by snapshot id from the oldest one counted. Snapshot ids are consecutive and captures are counted in archive
 * order, which is snapshot order, so a count is an increment at or near the end of the run, and forgetting the
 * snapshots older than the oldest live one moves its front: no search and no allocation per capture, and 8 bytes of
 * heap per retained snapshot where a sorted map of boxed ids took about 80. Guarded by the archive's state lock.
 */
final class CaptureCounts {
    private long[] counts = new long[64];
    /** Snapshot {@code first + i} is counted at {@code counts[from + i]}, for i in [0, to - from). */
    private long first;
    private int from;
    private int to;
    /** Snapshots below this one are forgotten: counting them again is a no-op. */
    private long forgottenBelow = Long.MIN_VALUE;

    /** Counts {@code n} more for {@code snapshot} (fewer when negative). */
    void add(long snapshot, long n) {
        if (snapshot < forgottenBelow) return;
        if (from == to) {
            from = 0;
            to = 0;
            first = snapshot;
        } else if (snapshot < first) {
            prepend(first - snapshot);
        }
        long index = snapshot - first;
        if (from + index >= counts.length) grow(index + 1);
        int at = from + (int) index;
        if (at >= to) {
            Arrays.fill(counts, to, at + 1, 0);
            to = at + 1;
        }
        counts[at] += n;
    }

    /** What is counted for {@code snapshot}; 0 when nothing or forgotten. */
    long get(long snapshot) {
        if (snapshot < first || snapshot - first >= to - from) return 0;
        return counts[from + (int) (snapshot - first)];
    }

    /** Forgets every snapshot below {@code oldest}. */
    void forgetBelow(long oldest) {
        forgottenBelow = Math.max(forgottenBelow, oldest);
        if (oldest <= first) return;
        long drop = Math.min(oldest - first, to - from);
        from += (int) drop;
        first += drop;
    }

    /** Forgets every count (recovery counts them again); later counts start afresh. */
    void clear() {
        from = 0;
        to = 0;
        forgottenBelow = Long.MIN_VALUE;
    }

    /** Makes room for {@code entries} counts from {@code from}: drops the forgotten front, doubling when needed. */
    private void grow(long entries) {
        if (entries > Integer.MAX_VALUE - 8) throw new IllegalStateException("capture counts for " + entries + " snapshots");
        int used = to - from;
        long[] next = entries * 2 > counts.length ? new long[(int) Math.min(Integer.MAX_VALUE - 8, Math.max(entries, counts.length) * 2)] : counts;
        System.arraycopy(counts, from, next, 0, used);
        counts = next;
        from = 0;
        to = used;
    }

    /** A count below the first one (not in archive order): moves the run up by {@code k}. */
    private void prepend(long k) {
        int used = to - from;
        grow(used + k);
        System.arraycopy(counts, 0, counts, (int) k, used);
        Arrays.fill(counts, 0, (int) k, 0);
        to = used + (int) k;
        first -= k;
    }
}
