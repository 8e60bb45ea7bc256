package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The lazy-ranking copies made at checkpoint marks ({@code moves.log}): per copy (mark LSN, snapshot, target), the
 * target packed as level &lt;&lt; 56 | the snapshot's Start at that level, with {@link #SAYS_EXTENT} set in every entry
 * written since entries record whether the copy wrote a ranked extent ({@link #WROTE_EXTENT}) — so that recovery
 * knows which extent files must exist. Older entries say nothing: an extent found for them is used, none is none.
 */
final class MoveLog implements AutoCloseable {
    /** The entry records whether an extent was written (levels take bits 56..60: at most 16). */
    private static final long SAYS_EXTENT = 1L << 62;
    private static final long WROTE_EXTENT = 1L << 61;
    private static final long LEVEL_MASK = 0x1f;

    /** One copy: {@code extent} is null when the entry predates recording it. */
    record Move(long mark, long id, int level, long start, Boolean extent) {
    }

    private final MaplogFile log;
    private long kept;

    MoveLog(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing) {
        this.log = new MaplogFile(io, dir.resolve("moves.log"), MaplogFile.KIND_MOVES, -1, nodeEntries, missing);
    }

    Path path() {
        return log.path();
    }

    long count() {
        return log.count();
    }

    /** Logs that snapshot {@code id} was copied into {@code level} at mark {@code markLsn}, reading it from {@code start} there. */
    void append(long markLsn, long id, int level, long start, boolean wroteExtent) {
        log.append(markLsn, id, ArchiveLevel.location(level, start) | SAYS_EXTENT | (wroteExtent ? WROTE_EXTENT : 0));
    }

    /**
     * Recovery, reading only: the copies made at marks up to the recovered one (their extents and entries were durable
     * before its start marker; replay redoes the later ones), checking that the log holds the {@code durable} entries
     * the mark recorded (-1: not known).
     */
    List<Move> prepare(long markLsn, boolean emptyStore, long durable) {
        log.checkDurable(durable);
        kept = log.prefix(mark -> !emptyStore && mark <= markLsn);
        if (kept < durable)
            throw new CorruptionException("the move log holds " + kept + " copies up to checkpoint mark " + markLsn + " but the mark recorded "
                    + durable, log.path(), MaplogFile.HEADER + kept * MaplogFile.ENTRY);
        int n = (int) kept;
        long[] marks = new long[n];
        long[] ids = new long[n];
        long[] packed = new long[n];
        log.read(0, n, marks, ids, packed);
        List<Move> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long p = packed[i];
            Boolean extent = (p & SAYS_EXTENT) == 0 ? null : (p & WROTE_EXTENT) != 0;
            out.add(new Move(marks[i], ids[i], (int) ((p >>> 56) & LEVEL_MASK), ArchiveLevel.addressOf(p), extent));
        }
        return out;
    }

    /** Recovery, once the store is decided sound: cuts the entries {@link #prepare} did not keep. */
    void cut() {
        log.truncate(kept);
        log.force();
    }

    void force() {
        log.force();
    }

    @Override
    public void close() {
        log.close();
    }
}
