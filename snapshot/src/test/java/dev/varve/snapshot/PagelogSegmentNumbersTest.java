package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Pagelog's segment numbers only grow over a store's life (reclamation deletes the oldest, numbers are never
 * reused), and at the smallest archiveSegmentSize a store writing 50 MB/s of archive passes segment 99,999,999 — the
 * last of eight digits — in about a week. The volumes are crafted here from segments written by a Pagelog, renumbered,
 * rather than by writing that many.
 */
@Timeout(60)
class PagelogSegmentNumbersTest {
    private static final int PAGE = PagelogDamageTest.PAGE;
    private static final long SEGMENT = PagelogDamageTest.SEGMENT; // 16 records
    private static final int RECORDS = 16;
    private static final int RECORD_BYTES = PagelogDescriptor.recordBytes(PAGE);

    @TempDir
    Path dir;

    @Test
    void segmentsPastTheEighthDigitOpenInNumberOrder() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        Path written = Files.createDirectory(dir.resolve("written"));
        Path volume = Files.createDirectory(dir.resolve("volume"));
        try (Pagelog log = new Pagelog(io, written, PAGE, SEGMENT)) {
            for (int i = 0; i < RECORDS + 3; i++) log.append(i, 0, 1, image(i), 0); // segment 0 full, 3 records in segment 1
            log.force();
        }
        // the same records as segments 99,999,999 (eight digits) and 100,000,000 (nine): a name sorts the second first
        int first = 99_999_999;
        renumber(written.resolve(PagelogDescriptor.fileName(0)), volume, first);
        renumber(written.resolve(PagelogDescriptor.fileName(1)), volume, first + 1);

        long base = (long) first * RECORDS;
        try (Pagelog log = new Pagelog(io, volume, PAGE, SEGMENT)) { // was: "Pagelog segment is missing" (pagelog-100000001.log)
            assertEquals(base + RECORDS + 3, log.end());
            assertEquals(2, firstInt(log, base + 2, 2), "a record of the eight-digit segment reads back");
            assertEquals(RECORDS + 1, firstInt(log, base + RECORDS + 1, RECORDS + 1), "a record of the nine-digit segment reads back");
            for (int i = 0; i < RECORDS; i++) log.append(100 + i, 0, 1, image(100 + i), 0); // on into segment 100,000,001
            log.force();
            log.reclaimOldest(Long.MAX_VALUE, (lo, hi) -> true); // the oldest goes first: the eight-digit one
            assertEquals(false, Files.exists(volume.resolve(PagelogDescriptor.fileName(first))));
        }
        try (Pagelog log = new Pagelog(io, volume, PAGE, SEGMENT)) {
            assertEquals(base + 2 * RECORDS + 3, log.end());
            assertEquals(115, firstInt(log, base + 2 * RECORDS + 2, 115));
        }
    }

    /** A page whose first int is {@code n}. */
    private static ByteBuffer image(int n) {
        ByteBuffer b = ByteBuffer.allocateDirect(PAGE);
        b.putInt(0, n);
        return b;
    }

    /** The first int of the image of page {@code pageId} at whole record {@code address}. */
    private static int firstInt(Pagelog log, long address, long pageId) {
        ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
        log.reader.readWhole(address, pageId, dst, 0);
        return dst.getInt(0);
    }

    /** Copies segment file {@code from}'s records into {@code dir} as segment {@code segment}, under its header. */
    private static void renumber(Path from, Path dir, int segment) throws IOException {
        byte[] bytes = Files.readAllBytes(from);
        try (FileChannel ch = FileChannel.open(dir.resolve(PagelogDescriptor.fileName(segment)), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE)) {
            ch.write(PagelogDescriptor.header(PAGE, segment, RECORDS, 0));
            ch.write(ByteBuffer.wrap(bytes, PagelogDescriptor.HEADER_SIZE, bytes.length - PagelogDescriptor.HEADER_SIZE));
        }
        assertEquals(0, (bytes.length - PagelogDescriptor.HEADER_SIZE) % RECORD_BYTES);
    }
}
