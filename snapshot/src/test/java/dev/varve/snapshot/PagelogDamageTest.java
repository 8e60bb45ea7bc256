package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reclamation decides from each segment's widest (lo, hi] whether a live snapshot still needs it. After a reopen
 * those ranges come from record headers read without their images, so a flipped byte there could make a needed
 * segment look unreachable: before a segment read that way goes, its records are checked whole, and damage is named
 * instead of deleting what a snapshot reads.
 */
@Timeout(180)
class PagelogDamageTest {
    static final int PAGE = 4096;
    /** Segments of 16 records: a test reaches its second and third segment with a few dozen pages. */
    static final long SEGMENT = 16L * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.HEADER_SIZE; // 16 records

    @TempDir
    Path dir;

    @Test
    void aFlippedRangeByteNeverLetsANeededSegmentGo() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        try (Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT)) {
            for (int i = 0; i < 40; i++) log.append(i, i == 7 ? 4 : 0, i == 7 ? 5 : 1, image, 0); // record 7 is snapshot 5's
            log.force();
        }
        Path first = dir.resolve("pagelog-00000000.log");
        long hiOffset = PagelogDescriptor.HEADER_SIZE + 7L * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.HI_OFFSET;
        try (FileChannel ch = FileChannel.open(first, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, hiOffset);
            b.put(0, (byte) (b.get(0) ^ 0x04)); // hi 5 -> 1: the segment would look unreachable for snapshot 5
            ch.write(b.flip(), hiOffset);
        }
        try (Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT)) {
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.reclaimOldest(Long.MAX_VALUE, (lo, hi) -> !(lo < 5 && 5 <= hi)));
            assertEquals(first, e.file(), e.getMessage());
            assertEquals(hiOffset - PagelogDescriptor.HI_OFFSET, e.offset());
        }
        assertTrue(Files.exists(first), "the segment snapshot 5 reads is still there");
    }
}
