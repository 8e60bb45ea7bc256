package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(180)
class WalSegmentDeletionTest {
    @TempDir
    Path dir;

    private Wal open() {
        return Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null);
    }

    @Test
    void deleteSegmentsBeforeRemovesOnlyWholeSegmentsBeforeTheLsnsSegment() {
        List<Long> lsns = new ArrayList<>();
        try (Wal wal = open()) {
            while (WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT_SIZE) < 4) {
                lsns.add(wal.append(1, ByteBuffer.allocate(3000)));
            }
            long inSegment2 = lsns.stream().filter(l -> WalSegmentDescriptor.segmentIndex(l, SEGMENT_SIZE) == 2)
                    .skip(3).findFirst().orElseThrow();
            wal.deleteSegmentsBefore(inSegment2);
            assertFalse(Files.exists(segmentFile(dir, 0)));
            assertFalse(Files.exists(segmentFile(dir, 1)));
            assertTrue(Files.exists(segmentFile(dir, 2)));
            assertEquals(WalSegmentDescriptor.firstLsn(2, SEGMENT_SIZE), wal.firstLsn());

            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> wal.read(lsns.get(0)));
            assertTrue(e.getMessage().contains("was deleted"), e.getMessage());
            long expected = lsns.stream().filter(l -> l >= wal.firstLsn()).count();
            assertEquals(expected, readAll(wal, wal.firstLsn()).size());

            wal.deleteSegmentsBefore(wal.position()); // never the segment being written
            assertTrue(Files.exists(segmentFile(dir, 4)));
            assertEquals(WalSegmentDescriptor.firstLsn(4, SEGMENT_SIZE), wal.firstLsn());
            wal.append(1, ByteBuffer.allocate(10));
        }
        try (Wal wal = open()) {
            assertTrue(wal.tailCut().isEmpty());
            assertEquals(WalSegmentDescriptor.firstLsn(4, SEGMENT_SIZE), wal.firstLsn());
            assertEquals(lsns.stream().filter(l -> l >= wal.firstLsn()).count() + 1, readAll(wal, wal.firstLsn()).size());
        }
    }

    @Test
    void segmentsLeftBeforeAGapByAnInterruptedDeletionAreRemovedOnOpen() throws Exception {
        try (Wal wal = open()) {
            while (WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT_SIZE) < 3) {
                wal.append(1, ByteBuffer.allocate(3000));
            }
        }
        Files.delete(segmentFile(dir, 1)); // segment 0's delete was lost, segment 1's was not
        try (Wal wal = open()) {
            assertFalse(Files.exists(segmentFile(dir, 0)));
            assertEquals(WalSegmentDescriptor.firstLsn(2, SEGMENT_SIZE), wal.firstLsn());
        }
    }
}
