package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Pagelog's recent records: read through once, served from memory after, forgotten when the volume is cut, and
 * never served for a reclaimed segment (I8: whatever was kept, an address in a segment that is gone is damage).
 */
@Timeout(60)
class RecentRecordsTest {
    private static final int RECORD = 64;
    private static final int PAGE = PagelogDamageTest.PAGE;
    private static final long SEGMENT = PagelogDamageTest.SEGMENT;

    @TempDir
    Path dir;

    @Test
    void aRecordReadOnceIsServedFromMemoryUntilCleared() throws IOException {
        RecentRecords recent = new RecentRecords(RECORD);
        ByteBuffer rec = ByteBuffer.allocateDirect(RECORD);
        try (FileIO f = FileIOFactory.standard().open(dir.resolve("segment"), true)) {
            f.write(filled(1, RECORD * 2), 0);
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(1, rec.get(0));
            f.write(filled(2, RECORD * 2), 0); // records never change in a Pagelog: the copy kept is what a read returns
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(1, rec.get(RECORD - 1), "served from memory");
            assertEquals(RECORD, recent.read(0, f, 0, rec));
            assertEquals(2, rec.get(0), "another record is read from the file");
            recent.clear(); // recovery cut the volume: the same address may name a new record
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(2, rec.get(0));
        }
    }

    @Test
    void aRecordTheFileEndsInIsShortAndNotKeptWholeOrInPart() throws IOException {
        RecentRecords recent = new RecentRecords(RECORD);
        ByteBuffer rec = ByteBuffer.allocateDirect(RECORD);
        try (FileIO f = FileIOFactory.standard().open(dir.resolve("segment"), true)) {
            f.write(filled(3, RECORD / 2), 0);
            assertEquals(RECORD / 2, recent.read(0, f, 0, rec), "the short read is told");
            ByteBuffer dst = ByteBuffer.allocate(RECORD);
            recent.readPart(0, f, 0, rec, RECORD / 4, RECORD / 2, dst);
            assertEquals(RECORD / 4, dst.position(), "a part: only what the file holds");
            f.write(filled(4, RECORD), 0);
            assertEquals(RECORD, recent.read(0, f, 0, rec));
            assertEquals(4, rec.get(0), "read again from the file, not from a half record kept");
            dst.clear();
            recent.readPart(0, f, 0, rec, 0, 8, dst);
            assertEquals(4, dst.get(0), "a part too: read again from the file, not from a half record kept");
        }
    }

    /** A diff link asks for its entry's bytes only: they land at the buffer's position, from the file once, then from memory. */
    @Test
    void aPartOfARecordIsCopiedAloneAndKeptWholeForTheNext() throws IOException {
        RecentRecords recent = new RecentRecords(RECORD);
        ByteBuffer rec = ByteBuffer.allocateDirect(RECORD);
        try (FileIO f = FileIOFactory.standard().open(dir.resolve("segment"), true)) {
            ByteBuffer record = ByteBuffer.allocate(RECORD);
            for (int i = 0; i < RECORD; i++) record.put(i, (byte) i);
            f.write(record, RECORD);
            ByteBuffer dst = ByteBuffer.allocate(16).position(2);
            recent.readPart(1, f, RECORD, rec, 40, 10, dst);
            assertEquals(12, dst.position(), "advanced by the bytes asked for");
            for (int i = 0; i < 10; i++) assertEquals(40 + i, dst.get(2 + i));
            assertEquals(0, dst.get(12), "nothing past them");
            f.write(filled(9, RECORD), RECORD); // records never change in a Pagelog: the copy kept is what a read returns
            dst.clear();
            recent.readPart(1, f, RECORD, rec, 60, 10, dst);
            assertEquals(4, dst.position(), "no further than the record's end");
            assertEquals(63, dst.get(3), "served from the record kept whole");
        }
    }

    /** A Pagelog of 16-record segments holding {@code records} whole pages; page i's image is filled with i. */
    private static Pagelog pagelog(Path dir, int records) {
        Pagelog log = new Pagelog(FileIOFactory.standard(), dir, PAGE, SEGMENT);
        for (int i = 0; i < records; i++) log.append(i, 0, 1, image(i), 0);
        log.force();
        return log;
    }

    private static ByteBuffer image(int value) {
        return ByteBuffer.allocateDirect(PAGE).put(filled(value, PAGE)).flip();
    }

    @Test
    void aRecordReadBeforeItsSegmentWasReclaimedIsNotServedAfter() {
        ByteBuffer page = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = pagelog(dir, 40)) {
            log.reader.readWhole(3, 3, page, 0); // kept
            assertEquals(3, page.get(PAGE - 1));
            log.reclaimOldest(16, (lo, hi) -> true); // records 0-15 go with their segment
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.reader.readWhole(3, 3, page, 0));
            assertTrue(e.getMessage().contains("segment is gone"), e.getMessage());
        }
    }

    @Test
    void recordsReadBeforeRecoveryCutTheVolumeAreNotServedForTheNewOnesAtTheirAddresses() {
        ByteBuffer page = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = pagelog(dir, 40)) {
            log.reader.readWhole(30, 30, page, 0); // kept
            log.truncate(20);
            for (int i = 20; i < 40; i++) log.append(60 + i, 0, 1, image(60 + i), 0); // new pages at the same addresses
            log.force();
            log.reader.readWhole(30, 90, page, 0);
            assertEquals(90, page.get(0));
        }
    }

    private static ByteBuffer filled(int value, int bytes) {
        byte[] b = new byte[bytes];
        Arrays.fill(b, (byte) value);
        return ByteBuffer.wrap(b);
    }
}
