package dev.varve.snapshot;

import java.util.Arrays;

/**
 * What the pre-states first captured for each snapshot take in the archive, in bytes, counted for the byte budget
 * ({@link RetentionEnforcer}; a diff's count shrinks when the next diff of its pack arrives): a run of counts
 * indexed by snapshot id from the oldest one counted. Snapshot ids are consecutive and captures are counted in archive
 * order, which is snapshot order, so a count is an increment at or near the end of the run, and forgetting the
 * snapshots older than the oldest live one moves its front: no search and no allocation per capture, and 8 bytes of
 * heap per retained snapshot where a sorted map of boxed ids took about 80. A snapshot kept for good would keep the
 * front, and 8 bytes for every snapshot declared after it, for the rest of the store's life: {@link #trim} moves the
 * front past it anyway, setting the counts of the live snapshots below aside, one map entry each, and forgetting the
 * others'. Guarded by the archive's state lock.
 */
final class CaptureCounts {
    private long[] counts = new long[64];
    /** Snapshot {@code first + i} is counted at {@code counts[from + i]}, for i in [0, to - from). */
    private long first;
    private int from;
    private int to;
    /** Snapshots below this one are forgotten: counting them again is a no-op. */
    private long forgottenBelow = Long.MIN_VALUE;
    /** Below this id only the snapshots {@link #older} holds are counted: the run's front was {@link #trim}med to it. */
    private long trimmedBelow = Long.MIN_VALUE;
    /** The counts of the live snapshots below {@link #trimmedBelow}, set aside by {@link #trim}. */
    private final java.util.TreeMap<Long, Long> older = new java.util.TreeMap<>();

    /** Counts {@code n} more for {@code snapshot} (fewer when negative). */
    void add(long snapshot, long n) {
        if (snapshot < forgottenBelow) return;
        if (snapshot < trimmedBelow) {
            older.computeIfPresent(snapshot, (id, c) -> c + n); // a no-op for one the trim forgot
            return;
        }
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
        if (snapshot < trimmedBelow) return older.getOrDefault(snapshot, 0L);
        if (snapshot < first || snapshot - first >= to - from) return 0;
        return counts[from + (int) (snapshot - first)];
    }

    /** Forgets every snapshot below {@code oldest}. */
    void forgetBelow(long oldest) {
        forgottenBelow = Math.max(forgottenBelow, oldest);
        older.headMap(oldest).clear();
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
        trimmedBelow = Long.MIN_VALUE;
        older.clear();
    }

    /** Snapshots the run spans, counted or not: what it takes in the heap, 8 bytes each. */
    int span() {
        return to - from;
    }

    /**
     * Moves the run's front up to {@code front}: of the snapshots below it, the counts of those {@code live} names
     * (sorted ids, the live snapshots below it) are set aside — also those the run does not reach yet, whose captures
     * are still to come (recovery recounts oldest first, every snapshot already declared) — and the others forgotten,
     * as if dropped (their counts are needed no more: a drop takes its bytes when it is made), those set aside by an
     * earlier trim and dropped since too.
     */
    void trim(long front, long[] live) {
        if (front <= trimmedBelow) return;
        java.util.TreeMap<Long, Long> kept = new java.util.TreeMap<>();
        for (long id : live) if (id < front && id >= forgottenBelow) kept.put(id, get(id));
        older.clear();
        older.putAll(kept);
        if (front > first && from < to) {
            long drop = Math.min(front - first, to - from);
            from += (int) drop;
            first += drop;
        }
        trimmedBelow = front;
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
