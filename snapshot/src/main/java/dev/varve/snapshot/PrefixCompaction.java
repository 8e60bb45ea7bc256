package dev.varve.snapshot;

import java.util.List;
import java.util.function.LongPredicate;

/**
 * When and how far a one-part log of the Maplog format whose entries name snapshots (the drop, join and move logs) is
 * rewritten without its oldest entries ({@link MaplogFile#compactBefore}): only once it holds at least
 * {@code minEntries} and twice what it held after its last compaction, so that each rewrite is paid for by the log's
 * own growth, and only up to the first entry something may still read. Entries are removed as a prefix: an entry
 * still needed keeps every one after it, so a log holds at most the span since its oldest needed entry — except that
 * the join and move logs, where only a snapshot's latest entries count, write an old needed entry again at the end
 * when it holds back much more than itself ({@link #compactLatest}). Guarded by whoever owns the log; called after a
 * checkpoint's end marker, holding the append gate.
 */
final class PrefixCompaction {
    /** Whether an entry (its first two fields) may still be read: a compaction keeps it and everything after it. */
    @FunctionalInterface
    interface Needed {
        boolean test(long a, long b);
    }

    /** Entries read at a time while looking for the first one still needed (128 KiB). */
    private static final int CHUNK = 4096;
    private final long minEntries;
    private long compactAt;
    /**
     * Position of the first entry {@link #compactLatest} wrote again, until a compaction after a mark that counts it
     * lets the old ones go; -1 when none waits. Until then the log is due at every try.
     */
    private long refreshedFrom = -1;

    PrefixCompaction(long minEntries) {
        this.minEntries = minEntries;
        this.compactAt = minEntries;
    }

    /**
     * Rewrites {@code file} without the entries before the first one {@code needed} says may still be read, and never
     * past position {@code limit}, once it has grown enough since the last try.
     */
    void compact(MaplogFile file, long limit, Needed needed) {
        if (!due(file)) return;
        long cut = Math.min(limit, firstNeeded(file, needed));
        if (cut > file.first()) file.compactBefore(cut);
        compactAt = Math.max(minEntries, 2 * (file.count() - file.first()));
    }

    /**
     * Of a log where a snapshot's latest entry in each slot wins ({@link LatestEntries}): rewrites {@code file} without
     * the entries before the first one recovery from the latest mark may still read — of a snapshot {@code keeps}
     * accepts, the latest of its slot before the mark; anything after the mark — once it has grown enough since the
     * last try. When that first entry holds back much more than itself ({@link LatestEntries#worthRefreshing}: a
     * snapshot kept for good whose entries are old), and {@code mayRefresh} (the live snapshots are known, so no
     * dropped one is written again), the needed entries of the oldest kept snapshots are first appended again, as
     * {@code refreshedA} and the same snapshot and third field, and the log stays due until a compaction after the
     * next mark, which then lets the old ones go.
     *
     * <p>Why that is safe: {@code refreshedA} must count after the latest mark and before the next one (recovery from
     * the latest reads a prefix that stops before the copies, so a crash before the next mark finds the old entries
     * and cuts the copies like any entry after it; recovery from the next reads both, and the copies, being later, win
     * with the same values). A snapshot with an entry after the mark is never copied: that entry, newer, must keep
     * winning. Appends are held off meanwhile (the caller holds the log's append gate), so no entry of the snapshot
     * can come between what was read and its copy.
     */
    void compactLatest(MaplogFile file, LatestEntries.Shape shape, long refreshedA, LongPredicate keeps, boolean mayRefresh) {
        if (!due(file)) return;
        LatestEntries latest = LatestEntries.scan(file, shape, keeps);
        if (refreshedFrom >= 0 && latest.boundary > refreshedFrom) refreshedFrom = -1; // a mark counts the copies: the old entries go now
        List<LatestEntries.Held> refresh = mayRefresh && refreshedFrom < 0 ? latest.worthRefreshing(file.count()) : List.of();
        if (!refresh.isEmpty()) refreshedFrom = file.count();
        for (LatestEntries.Held h : refresh) for (int i = 0; i < h.entries(); i++) file.append(refreshedA, h.id, h.value(i));
        long cut = latest.cut(); // at or before the mark: the copies stay, and so does what they copy until a mark counts them
        if (cut > file.first()) file.compactBefore(cut);
        compactAt = Math.max(minEntries, 2 * (file.count() - file.first()));
    }

    /** Whether {@link #compact} would try to rewrite {@code file} now: it has grown enough since the last try, or copies wait. */
    boolean due(MaplogFile file) {
        return refreshedFrom >= 0 || file.count() - file.first() >= compactAt;
    }

    /** Position of the first entry of {@code file} that {@code needed} keeps; its count when none is. */
    static long firstNeeded(MaplogFile file, Needed needed) {
        long[] a = new long[CHUNK];
        long[] b = new long[CHUNK];
        long end = file.count();
        for (long at = file.first(); at < end; at += CHUNK) {
            int n = (int) Math.min(CHUNK, end - at);
            file.read(at, n, a, b, null);
            for (int i = 0; i < n; i++) if (needed.test(a[i], b[i])) return at + i;
        }
        return end;
    }
}
