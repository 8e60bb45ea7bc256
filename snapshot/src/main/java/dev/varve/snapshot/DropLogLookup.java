package dev.varve.snapshot;

/**
 * Reading the drop log ({@code drops.log}) back: what a drop record says (who dropped the snapshot, at which rank),
 * and finding the drop of one snapshot among all the store ever made.
 *
 * <p>Design note. The log holds one entry per drop back to the snapshot log's horizon, the latest compaction's, and the
 * latest 4,096 (older ones are compacted away, {@link DropLog#compactBelow}), which can still be many, and the registry keeps only the most recent
 * drops in memory; an older one is looked for here, newest first, {@value #CHUNK} entries a read (one read per entry
 * cost a read per drop since: 0.5 s with 600,000 drops). The lookup takes no archive lock: entries below the count
 * read under it never change while the archive is open, though a compaction may remove the oldest, and the log's own
 * monitor guards each read (see {@link SnapshotArchive#dropped}), so an append waits out one chunk at most.
 */
final class DropLogLookup {
    /** A drop record's cause: the retention policy let the snapshot go. */
    static final long DROPPED_BY_POLICY = 0;
    /** A drop record's cause: the archive's byte budget made room. */
    static final long DROPPED_BY_BUDGET = 1;
    /** Drop log entries read at a time by a lookup of an old drop (128 KiB). */
    static final int CHUNK = 4096;

    private DropLogLookup() {
    }

    /**
     * The drop of {@code id} among the entries of {@code drops} before position {@code end}, or null when there is
     * none: not dropped, or its entry compacted away meanwhile ({@link DropLog#compactBelow}).
     */
    static DroppedSnapshot find(MaplogFile drops, long id, long end) {
        long[] ids = new long[CHUNK];
        long[] when = new long[CHUNK];
        long[] kind = new long[CHUNK];
        for (long to = end; ; ) {
            int n = drops.readBefore(to, CHUNK, ids, when, kind);
            if (n == 0) return null;
            for (int i = n - 1; i >= 0; i--) if (ids[i] == id) return dropped(id, when[i], kind[i]);
            to -= n;
        }
    }

    /**
     * Every drop among the entries of {@code drops} before position {@code end} that it still holds, by id: one pass
     * over the log, newest first, {@value #CHUNK} entries a read (the tools' listing, which a lookup per id made
     * quadratic in the drops held).
     */
    static java.util.List<DroppedSnapshot> all(MaplogFile drops, long end) {
        long[] ids = new long[CHUNK];
        long[] when = new long[CHUNK];
        long[] kind = new long[CHUNK];
        java.util.List<DroppedSnapshot> out = new java.util.ArrayList<>();
        for (long to = end; ; ) {
            int n = drops.readBefore(to, CHUNK, ids, when, kind);
            if (n == 0) break;
            for (int i = n - 1; i >= 0; i--) out.add(dropped(ids[i], when[i], kind[i]));
            to -= n;
        }
        out.sort(java.util.Comparator.comparingLong(DroppedSnapshot::id));
        return out;
    }

    /** A drop as its record tells it: the reason is its cause (low byte) and the snapshot's rank then. */
    static DroppedSnapshot dropped(long id, long whenMillis, long recorded) {
        long rank = MaplogDescriptor.dropRank(recorded);
        String why = MaplogDescriptor.dropCause(recorded) == DROPPED_BY_BUDGET
                ? "the archive passed the budget then in force, with no snapshot of a lower rank or older left to drop first"
                : "no level up to its rank " + (rank == 0 ? "" : rank + " ") + "kept it under the policy then in force";
        return new DroppedSnapshot(id, whenMillis, why);
    }
}
