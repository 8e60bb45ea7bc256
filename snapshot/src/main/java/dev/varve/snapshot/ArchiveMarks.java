package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.Arrays;

/**
 * What the archive made durable at each checkpoint mark ({@value #FILE}): one group of entries (mark LSN, what,
 * value) per mark, appended before the checkpoint's start marker — per level the Maplog position and volume address
 * everything below was durable up to; the record counts of the snapshot, drop, join and move logs; the latest
 * snapshot id at the mark and the highest id the snapshot log then held; and last an end entry counting the group,
 * so that a group cut short is never taken for a whole one.
 *
 * <p>Recovery reads the recovered mark's group ({@link #find}) and checks every log against it, so a log that was cut
 * short, lost a record or was deleted is found at open, and snapshot ids are never handed out again. Archives
 * written before the counts existed hold their marks as plain level entries (kind KIND_UPLINKS, no end entry):
 * they are read without the count checks.
 */
final class ArchiveMarks implements AutoCloseable {
    static final String FILE = "archive-marks.log";
    /** What: a level j (1..) carries its Maplog position; j + ADDRESSES its volume address. */
    private static final long ADDRESSES = 1000;
    private static final long SNAPSHOTS = 2001;
    private static final long DROPS = 2002;
    private static final long JOINS = 2003;
    private static final long MOVES = 2004;
    private static final long LATEST = 2005;
    private static final long HIGH_WATER = 2006;
    private static final long END = 2100;
    private static final int CHUNK = 1024;

    /**
     * One mark: per level (index j - 1) Maplog positions and volume addresses; the log counts and ids, -1 in marks
     * written before they were recorded.
     */
    record Mark(long lsn, long[] mappings, long[] addresses, long snapshots, long drops, long joins, long moves, long latest, long highWater) {
        /** An empty store's: nothing is durable. */
        static Mark none(int levels) {
            return new Mark(-1, new long[levels], new long[levels], 0, 0, 0, 0, 0, 0);
        }
    }

    private final MaplogFile log;
    /** Entries up to the end of the recovered mark's group (recovery cuts the rest). */
    private long recoveredEnd;

    ArchiveMarks(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing) {
        this.log = new MaplogFile(io, dir.resolve(FILE), MaplogFile.KIND_MARKS, -1, nodeEntries, missing);
    }

    Path path() {
        return log.path();
    }

    /** True when the marks were written before they recorded the log counts. */
    boolean olderFormat() {
        return log.olderMarks();
    }

    /** Appends and makes durable the group of mark {@code m}. */
    void append(Mark m) {
        int k = m.mappings().length;
        for (int j = 1; j <= k; j++) {
            log.append(m.lsn(), j, m.mappings()[j - 1]);
            log.append(m.lsn(), ADDRESSES + j, m.addresses()[j - 1]);
        }
        log.append(m.lsn(), SNAPSHOTS, m.snapshots());
        log.append(m.lsn(), DROPS, m.drops());
        log.append(m.lsn(), JOINS, m.joins());
        log.append(m.lsn(), MOVES, m.moves());
        log.append(m.lsn(), LATEST, m.latest());
        log.append(m.lsn(), HIGH_WATER, m.highWater());
        log.append(m.lsn(), END, 2L * k + 7);
        log.force();
    }

    /**
     * The recovered mark {@code markLsn}'s group, for an archive of {@code levels} levels (levels added since the mark
     * held nothing then). Reads only; a damaged, incomplete or missing group is a {@link CorruptionException} naming
     * this file.
     */
    Mark find(long markLsn, int levels) {
        long end = groupEnd(markLsn);
        if (end < 0) {
            log.checkDurable(-1); // damage before the end of the valid entries hides the group: name where
            throw new CorruptionException("the archive has no record of checkpoint mark " + markLsn, path(), offsetOf(log.count()));
        }
        log.checkDurable(end);
        long start = end - 1;
        long[] lsn = new long[1];
        while (start > 0) {
            log.read(start - 1, 1, lsn, null, null);
            if (lsn[0] != markLsn) break;
            start--;
        }
        int n = (int) (end - start);
        long[] what = new long[n];
        long[] value = new long[n];
        log.read(start, n, null, what, value);
        Mark m = decode(markLsn, levels, what, value, offsetOf(start));
        recoveredEnd = end;
        return m;
    }

    /** Position after the last entry of mark {@code markLsn}, -1 when the log holds none. */
    private long groupEnd(long markLsn) {
        long[] lsn = new long[CHUNK];
        for (long to = log.count(); to > log.first(); ) {
            long from = Math.max(log.first(), to - CHUNK);
            log.read(from, (int) (to - from), lsn, null, null);
            for (long i = to - 1; i >= from; i--) if (lsn[(int) (i - from)] == markLsn) return i + 1;
            to = from;
        }
        return -1;
    }

    private Mark decode(long markLsn, int levels, long[] what, long[] value, long offset) {
        long[] counts = new long[(int) (END - SNAPSHOTS)];
        Arrays.fill(counts, -1);
        long[] mappings = new long[levels];
        long[] addresses = new long[levels];
        int n = what.length;
        boolean ended = what[n - 1] == END;
        if (ended ? value[n - 1] != n : !olderFormat())
            throw new CorruptionException("the record of checkpoint mark " + markLsn + " is incomplete (" + n + " entries)", path(), offset);
        for (int i = 0; i < n; i++) {
            long w = what[i];
            if (w >= 1 && w <= levels) mappings[(int) w - 1] = value[i];
            else if (w > ADDRESSES && w <= ADDRESSES + levels) addresses[(int) (w - ADDRESSES) - 1] = value[i];
            else if (w >= SNAPSHOTS && w < END) counts[(int) (w - SNAPSHOTS)] = value[i];
        }
        return new Mark(markLsn, mappings, addresses, counts[(int) (SNAPSHOTS - SNAPSHOTS)], counts[(int) (DROPS - SNAPSHOTS)],
                counts[(int) (JOINS - SNAPSHOTS)], counts[(int) (MOVES - SNAPSHOTS)], counts[(int) (LATEST - SNAPSHOTS)], counts[(int) (HIGH_WATER - SNAPSHOTS)]);
    }

    private static long offsetOf(long entry) {
        return MaplogFile.HEADER + entry * MaplogFile.ENTRY;
    }

    /**
     * Recovery, once the store is decided sound: drops the groups after the recovered mark (of checkpoints that did
     * not complete) and any torn tail; everything when no checkpoint completed ({@code emptyStore}).
     */
    void cut(boolean emptyStore) {
        log.truncate(emptyStore ? 0 : recoveredEnd);
        log.force();
    }

    @Override
    public void close() {
        log.close();
    }
}
