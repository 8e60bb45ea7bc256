package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Snapshot ids are never handed out twice: the checkpoint mark records the highest id the snapshot log held at its
 * flush, and recovery never reports a latest id below it — even when replay does not re-declare the snapshots
 * declared after the mark (their WAL records were lost with a weaker sync mode). And a snapshot log that lost
 * declarations the mark made durable is refused, never read as a shorter history.
 */
@Timeout(180)
class SnapshotIdRecoveryTest {
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepAll());

    @TempDir
    Path dir;

    private SnapshotArchive open(FileIOFactory io) {
        return new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), POLICY).pageSize(4096).skippyLevels(1).skippyNodeEntries(16)
                .captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
    }

    /** Ids 1..3 before mark 10, id 4 between the mark and its flush: returns the mark. */
    private long declareAroundAMark(FileIOFactory io) {
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        long mark = 10;
        try (SnapshotArchive archive = open(io)) {
            archive.attach(memory);
            archive.recover(0, true);
            for (long id = 1; id <= 3; id++) archive.declare(id, 1, id, id);
            archive.onMark(1, mark);
            archive.declare(4, 1, 4, mark + 1); // after the mark, while the checkpoint runs
            archive.beforeStartMarker(1, mark);
            archive.afterEndMarker(1, mark);
        }
        return mark;
    }

    @Test
    void idsDeclaredUpToTheMarksFlushAreNeverHandedOutAgain() {
        FileIOFactory io = FileIOFactory.standard();
        long mark = declareAroundAMark(io);
        try (SnapshotArchive archive = open(io)) {
            archive.recover(mark, false); // replay lost the snaprec of 4
            assertEquals(3, archive.snapshots().size(), "the declarations before the mark");
            assertNull(archive.find(4), "4 was not re-declared");
            assertEquals(4, archive.latest(), "the latest id handed out");
            assertEquals(5, archive.nextId(), "4 is never handed out again");
            archive.declare(5, 1, 5, mark + 1);
            assertEquals(5, archive.latest());
        }
        try (SnapshotArchive archive = open(io)) {
            archive.recover(mark, false); // the same mark again, replay re-declares 5 from its snaprec
            archive.declare(5, 1, 5, mark + 1);
            assertEquals(6, archive.nextId());
        }
    }

    /**
     * Archives written before marks recorded the log counts hold them as plain level entries (kind KIND_UPLINKS, no
     * end entry) and may lack the join and move logs: they are still read, without the count checks.
     */
    @Test
    void marksWrittenBeforeTheCountsAreStillRead() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        long mark = declareAroundAMark(io);
        Path archiveDir = dir.resolve("archive");
        Files.delete(archiveDir.resolve(ArchiveMarksDescriptor.FILE));
        Files.delete(archiveDir.resolve("joins.log"));
        Files.delete(archiveDir.resolve("moves.log"));
        try (MaplogFile older = new MaplogFile(io, archiveDir.resolve(ArchiveMarksDescriptor.FILE), MaplogDescriptor.Kind.UPLINKS, MaplogDescriptor.NO_LEVEL, 16, MaplogFile.Missing.CREATE)) {
            older.append(mark, 1, 0); // level 1: Maplog position, then volume address, as the older archives wrote them
            older.append(mark, 1001, 0);
            older.force();
        }
        try (SnapshotArchive archive = open(io)) {
            archive.recover(mark, false);
            assertEquals(3, archive.snapshots().size(), "the declarations before the mark");
            assertEquals(4, archive.nextId(), "no high-water mark in an older archive: replay re-declares from its snaprecs");
        }
        assertTrue(Files.exists(archiveDir.resolve("joins.log")) && Files.exists(archiveDir.resolve("moves.log")), "created for the older archive");
    }

    @Test
    void aSnapshotLogCutShortOfTheMarkIsRefused() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        long mark = declareAroundAMark(io);
        Path log = dir.resolve("archive").resolve("snapshots.log");
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
            ch.truncate(SnapshotLogDescriptor.recordOffset(2)); // loses declaration 3 (and 4)
        }
        long size = Files.size(log);
        try (SnapshotArchive archive = open(io)) {
            CorruptionException e = assertThrows(CorruptionException.class, () -> archive.recover(mark, false));
            assertEquals(log, e.file(), e.getMessage());
            assertTrue(e.getMessage().contains("cut short"), e.getMessage());
        }
        assertEquals(size, Files.size(log), "nothing was cut");
    }
}
