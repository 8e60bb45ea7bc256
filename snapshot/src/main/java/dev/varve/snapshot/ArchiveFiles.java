package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The archive's files as {@link SnapshotArchive} opens them: a Pagelog volume and a Maplog with its Skippy levels per
 * rank level ({@link ArchiveLevel}), the snapshot registry's logs, the move log and the checkpoint marks. Opening
 * refuses, before it creates anything, an archive whose layout the configuration would change (fewer rank levels,
 * other Skippy levels), one whose records lost their marks, and one that lost a level its marks record.
 */
record ArchiveFiles(ArchiveLevel[] levels, SnapshotRegistry registry, MoveLog moves, ArchiveMarks marks) {
    /** Opens (or creates) the archive's files in the settings' directory; on failure closes what it opened. */
    static ArchiveFiles open(FileIOFactory io, ArchiveSettings settings, AtomicLong storeId) {
        Path dir = settings.dir();
        try {
            io.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("cannot create the archive directory", dir, e);
        }
        int k = settings.retention().levelCount();
        refuseFewerLevels(io, dir, k);
        // a new archive has no marks file: it is created last, so an archive without one holds no records (once
        // compacted, the marks live in a part named by its first position)
        boolean fresh = ArchiveRecovery.marksMissing(io, dir);
        if (fresh) ArchiveRecovery.refuseRecordsWithoutMarks(io, dir);
        else {
            ArchiveRecovery.refuseLostLevels(io, dir, settings.skippyNodeEntries()); // before a level is made anew
            refuseOtherSkippyLevels(io, dir, settings.skippyLevels());
        }
        ArchiveLevel[] levels = new ArchiveLevel[k];
        int nodeEntries = settings.skippyNodeEntries();
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            ArchiveMarks found = fresh ? null : Closing.track(opened, new ArchiveMarks(io, dir, nodeEntries, MaplogFile.Missing.CORRUPT, storeId));
            MaplogFile.Missing missing = fresh ? MaplogFile.Missing.CREATE : MaplogFile.Missing.CORRUPT;
            MaplogFile.Missing later = fresh || found.olderFormat() ? MaplogFile.Missing.CREATE : missing; // joins and moves came after the first archives
            for (int j = 1; j <= k; j++)
                levels[j - 1] = Closing.track(opened, new ArchiveLevel(io, dir, j, settings.pageSize(), settings.skippyLevels(), nodeEntries,
                        settings.segmentBytes(), missing, storeId));
            SnapshotRegistry registry = Closing.track(opened, new SnapshotRegistry(io, dir, settings.retention(), nodeEntries, missing, later, storeId));
            MoveLog moves = Closing.track(opened, new MoveLog(io, dir, nodeEntries, later, storeId));
            ArchiveMarks marks = fresh ? new ArchiveMarks(io, dir, nodeEntries, MaplogFile.Missing.CREATE, storeId) : found;
            return new ArchiveFiles(levels, registry, moves, marks);
        } catch (RuntimeException e) {
            Closing.closeAll(e, opened);
            throw e;
        }
    }

    /** The number of rank levels of an existing archive cannot shrink: the levels above the policy's would be orphaned. */
    private static void refuseFewerLevels(FileIOFactory io, Path dir, int k) {
        if (!io.exists(ArchiveLevel.dirOf(dir, k + 1))) return;
        int written = k + 1; // named, so the operator knows what the policy must keep
        while (io.exists(ArchiveLevel.dirOf(dir, written + 1))) written++;
        throw new IllegalArgumentException("the archive in " + dir + " has " + written + " rank levels but the retention policy has " + k
                + "; the number of levels of an existing archive cannot shrink: give the retention policy at least " + written + " levels");
    }

    /**
     * skippyLevels is part of the archive's layout, like skippyNodeEntries: a store opened with fewer levels than its
     * archive was written with would grow only the lower Skippy files, and every later open with the original setting
     * would then find the upper ones short of the checkpoint mark and call the archive damaged; one opened with more
     * would be refused for a "missing" file. Refused here, before anything is written, naming the setting.
     */
    private static void refuseOtherSkippyLevels(FileIOFactory io, Path dir, int configured) {
        int written;
        try {
            written = ArchiveFileCheck.skippyLevels(io, dir);
        } catch (IOException e) {
            throw new StorageException("cannot list the archive's Skippy files", dir, e);
        }
        if (written != configured)
            throw new IllegalArgumentException("the archive in " + dir + " was written with skippyLevels=" + written
                    + " but the store is configured with " + configured + "; an existing archive keeps its Skippy levels, set skippyLevels="
                    + written);
    }
}
