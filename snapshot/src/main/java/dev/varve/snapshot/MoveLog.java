package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The lazy-ranking copies made at checkpoint marks ({@code moves.log}, a {@link MaplogDescriptor.Kind#MOVES} log): per
 * copy (mark LSN, snapshot, target), the target packed by {@link ArchiveEncoding#moveTarget} — level, the snapshot's
 * Start there and, in every entry written since entries record it, whether the copy wrote a ranked extent — so that
 * recovery knows which extent files must exist. Older entries say nothing: an extent found for them is used, none is
 * none. A compaction may write a live snapshot's latest copy again with the mark after the latest one's LSN
 * ({@link #compact}): the same copy, logged later.
 */
final class MoveLog implements AutoCloseable {
    /** One copy: {@code extent} is null when the entry predates recording it. */
    record Move(long mark, long id, int level, long start, Boolean extent) {
    }

    private final MaplogFile log;
    private final PrefixCompaction compaction = new PrefixCompaction(SnapshotRegistry.COMPACT_MIN_RECORDS);
    private long kept;

    /** The moves of the store whose durable id {@code storeId} holds (0 until a marker does), see {@link MaplogFile}. */
    MoveLog(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing, AtomicLong storeId) {
        this.log = new MaplogFile(io, dir.resolve("moves.log"), MaplogDescriptor.Kind.MOVES, MaplogDescriptor.NO_LEVEL, nodeEntries, MaplogFile.ONE_PART, missing,
                storeId);
    }

    Path path() {
        return log.path();
    }

    long count() {
        return log.count();
    }

    /** Logs that snapshot {@code id} was copied into {@code level} at mark {@code markLsn}, reading it from {@code start} there. */
    void append(long markLsn, long id, int level, long start, boolean wroteExtent) {
        log.append(markLsn, id, ArchiveEncoding.moveTarget(level, start, wroteExtent));
    }

    /**
     * Recovery, reading only: the copies made at marks up to the recovered one (their extents and entries were durable
     * before its start marker; replay redoes the later ones), checking that the log holds the {@code durable} entries
     * the mark recorded (-1: not known).
     */
    List<Move> prepare(long markLsn, boolean emptyStore, long durable) {
        log.checkDurable(durable);
        long first = log.first(); // a compaction let the entries before it go, all of snapshots dropped by then
        kept = log.prefix(mark -> !emptyStore && mark <= markLsn);
        if (kept < durable)
            throw new CorruptionException("the move log holds " + kept + " copies up to checkpoint mark " + markLsn + " but the mark recorded "
                    + durable, log.pathOf(first), MaplogDescriptor.entryOffset(kept - first));
        int n = (int) (kept - first);
        long[] marks = new long[n];
        long[] ids = new long[n];
        long[] packed = new long[n];
        log.read(first, n, marks, ids, packed);
        List<Move> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long p = packed[i];
            out.add(new Move(marks[i], ids[i], ArchiveEncoding.moveLevel(p), ArchiveEncoding.moveStart(p), ArchiveEncoding.moveWroteExtent(p)));
        }
        return out;
    }

    /** Recovery, once the store is decided sound: cuts the entries {@link #prepare} did not keep. */
    void cut() {
        log.truncate(kept);
        log.force();
    }

    /** Whether {@link #compact} would try now (decided under the state lock, to plan what it keeps). */
    boolean due() {
        return compaction.due(log);
    }

    /**
     * After the end marker of the checkpoint of mark {@code markLsn}, holding the append gate: lets go of the copies
     * recovery from that mark no longer uses — those of the snapshots {@code plan} does not keep (each dropped, its
     * drop durable) and those a later copy of the same snapshot made at a mark up to it supersedes — up to the first one
     * it still uses, once the log has grown enough ({@link PrefixCompaction#compactLatest}). Recovery reads the copies
     * made at marks up to its own, and none is made after this mark before the next checkpoint's: a copy written again
     * carries {@code markLsn + 1}, which counts after this mark and not after the next (a later WAL position), and the
     * same target, so it says what the old entry said — the same extent file, named by level and snapshot.
     */
    void compact(CompactionPlan plan, long markLsn) {
        LatestEntries.Shape copies = new LatestEntries.Shape(mark -> mark <= markLsn, target -> 0); // one slot: the latest copy wins
        compaction.compactLatest(log, copies, markLsn + 1, plan::keeps, plan.live() != null);
    }

    void force() {
        log.force();
    }

    @Override
    public void close() {
        log.close();
    }
}
