package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Pagelog volume's record indexes only grow over a store's life (reclamation deletes whole segments, never reuses an
 * index), and an address keeps the index in 40 bits with a segment number that is an int: 2^40 records are 4.5 PB
 * of 4 KiB pre-states, and 2^31 segments of the smallest archiveSegmentSize 512 TiB, so a store archiving hundreds of
 * MB/s for months reaches one of them. Past it an address named another record (the index's 41st bit reads as an
 * entry offset) or a negative segment; the volume now refuses the record instead. The volumes are crafted to end just
 * before the limit (a last segment of zeroed records under the right number) rather than written that far.
 */
@Timeout(60)
class PagelogAddressLimitTest {
    private static final int PAGE = PagelogDamageTest.PAGE;
    private static final int RECORD_BYTES = PagelogDescriptor.recordBytes(PAGE);

    @TempDir
    Path dir;

    @Test
    void theLastSegmentNumberIsFilledAndNoRecordGoesPastIt() throws IOException {
        refusesTheRecordAfter((long) Integer.MAX_VALUE * 16, 16); // segments up to Integer.MAX_VALUE - 1
    }

    @Test
    void theLastFortyBitRecordIndexIsWrittenAndNoRecordGoesPastIt() throws IOException {
        refusesTheRecordAfter(1L << PagelogDescriptor.RECORD_BITS, 1024);
    }

    /** A volume of segments of {@code recordsPerSegment} records takes record {@code limit - 1} and refuses the next. */
    private void refusesTheRecordAfter(long limit, int recordsPerSegment) throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        long segmentBytes = PagelogDescriptor.segmentBytes(recordsPerSegment, PAGE);
        int last = (int) ((limit - 1) / recordsPerSegment);
        craftSegment(last, recordsPerSegment, recordsPerSegment - 1);
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = new Pagelog(io, dir, PAGE, segmentBytes)) {
            assertEquals(limit - 1, log.end());
            assertEquals(limit - 1, log.append(7, 0, 1, image, 0), "the last address is handed out");
            StorageException e = assertThrows(StorageException.class, () -> log.append(8, 0, 1, image, 0));
            assertTrue(e.getMessage().contains(limit + " records"), e.getMessage());
            log.force(); // the refused record changed nothing: the one before it is written
            assertEquals(limit, log.end());
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            log.reader.readWhole(limit - 1, 7, dst, 0);
        }
        try (Pagelog log = new Pagelog(io, dir, PAGE, segmentBytes)) {
            assertEquals(limit, log.end());
            assertThrows(StorageException.class, () -> log.append(8, 0, 1, image, 0), "refused after a reopen too");
        }
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "no segment past the last was created");
        }
    }

    /** Segment {@code segment} of a volume of {@code recordsPerSegment} records a segment, holding {@code records} zeroed records. */
    private void craftSegment(int segment, int recordsPerSegment, long records) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve(PagelogDescriptor.fileName(segment)).toFile(), "rw")) {
            f.getChannel().write(PagelogDescriptor.header(PAGE, segment, recordsPerSegment, 0), 0);
            f.setLength(PagelogDescriptor.HEADER_SIZE + records * RECORD_BYTES); // sparse: read as records whose (lo, hi] is empty
        }
    }
}
