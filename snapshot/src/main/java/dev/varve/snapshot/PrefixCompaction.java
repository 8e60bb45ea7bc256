package dev.varve.snapshot;

/**
 * When and how far a one-part log of the Maplog format whose entries name snapshots (the drop, join and move logs) is
 * rewritten without its oldest entries ({@link MaplogFile#compactBefore}): only once it holds at least
 * {@code minEntries} and twice what it held after its last compaction, so that each rewrite is paid for by the log's
 * own growth, and only up to the first entry something may still read. Entries are removed as a prefix: an entry
 * still needed keeps every one after it, so a log holds at most the span since its oldest needed entry. Guarded by
 * whoever owns the log; called after a checkpoint's end marker, holding the append gate.
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

    /** Whether {@link #compact} would try to rewrite {@code file} now: it has grown enough since the last try. */
    boolean due(MaplogFile file) {
        return file.count() - file.first() >= compactAt;
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
