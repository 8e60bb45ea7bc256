package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * LOG_ONLY and BACKGROUND segments forced through their durable copy ({@link WalSegmentCopy}): no force goes through a
 * mapping, the copy takes the segment's name once the segment is whole, a process crash reads the segment file as
 * before, a power loss that cost the segment file its unforced pages reads the forced records from the copy, and a
 * damaged or short copy never hides the segment file's records.
 */
@Timeout(60)
class WalSegmentCopyTest {
    @TempDir
    Path dir;
    @TempDir
    Path image;

    private final CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
    private final List<byte[]> payloads = new ArrayList<>();
    private final Random rnd = WalTestSupport.seeded("copy");

    private long append(Wal wal, int bytes) {
        byte[] p = WalTestSupport.randomBytes(rnd, bytes);
        payloads.add(p);
        return wal.append(7, ByteBuffer.wrap(p));
    }

    /** Appends {@code forced} records of 4,000 bytes, forces them, appends {@code unforced} more, and takes the crash image. */
    private void crashWith(int forced, int unforced) throws IOException {
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            for (int i = 0; i < forced; i++) append(wal, 4_000);
            wal.force();
            for (int i = 0; i < unforced; i++) append(wal, 4_000); // in the mapped file only: no force wrote them to the copy
            crashImage();
        }
    }

    /** What kill -9 leaves: every file as the OS has it (the page cache). */
    private void crashImage() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) Files.copy(f, image.resolve(f.getFileName()));
        }
    }

    private List<Path> copies(Path d) throws IOException {
        try (Stream<Path> files = Files.list(d)) {
            return files.filter(f -> WalSegmentCopy.parseIndex(f) >= 0).sorted().toList();
        }
    }

    private void assertReads(Path d, int records) {
        try (Wal wal = Wal.open(d, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(records, read.size(), "records read");
            for (int i = 0; i < records; i++) assertArrayEquals(payloads.get(i), read.get(i).payload(), "record " + i);
        }
    }

    private long verifiedRecords(Path d) throws IOException {
        List<String> damage = new ArrayList<>();
        WalFileCheck.Result r = WalFileCheck.check(FileIOFactory.standard(), d, SEGMENT_SIZE, WalSyncMode.LOG_ONLY,
                (file, offset, what) -> damage.add(file.getFileName() + "@" + offset + ": " + what));
        assertEquals(List.of(), damage);
        return r.records();
    }

    /** What a power loss leaves of a segment file no force wrote back: the zeros it was created with after the header. */
    private static void loseUnforcedPages(Path segment) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate((int) SEGMENT_SIZE - WalSegmentDescriptor.HEADER_SIZE), WalSegmentDescriptor.HEADER_SIZE);
        }
    }

    @ParameterizedTest
    @EnumSource(value = WalSyncMode.class, names = {"LOG_ONLY", "BACKGROUND"})
    void forcesGoToTheCopyWhichTakesTheNameOnceTheSegmentIsWhole(WalSyncMode mode) throws IOException {
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, mode, Duration.ofHours(1))) {
            io.mappedForces.set(0); // the open forced what a crashed process might have left in the mapped file
            for (int i = 0; i < 8; i++) append(wal, 20_000); // segments 0 to 2
            wal.force();
            assertEquals(2, WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT_SIZE));
            assertEquals(0, io.mappedForces.get(), "no force went through a mapping");
            assertTrue(io.recordForces.get() > 0);
            List<Path> copies = copies(dir); // segment 3's too, when it is prepared ahead already
            assertFalse(copies.contains(WalSegmentCopy.path(dir, 0)) || copies.contains(WalSegmentCopy.path(dir, 1)),
                    "segments 0 and 1 are their copies now: " + copies);
            assertTrue(copies.contains(WalSegmentCopy.path(dir, 2)), "segment 2 is forced through its copy");
            assertEquals(8, readAll(wal, wal.firstLsn()).size(), "readers read the segment files, copies or not");
        }
        assertEquals(List.of(), copies(dir), "a clean close gives the last copy its segment's name");
        assertEquals(8 + 2, verifiedRecords(dir), "eight records and two seals");
        assertReads(dir, 8);
    }

    @Test
    void aProcessCrashReadsTheSegmentFileAndChangesNothing() throws IOException {
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            append(wal, 1_000);
            wal.force();
            for (int i = 0; i < 5; i++) append(wal, 3_000); // in the mapped file only: no force wrote them to the copy
            crashImage();
        }
        var before = WalTestSupport.snapshotFiles(image);
        assertEquals(6, verifiedRecords(image));
        try (Wal wal = Wal.open(image, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            assertTrue(wal.tailCut().isEmpty());
            assertEquals(6, readAll(wal, wal.firstLsn()).size());
            WalTestSupport.assertSameFiles(before, WalTestSupport.snapshotFiles(image)); // the open wrote nothing yet
            wal.force(); // the copy goes on from where its records end
            append(wal, 500);
        }
        assertReads(image, 7);
    }

    @Test
    void aPowerLossThatCostTheSegmentFileItsPagesReadsTheForcedRecordsFromTheCopy() throws IOException {
        crashWith(3, 1);
        loseUnforcedPages(segmentFile(image, 0));
        assertEquals(3, verifiedRecords(image), "verify reads the copy, as open does");
        try (Wal wal = Wal.open(image, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            assertEquals(3, readAll(wal, wal.firstLsn()).size(), "every forced record");
            append(wal, 100);
        }
        payloads.remove(3);
        assertReads(image, 4);
    }

    @Test
    void theCopyThatTookASegmentsNameHoldsItsRecordsThoughItsMappedFileWasNeverForced() throws IOException {
        io.holdRenamesTo = WalSegmentDescriptor.fileName(1);
        io.renameGate = new java.util.concurrent.CountDownLatch(1); // the closer names segment 0's copy, then waits to name segment 1
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            io.mappedForces.set(0); // the open forced what a crashed process might have left in the mapped file
            for (int i = 0; i < 3; i++) append(wal, 20_000);
            append(wal, 20_000); // segment 1, still unnamed: never forced
            while (Files.exists(WalSegmentCopy.path(dir, 0))) Thread.onSpinWait();
            crashImage();
            io.renameGate.countDown();
        }
        assertEquals(0, io.mappedForces.get());
        // a power loss: the unnamed segment 1 keeps none of its pages (segment 0's name holds its durable copy)
        loseUnforcedPages(image.resolve(WalSegmentDescriptor.fileName(1) + WalSegmentDescriptor.TEMP_SUFFIX));
        assertReads(image, 3);
    }

    /** How a copy may be damaged or cut: it never hides the segment file's records. */
    enum Damage { GONE, SHORT, FLIPPED_BYTE }

    @ParameterizedTest
    @EnumSource(Damage.class)
    void aDamagedOrShortCopyNeverHidesTheSegmentFilesRecords(Damage damage) throws IOException {
        crashWith(3, 2);
        Path copy = WalSegmentCopy.path(image, 0);
        switch (damage) {
            case GONE -> Files.delete(copy);
            case SHORT -> {
                try (FileChannel ch = FileChannel.open(copy, StandardOpenOption.WRITE)) {
                    ch.truncate(SEGMENT_SIZE / 2);
                }
            }
            case FLIPPED_BYTE -> WalTestSupport.flipByte(copy, WalSegmentDescriptor.HEADER_SIZE + 100);
        }
        assertEquals(5, verifiedRecords(image));
        assertReads(image, 5);
    }

    @Test
    void pagesAPowerLossLeftOutOfOrderAreReadFromTheCopyThatHoldsThemAll() throws IOException {
        crashWith(4, 0);
        // the kernel wrote back the mapped file's first and third pages of records, not the second
        WalTestSupport.overwrite(segmentFile(image, 0), 4096, new byte[4096]);
        assertEquals(4, verifiedRecords(image), "verify reads the copy, as open does");
        assertReads(image, 4);
    }

    @Test
    void aDamagedSegmentFileHoldingRecordsItsCopyLacksIsRefused() throws IOException {
        crashWith(2, 2);
        // a flipped byte in the first record, with records after it, two of them nowhere else: damage the scan names
        WalTestSupport.flipByte(segmentFile(image, 0), WalSegmentDescriptor.HEADER_SIZE + 100);
        CorruptionException e = assertThrows(CorruptionException.class,
                () -> Wal.open(image, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null));
        assertEquals(segmentFile(image, 0), e.file());
        WalOpenScan scan = WalOpenScan.run(FileIOFactory.standard(), image, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, -1, true);
        try (Wal wal = Wal.open(scan, null)) {
            assertEquals(2, readAll(wal, wal.firstLsn()).size(), "with the operator's consent, the copy's forced records");
        }
    }

    @Test
    void aDamagedSegmentFileWhoseCopyHoldsEveryRecordIsReadFromTheCopy() throws IOException {
        crashWith(4, 0);
        WalTestSupport.flipByte(segmentFile(image, 0), WalSegmentDescriptor.HEADER_SIZE + 4_200);
        assertReads(image, 4);
    }

    @Test
    void aCopyDamagedPastTheFilesRecordsIsReadAndItsDamageNamed() throws IOException {
        crashWith(3, 0);
        loseUnforcedPages(segmentFile(image, 0)); // a power loss: the mapped file kept nothing
        int last = WalSegmentDescriptor.HEADER_SIZE + 2 * WalSegmentDescriptor.aligned(WalSegmentDescriptor.RECORD_HEADER_SIZE + 4_000);
        WalTestSupport.flipByte(WalSegmentCopy.path(image, 0), last + 100); // the last forced record, whole but for one byte
        CorruptionException e = assertThrows(CorruptionException.class,
                () -> Wal.open(image, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null));
        assertEquals(WalSegmentCopy.path(image, 0), e.file());
    }

    @Test
    void aSegmentFileWithAnotherNameKeepsItsBytesWhenItsCopyReplacesIt() throws IOException {
        Path link = image.resolve("backup.seg");
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            append(wal, 4_000);
            append(wal, 4_000);
            Files.createLink(link, segmentFile(dir, 0)); // a backup made of hard links
        } // the close gives the copy segment 0's name: the old file is not truncated, another name reaches it
        assertEquals(SEGMENT_SIZE, Files.size(link));
        assertArrayEquals(payloads.get(0), WalTestSupport.readBytes(link,
                WalSegmentDescriptor.HEADER_SIZE + WalSegmentDescriptor.PAYLOAD_OFFSET, 4_000));
        assertReads(dir, 2);
    }
}
