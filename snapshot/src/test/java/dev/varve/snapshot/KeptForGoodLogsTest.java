package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.varve.snapshot.LogCompactionTest.PER_CHECKPOINT;
import static dev.varve.snapshot.LogCompactionTest.assertRecovered;
import static dev.varve.snapshot.LogCompactionTest.bytesOf;
import static dev.varve.snapshot.LogCompactionTest.declare;
import static dev.varve.snapshot.LogCompactionTest.markOf;
import static dev.varve.snapshot.LogCompactionTest.open;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot kept for good does not pin the snapshot and drop logs: a compaction lets go the records of the snapshots
 * dropped after it, wherever they lie, keeping the live ones below its horizon as retained records, so both files —
 * and what open reads back — stay bounded however many snapshots are declared and dropped after it (the docs' case
 * left 960 KB of snapshots.log and 640 KB of drops.log after 20,000).
 */
@Timeout(300)
class KeptForGoodLogsTest {
    private static final CompactionScenario KEPT = CompactionScenario.KEPT_FOR_GOOD;

    @TempDir
    Path dir;

    @Test
    void theLogsStayBoundedBehindASnapshotKeptForGood() throws IOException {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        long last = 21 * PER_CHECKPOINT; // snapshot 1 at rank 2, then 20,999 at rank 1
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(0, true);
            declare(archive, 1, last, KEPT, () -> { });
            assertBounded(archiveDir, last);
            assertRecovered(archive, last, KEPT);
        }
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(markOf(last), false);
            assertRecovered(archive, last, KEPT);
            assertEquals(2, archive.find(1).rank());
            declare(archive, last + 1, last + 2 * PER_CHECKPOINT, KEPT, () -> { }); // appends go on after the retained records
            assertRecovered(archive, last + 2 * PER_CHECKPOINT, KEPT);
        }
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(markOf(last + 2 * PER_CHECKPOINT), false);
            assertRecovered(archive, last + 2 * PER_CHECKPOINT, KEPT);
            assertBounded(archiveDir, last + 2 * PER_CHECKPOINT);
        }
    }

    /**
     * Each log holds at most what it held after its last compaction (the live snapshots' records, the drop log's
     * latest drops), the growth that triggers the next, and a checkpoint's worth: not the span after snapshot 1.
     */
    private static void assertBounded(Path archiveDir, long declared) throws IOException {
        long logBound = SnapshotLogDescriptor.recordOffset(SnapshotRegistry.COMPACT_MIN_RECORDS + PER_CHECKPOINT + 4);
        long log = bytesOf(archiveDir, SnapshotLogDescriptor.FILE);
        assertTrue(log <= logBound, "snapshots.log holds " + log + " bytes after " + declared + " snapshots, 3 live (bound " + logBound + ")");
        long dropBound = MaplogDescriptor.entryOffset(DropLog.COMPACT_MIN_ENTRIES + PER_CHECKPOINT);
        long drops = bytesOf(archiveDir, "drops.log");
        assertTrue(drops <= dropBound, "drops.log holds " + drops + " bytes after " + declared + " snapshots (bound " + dropBound + ")");
    }

    /** A snapshot raised to rank 2 while still live keeps its declared rank and its raise through the compactions. */
    @Test
    void aRaisedSnapshotKeptForGoodKeepsItsRank() {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        long last = 6 * PER_CHECKPOINT; // the snapshot log compacts at 5,000
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(0, true);
            archive.declare(1, 1, 1001, 2);
            assertTrue(archive.rank(1, 2, 3));
            declare(archive, 2, last, KEPT, () -> { });
            assertRecovered(archive, last, KEPT);
        }
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(markOf(last), false);
            assertRecovered(archive, last, KEPT);
            assertEquals(2, archive.find(1).rank(), "the raise was retained");
            assertTrue(archive.dropHorizon() > 1, "the log was compacted past snapshot 1: " + archive.dropHorizon());
        }
    }

    /** A flipped byte in a retained record is damage named with the file and the record's offset, not a dropped snapshot. */
    @Test
    void aDamagedRetainedRecordIsNamedWithItsOffset() throws IOException {
        Path archiveDir = dir.resolve("archive");
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), KEPT.policy)) {
            archive.recover(0, true);
            declare(archive, 1, 5 * PER_CHECKPOINT, KEPT, () -> { }); // compacted at 5,000: snapshots 1 and 4,999 retained
        }
        Path log = archiveDir.resolve(SnapshotLogDescriptor.FILE);
        byte[] bytes = Files.readAllBytes(log);
        assertEquals(2, ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.RETAINED_OFFSET));
        long second = SnapshotLogDescriptor.recordsFrom(SnapshotLogDescriptor.VERSION) + SnapshotLogDescriptor.RECORD_SIZE;
        bytes[(int) second + SnapshotLogDescriptor.ID_OFFSET] ^= 1;
        Files.write(log, bytes);
        CorruptionException e = assertThrows(CorruptionException.class, () -> new SnapshotLog(UnforcedFileIOFactory.INSTANCE, log, MaplogFile.Missing.CORRUPT));
        assertEquals(log, e.file());
        assertEquals(second, e.offset(), e.getMessage());
        assertTrue(e.getMessage().contains("retained"), e.getMessage());
    }

    /**
     * A store that keeps every snapshot has nothing to let go: its log is not rewritten (as retained records, which
     * would cost a rewrite of every record, and the heap to plan it, each time the log doubles).
     */
    @Test
    void aLogWithNothingToLetGoIsNotRewritten() throws IOException {
        Path archiveDir = dir.resolve("archive");
        long last = 6 * PER_CHECKPOINT;
        try (SnapshotArchive archive = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), RankTreePolicy.levels(Retention.keepAll()))) {
            archive.recover(0, true);
            declare(archive, 1, last, CompactionScenario.KEEP_LAST, () -> { });
            assertEquals(0, archive.dropHorizon(), "never compacted");
            assertEquals(last, archive.snapshots().size());
        }
        assertEquals(SnapshotLogDescriptor.recordOffset(last), Files.size(archiveDir.resolve(SnapshotLogDescriptor.FILE)));
    }

    /**
     * A log of format version 2 (a base block, no retained records: every snapshot below its horizon dropped) is read
     * as it is, and the next compaction rewrites it in the current version.
     */
    @Test
    void aVersionTwoLogIsReadAndCompactedIntoTheCurrentVersion() throws IOException {
        FileIOFactory io = UnforcedFileIOFactory.INSTANCE;
        Path archiveDir = dir.resolve("archive");
        RankTreePolicy lastOne = RankTreePolicy.levels(Retention.keepLast(1));
        long before = 5 * PER_CHECKPOINT;
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), lastOne)) {
            archive.recover(0, true);
            declare(archive, 1, before, CompactionScenario.KEEP_LAST, () -> { }); // compacted at 5,000: nothing live below the horizon
        }
        Path log = archiveDir.resolve(SnapshotLogDescriptor.FILE);
        ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(log)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0, h.getLong(SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.RETAINED_OFFSET), "no retained record: laid out as version 2");
        assertTrue(h.getLong(SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.HORIZON_OFFSET) > 1, "compacted");
        h.putInt(SnapshotLogDescriptor.VERSION_OFFSET, 2).putInt(SnapshotLogDescriptor.HEADER_CRC_OFFSET, SnapshotLogDescriptor.headerCrc(h));
        Files.write(log, h.array());
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), lastOne)) {
            archive.recover(markOf(before), false);
            assertEquals(List.of(before), archive.snapshots().stream().map(SnapshotRecord::id).toList());
            assertTrue(archive.dropped(1) != null, "below the horizon: dropped");
            declare(archive, before + 1, before + 5 * PER_CHECKPOINT, CompactionScenario.KEEP_LAST, () -> { });
        }
        ByteBuffer after = ByteBuffer.wrap(Files.readAllBytes(log)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(SnapshotLogDescriptor.VERSION, after.getInt(SnapshotLogDescriptor.VERSION_OFFSET), "rewritten in the current version");
        try (SnapshotArchive archive = open(io, archiveDir, dir.resolve("pages"), lastOne)) {
            archive.recover(markOf(before + 5 * PER_CHECKPOINT), false);
            assertEquals(List.of(before + 5 * PER_CHECKPOINT), archive.snapshots().stream().map(SnapshotRecord::id).toList());
            assertTrue(archive.dropped(before) != null, "below the horizon: dropped");
        }
    }
}
