package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Retro stage 1 for the archive: every file is checked against the recovered checkpoint mark, reading only — a
 * damaged archive is refused with a {@link CorruptionException} naming the file and nothing changed — then every
 * level and log is cut back to the mark (and any torn tail past it), the lazy-ranking copies made up to the mark are
 * reapplied, what a crash left half-made is deleted, and the captures the archive holds are counted for the budget.
 * Replay from the mark then re-declares the later snapshots and re-captures their pre-states deterministically (I6).
 */
final class ArchiveRecovery {
    /** A file larger than this holds records, not just a header (every archive file's header is at most this long). */
    private static final int HEADER_BYTES = MaplogDescriptor.HEADER_SIZE;

    private final ArchiveLock lock;
    private final FileIOFactory io;
    private final Path dir;
    private final int pageSize;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final MoveLog moves;
    private final ArchiveMarks marks;
    private final RankedExtents extents;
    /** The store's durable id (0 until a marker holds it): a ranked extent of another store is refused. */
    private final AtomicLong storeId;
    private final RetentionEnforcer retention;
    /** The last {@link #check}, until {@link #recover} cuts to it. */
    private Checked checked;

    /** What {@link #check} found sound: the cut of {@link #recover} needs nothing else. */
    private record Checked(long markLsn, boolean emptyStore, ArchiveMarks.Mark mark, Map<Long, RankedExtent> kept) {
    }

    ArchiveRecovery(ArchiveLock lock, FileIOFactory io, Path dir, int pageSize, ArchiveLevel[] levels, SnapshotRegistry registry, MoveLog moves,
                    ArchiveMarks marks, RankedExtents extents, RetentionEnforcer retention, AtomicLong storeId) {
        this.lock = lock;
        this.storeId = storeId;
        this.io = io;
        this.dir = dir;
        this.pageSize = pageSize;
        this.levels = levels;
        this.registry = registry;
        this.moves = moves;
        this.marks = marks;
        this.extents = extents;
        this.retention = retention;
    }

    /**
     * Refuses, before anything is created, to open the archive at {@code dir} for a store that has completed a
     * checkpoint ({@code storeDir}) when it holds no checkpoint marks: every checkpoint made the archive's marks
     * durable before its start marker, so they are missing — or, more likely, {@code archivePath} names another
     * directory than the store's archive was created in. Opening it anyway would create a new archive there and then
     * report the store's first checkpoint mark as missing from it.
     */
    static void refuseMissing(FileIOFactory io, Path dir, Path storeDir) {
        if (io.exists(dir) && !marksMissing(io, dir)) return;
        throw new CorruptionException("the store in " + storeDir + " has completed checkpoints but no archive is in " + dir
                + ": the archive was lost, or archivePath names another directory than the one the store's archive was created in",
                dir.resolve(ArchiveMarksDescriptor.FILE), 0);
    }

    /**
     * Refuses, before anything is created, to give a store that has completed no checkpoint ({@code storeDir}, its WAL
     * ending at {@code walEnd}) the archive at {@code dir} when that archive belongs to another store: recovery of a
     * store without a checkpoint cuts its archive back to nothing, and a new store whose archivePath named a closed
     * store's archive wiped that store's history (a {@code varve load} with such a configuration did). A store that
     * crashed in its first checkpoint holds at most that checkpoint's mark, at an LSN its WAL reached (the WAL is
     * forced before the archive's marks); an archive with more marks, or a later one, is another store's.
     */
    static void refuseForeign(FileIOFactory io, Path dir, int nodeEntries, Path storeDir, long walEnd) {
        if (!io.exists(dir) || marksMissing(io, dir)) return;
        long[] marks;
        try (ArchiveMarks m = new ArchiveMarks(io, dir, nodeEntries, MaplogFile.Missing.CORRUPT)) {
            if (m.olderFormat()) return; // marks stored as uplinks: not told apart this way
            marks = m.countAndLatest();
        }
        if (marks[0] >= 2 || marks[1] > walEnd)
            throw new IllegalStateException("the archive in " + dir + " belongs to another store: it holds " + marks[0]
                    + " checkpoint mark(s) up to LSN " + marks[1] + ", and the store in " + storeDir + " has completed no checkpoint (its WAL ends at "
                    + walEnd + "); two stores cannot share an archive directory: give this store an archivePath of its own");
    }

    /**
     * Refuses, before anything is created, an archive that lost a whole rank level directory its checkpoint marks
     * record: opening it would make the level anew (as for a level the retention policy added) and leave it behind
     * when the marks check then refuses, or, for level 1, be refused as a Skippy setting the operator should change.
     */
    static void refuseLostLevels(FileIOFactory io, Path dir, int nodeEntries) {
        int highest;
        try (ArchiveMarks m = new ArchiveMarks(io, dir, nodeEntries, MaplogFile.Missing.CORRUPT)) {
            if (m.olderFormat()) return; // marks stored as uplinks: their levels are not told apart this way
            highest = m.highestLevel();
        }
        for (int j = 1; j <= highest; j++) {
            Path level = ArchiveLevel.dirOf(dir, j);
            if (!io.exists(level))
                throw new CorruptionException("archive level " + j + "'s directory is missing, but the archive's checkpoint marks record its files: "
                        + "the directory was lost", level, 0);
        }
    }

    /** True when the archive holds no checkpoint marks file, in any part. */
    static boolean marksMissing(FileIOFactory io, Path dir) {
        try {
            return MaplogParts.firstPart(io, dir.resolve(ArchiveMarksDescriptor.FILE)) == null;
        } catch (IOException e) {
            throw new StorageException("cannot list the archive's files", dir, e);
        }
    }

    /**
     * An archive without its marks file must be new, or a creation cut short — no file holds more than its header;
     * otherwise the marks were lost, and with them what recovery needs to tell a torn tail from lost records.
     */
    static void refuseRecordsWithoutMarks(FileIOFactory io, Path dir) {
        List<Path> files = new ArrayList<>();
        try {
            files.addAll(io.list(dir, "")); // the level directories and retention.policy (configuration, not records) are no archive file
            for (int j = 1; io.exists(ArchiveLevel.dirOf(dir, j)); j++) files.addAll(io.list(ArchiveLevel.dirOf(dir, j), ""));
            for (Path p : files) {
                // and nor is what others left beside them: an archive given its own disk has that disk's lost+found
                if (DurableFiles.isTemp(p) || !ArchiveFileCheck.isArchiveFile(p.getFileName().toString())) continue;
                try (var f = io.open(p, false)) {
                    long created = HEADER_BYTES;
                    if (p.getFileName().toString().equals(SnapshotLogDescriptor.FILE)) { // its own version's header, and base block from 2
                        ByteBuffer h = ByteBuffer.allocate(SnapshotLogDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
                        f.read(h, 0);
                        created = SnapshotLogDescriptor.recordsFrom(h.getInt(SnapshotLogDescriptor.VERSION_OFFSET) == 1 ? 1 : SnapshotLogDescriptor.VERSION);
                    }
                    if (f.size() > created)
                        throw new CorruptionException("the archive's checkpoint marks are missing, but " + p + " holds records", dir.resolve(ArchiveMarksDescriptor.FILE), 0);
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot list the archive: " + e.getMessage(), dir, e);
        }
    }

    /**
     * Checks, reading only, that every archive file holds what the recovered checkpoint mark ({@code markLsn};
     * {@code emptyStore} when no checkpoint ever completed) made durable: a damaged archive is a
     * {@link CorruptionException} naming the file. Open calls it before its first write.
     */
    void check(long markLsn, boolean emptyStore) {
        ArchiveMarks.Mark mark = emptyStore ? ArchiveMarks.Mark.none(levels.length) : marks.find(markLsn, levels.length);
        for (ArchiveLevel l : levels) l.checkDurable(mark.mappings()[l.level - 1], mark.addresses()[l.level - 1]);
        lock.lock();
        try {
            registry.prepare(markLsn, emptyStore, mark);
            // a level's latest, dropped, may be gone from the snapshot log with its records: its Maplog still maps to it
            for (ArchiveLevel l : levels) registry.mappedUpTo(l.level, l.maplog.snapshotBefore(mark.mappings()[l.level - 1]));
            checked = new Checked(markLsn, emptyStore, mark, recoveredExtents(moves.prepare(markLsn, emptyStore, mark.moves())));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Cuts every log back to the recovered checkpoint mark and deletes what a crash left half-made, once
     * {@link #check} of the same mark found the archive sound (checking it first when it has not). Returns the counts of
     * the reclaimed level-1 Maplog it took from {@link CaptureCountsFile} ({@link CaptureCountsFile.Saved#none} when it
     * took none), for reclamation to go on from.
     */
    CaptureCountsFile.Saved recover(long markLsn, boolean emptyStore) {
        Checked c = checked;
        if (c == null || c.markLsn() != markLsn || c.emptyStore() != emptyStore) {
            check(markLsn, emptyStore);
            c = checked;
        }
        checked = null;
        lock.lock();
        try {
            for (ArchiveLevel l : levels) l.cutTo(c.mark().mappings()[l.level - 1], c.mark().addresses()[l.level - 1]);
            registry.cut();
            moves.cut();
            marks.cut(emptyStore);
            extents.recovered(c.kept());
            deleteLeftovers();
            retention.forgetCaptures();
            return countCaptures(levels[0].nextMapping);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Applies the lazy-ranking copies made at marks up to the recovered one to the snapshots still live, and returns
     * the ranked extent each of them reads — checked whole, so a missing, cut or damaged extent is found now, not
     * when a read falls back on pre-states of other versions. Caller holds the lock; reads only.
     */
    private Map<Long, RankedExtent> recoveredExtents(List<MoveLog.Move> moved) {
        Map<Long, MoveLog.Move> latest = new HashMap<>();
        for (MoveLog.Move m : moved) if (registry.find(m.id()) != null) latest.put(m.id(), m);
        Map<Long, RankedExtent> out = new HashMap<>();
        for (MoveLog.Move m : latest.values()) {
            registry.moved(m.id(), m.level(), m.start());
            Path path = RankedExtent.pathOf(ArchiveLevel.dirOf(dir, m.level()), m.id());
            if (Boolean.FALSE.equals(m.extent()) || (m.extent() == null && !io.exists(path))) continue; // the copy found nothing to copy
            if (!io.exists(path))
                throw new CorruptionException("snapshot " + m.id() + " is read through its ranked extent, which is missing (copied by lazy ranking by WAL "
                        + "position " + m.mark() + ")", path, 0);
            RankedExtent e = RankedExtent.open(io, path, pageSize, storeId.get());
            e.verify(io, m.id(), m.level());
            out.put(m.id(), e);
        }
        return out;
    }

    /** Deletes what a crash left half-made (temp files) and the extents no live snapshot reads. Recovery, once sound. */
    private void deleteLeftovers() {
        List<Path> files = new ArrayList<>();
        try {
            files.addAll(io.list(dir, ""));
            for (ArchiveLevel l : levels) files.addAll(io.list(l.dir, ""));
            for (Path p : files) {
                long snapshot = RankedExtent.snapshotOf(p);
                RankedExtent e = snapshot < 0 ? null : extents.of(snapshot);
                if (DurableFiles.isTemp(p) || p.getFileName().toString().equals("drops.log.rewrite") // a drop log rewrite of earlier builds, cut short
                        || (snapshot >= 0 && (e == null || !e.path().equals(p)))) io.delete(p);
            }
        } catch (IOException e) {
            throw new StorageException("cannot delete what a crash left in the archive: " + e.getMessage(), dir, e);
        }
    }

    /**
     * Counts, per snapshot, the bytes of the captures the level-1 Maplog holds below {@code n} (every capture is
     * recorded there), after those of its reclaimed part, which reclamation counted before it deleted it; returns
     * those counts, or none when the file holds none of this history.
     */
    private CaptureCountsFile.Saved countCaptures(long n) {
        CaptureCountsFile.Saved saved = CaptureCountsFile.read(io, dir, RankTreePolicy.MAX_LEVELS);
        long from = levels[0].maplog.maplog().first();
        if (saved.position() >= from && saved.position() <= n) { // else a file of another history: the part it counted is not
            retention.reclaimedCounted(saved);
            from = saved.position(); // a crash may have stopped the deletion of what the file counted
        } else {
            saved = CaptureCountsFile.Saved.none(RankTreePolicy.MAX_LEVELS);
        }
        int chunk = 4096;
        long[] snaps = new long[chunk];
        long[] locations = new long[chunk];
        for (long at = from; at < n; at += chunk) {
            int k = (int) Math.min(chunk, n - at);
            levels[0].maplog.maplog().read(at, k, null, snaps, locations); // every capture is recorded at level 1
            for (int i = 0; i < k; i++) retention.captured(snaps[i], locations[i]);
        }
        return saved;
    }
}
