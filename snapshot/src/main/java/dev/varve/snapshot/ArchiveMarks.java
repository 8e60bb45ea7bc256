package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

import static dev.varve.snapshot.ArchiveMarksDescriptor.DROPS;
import static dev.varve.snapshot.ArchiveMarksDescriptor.END;
import static dev.varve.snapshot.ArchiveMarksDescriptor.HIGH_WATER;
import static dev.varve.snapshot.ArchiveMarksDescriptor.JOINS;
import static dev.varve.snapshot.ArchiveMarksDescriptor.LATEST;
import static dev.varve.snapshot.ArchiveMarksDescriptor.MOVES;
import static dev.varve.snapshot.ArchiveMarksDescriptor.SNAPSHOTS;

/**
 * What the archive made durable at each checkpoint mark ({@value #FILE}): one group of entries (mark LSN, what,
 * value) per mark, appended before the checkpoint's start marker — per level the Maplog position and volume address
 * everything below was durable up to; the record counts of the snapshot, drop, join and move logs; the latest
 * snapshot id at the mark and the highest id the snapshot log then held; the retention policy's clock
 * ({@link PolicyClock}); and last an end entry counting the group,
 * so that a group cut short is never taken for a whole one.
 *
 * <p>Recovery reads the recovered mark's group ({@link #find}) and checks every log against it, so a log that was cut
 * short, lost a record or was deleted is found at open, and snapshot ids are never handed out again. Archives
 * written before the counts existed hold their marks as plain level entries: they are read without the count
 * checks. The layout is {@link ArchiveMarksDescriptor}'s.
 *
 * <p>Once a checkpoint completed, no recovery uses an older mark: the groups before its mark's are then compacted
 * away ({@link #compactBefore}), so the file holds a few marks, not one per checkpoint the store ever made.
 */
final class ArchiveMarks implements AutoCloseable {
    private static final String FILE = ArchiveMarksDescriptor.FILE;
    private static final int CHUNK = 1024;
    /** Entries held before the groups of marks no recovery can use any more are compacted away (128 KiB). */
    static final long COMPACT_MIN_ENTRIES = 4096;

    /**
     * One mark: per level (index j - 1) Maplog positions and volume addresses; the log counts and ids, -1 in marks
     * written before they were recorded.
     */
    record Mark(long lsn, long[] mappings, long[] addresses, long snapshots, long drops, long joins, long moves, long latest, long highWater,
                PolicyClock clock) {
        /** A mark that records no retention clock (as an earlier build's). */
        Mark(long lsn, long[] mappings, long[] addresses, long snapshots, long drops, long joins, long moves, long latest, long highWater) {
            this(lsn, mappings, addresses, snapshots, drops, joins, moves, latest, highWater, PolicyClock.NONE);
        }

        /** An empty store's: nothing is durable. */
        static Mark none(int levels) {
            return new Mark(-1, new long[levels], new long[levels], 0, 0, 0, 0, 0, 0);
        }
    }

    private final MaplogFile log;
    /** Entries up to the end of the recovered mark's group (recovery cuts the rest). */
    private long recoveredEnd;

    /** The marks of an archive whose store is not checked (recovery's look at the marks before the archive opens). */
    ArchiveMarks(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing) {
        this(io, dir, nodeEntries, missing, new AtomicLong());
    }

    /** The marks of the store whose durable id {@code storeId} holds (0 until a marker does), see {@link MaplogFile}. */
    ArchiveMarks(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing, AtomicLong storeId) {
        this.log = new MaplogFile(io, dir.resolve(FILE), MaplogDescriptor.Kind.MARKS, MaplogDescriptor.NO_LEVEL, nodeEntries, MaplogFile.ONE_PART, missing,
                storeId);
    }

    Path path() {
        return log.path();
    }

    /** True when the marks were written before they recorded the log counts. */
    boolean olderFormat() {
        return log.olderMarks();
    }

    /** The checkpoint marks the log holds, by their LSNs: how many, and the latest (-1 when none). Reads only. */
    long[] countAndLatest() {
        long n = 0;
        long latest = -1;
        long[] lsn = new long[CHUNK];
        for (long from = log.first(); from < log.count(); from += CHUNK) {
            int k = (int) Math.min(CHUNK, log.count() - from);
            log.read(from, k, lsn, null, null);
            for (int i = 0; i < k; i++) {
                if (lsn[i] != latest) n++;
                latest = lsn[i];
            }
        }
        return new long[]{n, latest};
    }

    /**
     * The highest rank level any mark the log holds records positions for, 0 when none: that level's directory was
     * made before the mark, so its absence is a loss, not a level the retention policy added since. Reads only.
     */
    int highestLevel() {
        int highest = 0;
        long[] what = new long[CHUNK];
        for (long from = log.first(); from < log.count(); from += CHUNK) {
            int k = (int) Math.min(CHUNK, log.count() - from);
            log.read(from, k, null, what, null);
            for (int i = 0; i < k; i++) highest = Math.max(highest, ArchiveEncoding.mappingsLevelOf(what[i]));
        }
        return highest;
    }

    /** Appends and makes durable the group of mark {@code m}. */
    void append(Mark m) {
        int k = m.mappings().length;
        for (int j = 1; j <= k; j++) {
            log.append(m.lsn(), ArchiveEncoding.markMappingsKey(j), m.mappings()[j - 1]);
            log.append(m.lsn(), ArchiveEncoding.markAddressesKey(j), m.addresses()[j - 1]);
        }
        log.append(m.lsn(), SNAPSHOTS, m.snapshots());
        log.append(m.lsn(), DROPS, m.drops());
        log.append(m.lsn(), JOINS, m.joins());
        log.append(m.lsn(), MOVES, m.moves());
        log.append(m.lsn(), LATEST, m.latest());
        log.append(m.lsn(), HIGH_WATER, m.highWater());
        long[] entries = {2L * k + 6};
        m.clock().writeTo((key, value) -> {
            log.append(m.lsn(), key, value);
            entries[0]++;
        });
        log.append(m.lsn(), END, entries[0] + 1);
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
        long start = groupStart(markLsn, end);
        int n = (int) (end - start);
        long[] what = new long[n];
        long[] value = new long[n];
        log.read(start, n, null, what, value);
        // the group was forced whole before its checkpoint began: one that runs into a damaged entry names that entry
        if (!whole(what, value) && end == log.count()) log.checkDurable(end + 1);
        Mark m = decode(markLsn, levels, what, value, offsetOf(start));
        recoveredEnd = end;
        return m;
    }

    /** Position of the first entry of mark {@code markLsn}'s group, which ends at {@code end}. */
    private long groupStart(long markLsn, long end) {
        long start = end - 1;
        long[] lsn = new long[1];
        while (start > log.first()) {
            log.read(start - 1, 1, lsn, null, null);
            if (lsn[0] != markLsn) break;
            start--;
        }
        return start;
    }

    /**
     * After the end marker of the checkpoint of mark {@code markLsn}, holding the append gate: once the file holds
     * {@value #COMPACT_MIN_ENTRIES} entries, rewrites it without the groups before that mark's, which no recovery can
     * use any more (it recovers from this checkpoint or a later one).
     */
    void compactBefore(long markLsn) {
        if (log.count() - log.first() < COMPACT_MIN_ENTRIES) return;
        long end = groupEnd(markLsn);
        if (end > 0) log.compactBefore(groupStart(markLsn, end));
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
        if (!whole(what, value))
            throw new CorruptionException("the record of checkpoint mark " + markLsn + " is incomplete (" + n + " entries)", path(), offset);
        for (int i = 0; i < n; i++) {
            long w = what[i];
            int mapped = ArchiveEncoding.mappingsLevelOf(w);
            int addressed = ArchiveEncoding.addressesLevelOf(w);
            if (mapped >= 1 && mapped <= levels) mappings[mapped - 1] = value[i];
            else if (addressed >= 1 && addressed <= levels) addresses[addressed - 1] = value[i];
            else if (ArchiveMarksDescriptor.isCount(w)) counts[(int) (w - SNAPSHOTS)] = value[i];
        }
        return new Mark(markLsn, mappings, addresses, counts[(int) (SNAPSHOTS - SNAPSHOTS)], counts[(int) (DROPS - SNAPSHOTS)],
                counts[(int) (JOINS - SNAPSHOTS)], counts[(int) (MOVES - SNAPSHOTS)], counts[(int) (LATEST - SNAPSHOTS)], counts[(int) (HIGH_WATER - SNAPSHOTS)],
                PolicyClock.read(what, value));
    }

    /** True when a group ends in an END entry that counts it, or is of an older archive (which had no END). */
    private boolean whole(long[] what, long[] value) {
        int n = what.length;
        return what[n - 1] == END ? value[n - 1] == n : olderFormat();
    }

    /** Byte offset of entry {@code entry} in the (one) part that holds it. */
    private long offsetOf(long entry) {
        return MaplogDescriptor.entryOffset(entry - log.first());
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
