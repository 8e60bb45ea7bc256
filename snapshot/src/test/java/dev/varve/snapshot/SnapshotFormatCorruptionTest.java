package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One flipped byte per snapshot format, and a file of a version this build does not know: each is refused with a
 * {@link CorruptionException} that names the file and the offset where the bad data starts.
 */
@Timeout(60)
class SnapshotFormatCorruptionTest {
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final int PAGE = 4096;
    private static final int NODE = 16;
    private static final int UNKNOWN_VERSION = 99;

    @TempDir
    Path dir;

    // ---- one flipped byte per format ----

    @Test
    void pagelogRecord() throws IOException {
        writePagelog(3);
        Path segment = dir.resolve(PagelogDescriptor.fileName(0));
        long record = PagelogDescriptor.HEADER_SIZE + PagelogDescriptor.recordBytes(PAGE);
        flip(segment, record + PagelogDescriptor.IMAGE_OFFSET + 100);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, 1 << 20)) {
            assertNamed(segment, record, () -> log.reader.read(1, 1, ByteBuffer.allocate(PAGE), 0));
        }
    }

    @Test
    void maplogEntry() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        try (MaplogFile log = new MaplogFile(IO, path, Kind.MAPPINGS, 0, NODE, MaplogFile.Missing.CREATE)) {
            for (int i = 0; i < 10; i++) log.append(i, 1, i);
            log.force();
        }
        flip(path, MaplogDescriptor.entryOffset(4) + MaplogDescriptor.C_OFFSET);
        try (MaplogFile log = new MaplogFile(IO, path, Kind.MAPPINGS, 0, NODE, MaplogFile.Missing.CORRUPT)) {
            assertNamed(path, MaplogDescriptor.entryOffset(4), () -> log.checkDurable(10));
        }
    }

    @Test
    void maplogEntryOfAnEarlierPart() throws IOException {
        Path path = dir.resolve("maplog-L0.log");
        try (MaplogFile log = new MaplogFile(IO, path, Kind.MAPPINGS, 0, NODE, 4, MaplogFile.Missing.CREATE)) {
            for (int i = 0; i < 10; i++) log.append(i, 1, i);
            log.force();
        }
        flip(path, MaplogDescriptor.entryOffset(1) + MaplogDescriptor.A_OFFSET); // part 0, checked when read
        try (MaplogFile log = new MaplogFile(IO, path, Kind.MAPPINGS, 0, NODE, 4, MaplogFile.Missing.CORRUPT)) {
            assertNamed(path, MaplogDescriptor.entryOffset(1), () -> log.read(0, 4, new long[4], null, null));
        }
    }

    @Test
    void snapshotLogRecord() throws IOException {
        Path path = dir.resolve(SnapshotLogDescriptor.FILE);
        writeSnapshotLog(path, 5);
        flip(path, SnapshotLogDescriptor.recordOffset(2) + SnapshotLogDescriptor.START_OFFSET);
        try (SnapshotLog log = new SnapshotLog(IO, path, MaplogFile.Missing.CORRUPT)) {
            assertNamed(path, SnapshotLogDescriptor.recordOffset(2), () -> log.checkDurable(5));
        }
    }

    @Test
    void rankedExtentRecord() throws IOException {
        RankedExtent extent = writeExtent();
        List<Long> offsets = new ArrayList<>();
        try (RankedExtent.Reader r = extent.reader(IO)) {
            r.forEachRecord((pageId, offset, base) -> offsets.add(offset));
        }
        assertEquals(3, offsets.size());
        flip(extent.path(), offsets.get(1) + RankedExtentDescriptor.RECORD_HEADER_SIZE + 50);
        RankedExtent reopened = RankedExtent.open(IO, extent.path(), PAGE);
        assertNamed(extent.path(), offsets.get(1), () -> reopened.verify(IO, 7, 1));
        try (RankedExtent.Reader r = reopened.reader(IO)) {
            assertNamed(extent.path(), offsets.get(1), () -> r.read(offsets.get(1), 2, ByteBuffer.allocate(PAGE), 0, (l, p, d, o) -> { }));
        }
    }

    @Test
    void archiveMarksEntry() throws IOException {
        try (ArchiveMarks marks = new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CREATE)) {
            marks.append(new ArchiveMarks.Mark(100, new long[]{5, 6}, new long[]{7, 8}, 1, 0, 0, 0, 1, 1));
        }
        Path path = dir.resolve(ArchiveMarksDescriptor.FILE);
        flip(path, MaplogDescriptor.entryOffset(3) + MaplogDescriptor.C_OFFSET); // level 2's volume address
        try (ArchiveMarks marks = new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CORRUPT)) {
            assertNamed(path, MaplogDescriptor.entryOffset(3), () -> marks.find(100, 2));
        }
    }

    @Test
    void archiveMarksFirstEntry() throws IOException {
        try (ArchiveMarks marks = new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CREATE)) {
            marks.append(new ArchiveMarks.Mark(100, new long[]{5}, new long[]{7}, 1, 0, 0, 0, 1, 1));
        }
        Path path = dir.resolve(ArchiveMarksDescriptor.FILE);
        flip(path, MaplogDescriptor.entryOffset(0) + MaplogDescriptor.A_OFFSET); // the mark's LSN itself
        try (ArchiveMarks marks = new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CORRUPT)) {
            assertNamed(path, MaplogDescriptor.entryOffset(0), () -> marks.find(100, 1));
        }
    }

    // ---- a version this build does not know ----

    @Test
    void pagelogOfAnUnknownVersion() throws IOException {
        writePagelog(1);
        Path segment = dir.resolve(PagelogDescriptor.fileName(0));
        rewriteHeaderInt(segment, PagelogDescriptor.HEADER_SIZE, PagelogDescriptor.VERSION_OFFSET, UNKNOWN_VERSION,
                h -> h.putInt(PagelogDescriptor.HEADER_CRC_OFFSET, PagelogDescriptor.headerCrc(h)));
        assertUnknownVersion(segment, PagelogDescriptor.VERSION_OFFSET, () -> new Pagelog(IO, dir, PAGE, 1 << 20).close());
    }

    @Test
    void maplogOfAnUnknownVersion() throws IOException {
        Path path = dir.resolve("moves.log");
        new MaplogFile(IO, path, Kind.MOVES, MaplogDescriptor.NO_LEVEL, NODE, MaplogFile.Missing.CREATE).close();
        rewriteHeaderInt(path, MaplogDescriptor.HEADER_SIZE, MaplogDescriptor.VERSION_OFFSET, UNKNOWN_VERSION,
                h -> h.putInt(MaplogDescriptor.HEADER_CRC_OFFSET, MaplogDescriptor.headerCrc(h)));
        assertUnknownVersion(path, MaplogDescriptor.VERSION_OFFSET,
                () -> new MaplogFile(IO, path, Kind.MOVES, MaplogDescriptor.NO_LEVEL, NODE, MaplogFile.Missing.CORRUPT).close());
    }

    @Test
    void archiveMarksOfAnUnknownVersion() throws IOException {
        new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CREATE).close();
        Path path = dir.resolve(ArchiveMarksDescriptor.FILE);
        rewriteHeaderInt(path, MaplogDescriptor.HEADER_SIZE, MaplogDescriptor.VERSION_OFFSET, UNKNOWN_VERSION,
                h -> h.putInt(MaplogDescriptor.HEADER_CRC_OFFSET, MaplogDescriptor.headerCrc(h)));
        assertUnknownVersion(path, MaplogDescriptor.VERSION_OFFSET, () -> new ArchiveMarks(IO, dir, NODE, MaplogFile.Missing.CORRUPT).close());
    }

    @Test
    void snapshotLogOfAnUnknownVersion() throws IOException {
        Path path = dir.resolve(SnapshotLogDescriptor.FILE);
        writeSnapshotLog(path, 1);
        rewriteHeaderInt(path, SnapshotLogDescriptor.HEADER_SIZE, SnapshotLogDescriptor.VERSION_OFFSET, UNKNOWN_VERSION,
                h -> h.putInt(SnapshotLogDescriptor.HEADER_CRC_OFFSET, SnapshotLogDescriptor.headerCrc(h)));
        assertUnknownVersion(path, SnapshotLogDescriptor.VERSION_OFFSET, () -> new SnapshotLog(IO, path, MaplogFile.Missing.CORRUPT).close());
    }

    @Test
    void rankedExtentOfAnUnknownVersion() throws IOException {
        RankedExtent extent = writeExtent();
        int size = RankedExtentDescriptor.headerSize(1);
        rewriteHeaderInt(extent.path(), size, RankedExtentDescriptor.VERSION_OFFSET, UNKNOWN_VERSION,
                h -> h.putInt(RankedExtentDescriptor.headerCrcOffset(1), RankedExtentDescriptor.headerCrc(h, 1)));
        assertUnknownVersion(extent.path(), RankedExtentDescriptor.VERSION_OFFSET, () -> RankedExtent.open(IO, extent.path(), PAGE));
    }

    // ---- helpers ----

    private void writePagelog(int records) {
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, 1 << 20)) {
            for (int i = 0; i < records; i++) log.append(i, 0, 1, image, 0);
            log.force();
        }
    }

    private static void writeSnapshotLog(Path path, int records) {
        try (SnapshotLog log = new SnapshotLog(IO, path, MaplogFile.Missing.CREATE)) {
            for (int i = 1; i <= records; i++) log.append(new SnapshotRecord(i, 1, 1000L * i, 10L * i, 100L * i));
            log.force();
        }
    }

    /** Snapshot 7's extent at level 1 of a one-level archive: three whole pages. */
    private RankedExtent writeExtent() {
        Random random = new Random(5);
        RankedExtent.Writer w = new RankedExtent.Writer(IO, dir, 7, 1, 1, PAGE);
        for (int p = 1; p <= 3; p++) {
            byte[] image = new byte[PAGE];
            random.nextBytes(image);
            w.add(p, ByteBuffer.wrap(image), null, RankedExtentDescriptor.NO_BASE, 0, RankedExtentDescriptor.NO_PIN);
        }
        return w.finish();
    }

    private static void assertNamed(Path file, long offset, Executable read) {
        CorruptionException e = assertThrows(CorruptionException.class, read);
        assertEquals(file, e.file(), e.getMessage());
        assertEquals(offset, e.offset(), e.getMessage());
        assertTrue(e.getMessage().contains("at offset " + offset) && e.getMessage().contains(file.toString()), e.getMessage());
    }

    private static void assertUnknownVersion(Path file, long offset, Executable open) {
        CorruptionException e = assertThrows(CorruptionException.class, open);
        assertEquals(file, e.file(), e.getMessage());
        assertEquals(offset, e.offset(), e.getMessage());
        assertTrue(e.getMessage().contains("version " + UNKNOWN_VERSION) && e.getMessage().contains(file.toString()), e.getMessage());
    }

    private static void flip(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset);
            b.put(0, (byte) (b.get(0) ^ 0x10));
            ch.write(b.flip(), offset);
        }
    }

    interface HeaderFix {
        void apply(ByteBuffer header);
    }

    /** Writes {@code value} into the header field at {@code at}, then lets {@code fix} make the header's CRC match again. */
    private static void rewriteHeaderInt(Path file, int headerSize, int at, int value, HeaderFix fix) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate(headerSize).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(h, 0);
            h.putInt(at, value);
            fix.apply(h);
            ch.write(h.clear(), 0);
        }
    }
}
