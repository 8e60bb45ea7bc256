package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.randomBytes;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(180)
class WalAppendReadTest {
    @TempDir
    Path dir;

    private Wal open(WalSyncMode mode) {
        return Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, null);
    }

    @Test
    void emptyWalStartsAtTheFirstRecordPositionOfSegmentZero() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            assertEquals(WalSegmentDescriptor.HEADER_SIZE, wal.position());
            assertEquals(WalSegmentDescriptor.firstLsn(0, SEGMENT_SIZE), wal.position());
            assertTrue(wal.tailCut().isEmpty());
            assertTrue(Files.exists(dir.resolve("wal-0000000000000000.seg")));
            assertEquals(List.of(), readAll(wal, wal.position()));
        }
    }

    @Test
    void lsnHelpersComposeAndExtract() {
        long lsn = WalSegmentDescriptor.lsn(7, 4096, SEGMENT_SIZE);
        assertEquals(7 * SEGMENT_SIZE + 4096, lsn);
        assertEquals(7, WalSegmentDescriptor.segmentIndex(lsn, SEGMENT_SIZE));
        assertEquals(4096, WalSegmentDescriptor.offset(lsn, SEGMENT_SIZE));
        assertEquals("wal-0000000000000007.seg", WalSegmentDescriptor.fileName(7));
    }

    /**
     * A payload is the window between its position and its limit, in a heap or a direct buffer with bytes on either
     * side: the record holds that window and its CRC is over it (the reader checks every record's CRC), and the
     * buffer's position and limit are as they were.
     */
    @Test
    void appendsThePayloadsWindowAndLeavesItsPositionAndLimit() {
        Random rnd = WalTestSupport.seeded("window");
        List<byte[]> written = new ArrayList<>();
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            for (int i = 0; i < 200; i++) {
                byte[] around = randomBytes(rnd, 64 + rnd.nextInt(3000));
                ByteBuffer buf = i % 2 == 0 ? ByteBuffer.wrap(around) : ByteBuffer.allocateDirect(around.length).put(around).clear();
                int position = rnd.nextInt(32);
                int limit = around.length - rnd.nextInt(32);
                buf.limit(limit).position(position);
                wal.append(1 + i % 254, buf);
                assertEquals(position, buf.position(), "position of payload " + i);
                assertEquals(limit, buf.limit(), "limit of payload " + i);
                written.add(Arrays.copyOfRange(around, position, limit));
            }
            List<Rec> read = readAll(wal, WalSegmentDescriptor.firstLsn(0, SEGMENT_SIZE));
            assertEquals(written.size(), read.size());
            for (int i = 0; i < read.size(); i++) assertArrayEquals(written.get(i), read.get(i).payload(), "record " + i);
        }
    }

    @Test
    void roundTripOfRandomPayloadSizesIncludingZeroAndMax() {
        Random rnd = WalTestSupport.seeded("roundTrip");
        List<byte[]> written = new ArrayList<>();
        List<Long> lsns = new ArrayList<>();
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            int max = wal.maxPayloadBytes();
            assertEquals(SEGMENT_SIZE - WalSegmentDescriptor.HEADER_SIZE - WalSegmentDescriptor.RECORD_HEADER_SIZE
                    - WalSegmentDescriptor.SEAL_BYTES, max, "room for the seal stays free");
            int[] fixed = {0, max, 1, 0, max, 7, 8, 9};
            for (int i = 0; i < 300; i++) {
                int size = i < fixed.length ? fixed[i] : rnd.nextInt(rnd.nextBoolean() ? 64 : 4000);
                byte[] payload = randomBytes(rnd, size);
                ByteBuffer buf = ByteBuffer.wrap(payload);
                lsns.add(wal.append(1 + i % 254, buf));
                assertEquals(0, buf.position(), "append must not consume the payload");
                written.add(payload);
            }
            List<Rec> read = readAll(wal, WalSegmentDescriptor.firstLsn(0, SEGMENT_SIZE));
            assertEquals(written.size(), read.size());
            for (int i = 0; i < read.size(); i++) {
                assertEquals(lsns.get(i), read.get(i).lsn());
                assertEquals(1 + i % 254, read.get(i).type());
                assertArrayEquals(written.get(i), read.get(i).payload(), "record " + i);
                if (i > 0) assertTrue(read.get(i).lsn() > read.get(i - 1).lsn());
            }
            assertEquals(wal.position(), read.get(read.size() - 1).nextLsn());
            assertTrue(WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT_SIZE) >= 2, "spans segments");
        }
    }

    @Test
    void recordsSpanManySegmentsAndNeverStraddleOne() {
        Random rnd = WalTestSupport.seeded("multiSegment");
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            List<byte[]> written = new ArrayList<>();
            while (WalSegmentDescriptor.segmentIndex(wal.position(), SEGMENT_SIZE) < 5) {
                byte[] p = randomBytes(rnd, 1000 + rnd.nextInt(20_000));
                long lsn = wal.append(3, ByteBuffer.wrap(p));
                long end = lsn + WalSegmentDescriptor.RECORD_HEADER_SIZE + p.length;
                assertEquals(WalSegmentDescriptor.segmentIndex(lsn, SEGMENT_SIZE),
                        WalSegmentDescriptor.segmentIndex(end - 1, SEGMENT_SIZE), "record straddles a segment");
                written.add(p);
            }
            List<Rec> read = readAll(wal, WalSegmentDescriptor.firstLsn(0, SEGMENT_SIZE));
            assertEquals(written.size(), read.size());
            for (int i = 0; i < read.size(); i++) assertArrayEquals(written.get(i), read.get(i).payload());
            long bytes = written.stream().mapToLong(p -> p.length + WalSegmentDescriptor.RECORD_HEADER_SIZE).sum();
            assertEquals(bytes, wal.bytesWritten());
        }
        for (long i = 0; i <= 5; i++) {
            assertEquals(SEGMENT_SIZE, WalTestSupport.segmentFile(dir, i).toFile().length());
        }
    }

    @Test
    void readFromAMiddleRecordOrFromANextLsn() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            List<Long> lsns = new ArrayList<>();
            for (int i = 0; i < 50; i++) lsns.add(wal.append(2, ByteBuffer.wrap(new byte[3000 + i])));
            List<Rec> fromMiddle = readAll(wal, lsns.get(20));
            assertEquals(30, fromMiddle.size());
            assertEquals(lsns.get(20), fromMiddle.get(0).lsn());
            List<Rec> resumed = readAll(wal, fromMiddle.get(9).nextLsn());
            assertEquals(lsns.get(30), resumed.get(0).lsn());
            assertEquals(List.of(), readAll(wal, wal.position()));
        }
    }

    /**
     * Recovery tells its reader which records open's scan already checked; a record from that LSN on is still
     * checked, so damage the scan did not see is refused, naming the segment.
     */
    @Test
    void aReaderChecksEveryRecordFromTheLsnItWasToldWasNotCheckedYet() throws Exception {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            long first = wal.append(2, ByteBuffer.wrap(new byte[100]));
            long second = wal.append(2, ByteBuffer.wrap(new byte[100]));
            long third = wal.append(2, ByteBuffer.wrap(new byte[100]));
            int payloadAt = WalSegmentDescriptor.offset(second, SEGMENT_SIZE) + WalSegmentDescriptor.PAYLOAD_OFFSET + 10;
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(WalTestSupport.segmentFile(dir, 0),
                    java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(new byte[] {42}), payloadAt); // the mapping sees it: same page cache
            }
            for (long checkedBefore : new long[] {0, first, second}) {
                try (WalReader r = wal.read(first)) {
                    r.checkedBefore(checkedBefore);
                    assertTrue(r.next());
                    dev.varve.core.io.CorruptionException e = assertThrows(dev.varve.core.io.CorruptionException.class, r::next,
                            "the damaged record at " + second + " with checks from " + checkedBefore);
                    assertTrue(e.getMessage().contains("wal-0000000000000000.seg"), e.getMessage());
                }
            }
            try (WalReader r = wal.read(first)) {
                r.checkedBefore(third); // the caller vouches for the first two records
                int n = 0;
                while (r.next()) n++;
                assertEquals(3, n);
            }
        }
    }

    @Test
    void aReaderSkipsADamagedRecordToTheNextThatChecksOutOrTheNextSegment() throws Exception {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            long first = wal.append(2, ByteBuffer.wrap(new byte[100]));
            long second = wal.append(2, ByteBuffer.wrap(new byte[100]));
            long third = wal.append(2, ByteBuffer.wrap(new byte[100]));
            WalTestSupport.flipByte(WalTestSupport.segmentFile(dir, 0), WalSegmentDescriptor.offset(second, SEGMENT_SIZE) + WalSegmentDescriptor.PAYLOAD_OFFSET + 10);
            try (WalReader r = wal.read(first)) {
                assertTrue(r.next());
                assertThrows(dev.varve.core.io.CorruptionException.class, r::next);
                assertEquals(second, r.nextLsn(), "a failed step stays at the damaged record");
                assertEquals(third, r.skipDamaged());
                assertTrue(r.next());
                assertEquals(third, r.lsn());
                assertFalse(r.next());
            }
            WalTestSupport.flipByte(WalTestSupport.segmentFile(dir, 0), WalSegmentDescriptor.offset(third, SEGMENT_SIZE) + WalSegmentDescriptor.PAYLOAD_OFFSET + 10);
            try (WalReader r = wal.read(second)) { // no record that checks out after it in its segment: the next segment
                assertThrows(dev.varve.core.io.CorruptionException.class, r::next);
                assertEquals(WalSegmentDescriptor.firstLsn(1, SEGMENT_SIZE), r.skipDamaged());
                assertFalse(r.next());
            }
        }
    }

    @Test
    void readFromAnLsnThatIsNotARecordBoundaryIsRejected() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            long lsn = wal.append(2, ByteBuffer.wrap(new byte[100]));
            wal.append(2, ByteBuffer.wrap(new byte[100]));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> wal.read(lsn + 8));
            assertTrue(e.getMessage().contains("not a WAL record boundary"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> wal.read(wal.position() + 8));
        }
    }

    @Test
    void readerStopsAtThePositionWhenItWasMadeWhileAppendsContinue() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            long first = wal.append(1, ByteBuffer.wrap(new byte[10]));
            try (WalReader r = wal.read(first)) {
                wal.append(1, ByteBuffer.wrap(new byte[10]));
                assertTrue(r.next());
                assertTrue(r.payload().isReadOnly());
                assertFalse(r.next());
            }
        }
    }

    /** The reader reuses one view for every record's payload: each record's starts afresh, whatever the last caller did. */
    @Test
    void aPayloadReadsFromIndexZeroIsTheSameViewDuringItsRecordAndStartsAfreshForTheNext() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            long first = wal.append(1, ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
            byte[] longer = new byte[300];
            java.util.Arrays.fill(longer, (byte) 9);
            wal.append(2, ByteBuffer.wrap(longer));
            try (WalReader r = wal.read(first)) {
                assertTrue(r.next());
                ByteBuffer p = r.payload();
                assertEquals(0, p.position());
                assertEquals(8, p.remaining());
                assertEquals(0x0807060504030201L, p.getLong(0), "little-endian, from index 0");
                p.get(); // a caller moves its position
                p.order(java.nio.ByteOrder.BIG_ENDIAN);
                assertSame(p, r.payload(), "the same view during one record");
                assertTrue(r.next());
                ByteBuffer q = r.payload();
                assertEquals(0, q.position());
                assertEquals(300, q.remaining());
                assertEquals(java.nio.ByteOrder.LITTLE_ENDIAN, q.order());
                assertTrue(q.isReadOnly());
                assertEquals(9, q.get(299));
                assertFalse(r.next());
                assertThrows(java.util.NoSuchElementException.class, r::payload);
            }
        }
    }

    @Test
    void reopenContinuesAppendingAfterTheLastRecord() {
        Random rnd = WalTestSupport.seeded("reopen");
        List<byte[]> written = new ArrayList<>();
        long end;
        try (Wal wal = open(WalSyncMode.FSYNC)) {
            for (int i = 0; i < 40; i++) {
                byte[] p = randomBytes(rnd, rnd.nextInt(5000));
                wal.commit(wal.append(4, ByteBuffer.wrap(p)));
                written.add(p);
            }
            end = wal.position();
        }
        try (Wal wal = open(WalSyncMode.FSYNC)) {
            assertTrue(wal.tailCut().isEmpty());
            assertEquals(end, wal.position());
            assertEquals(0, wal.bytesWritten());
            for (int i = 0; i < 40; i++) {
                byte[] p = randomBytes(rnd, rnd.nextInt(5000));
                long lsn = wal.append(5, ByteBuffer.wrap(p));
                if (i == 0) { // right after the last record, unless it does not fit beside the seal's room: then first in the next segment
                    long offset = end % SEGMENT_SIZE;
                    boolean fits = offset + WalSegmentDescriptor.aligned(WalSegmentDescriptor.RECORD_HEADER_SIZE + p.length)
                            + WalSegmentDescriptor.SEAL_BYTES <= SEGMENT_SIZE;
                    assertEquals(fits ? end : end - offset + SEGMENT_SIZE + WalSegmentDescriptor.HEADER_SIZE, lsn);
                }
                written.add(p);
            }
        }
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(written.size(), read.size());
            for (int i = 0; i < read.size(); i++) assertArrayEquals(written.get(i), read.get(i).payload());
        }
    }

    @Test
    void reopenAfterAFullSegmentContinuesInTheNextOne() {
        long sealAt = SEGMENT_SIZE - WalSegmentDescriptor.SEAL_BYTES;
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            wal.append(1, ByteBuffer.allocate(wal.maxPayloadBytes()));
            assertEquals(sealAt, wal.position(), "only the seal's room is left");
            wal.force();
        }
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            assertEquals(sealAt, wal.position());
            assertEquals(WalSegmentDescriptor.firstLsn(1, SEGMENT_SIZE), wal.append(1, ByteBuffer.allocate(5)));
            assertEquals(2, readAll(wal, wal.firstLsn()).size(), "the seal between them is not a record to readers");
        }
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            assertEquals(2, readAll(wal, wal.firstLsn()).size());
        }
    }

    @Test
    void oversizedPayloadIsRejectedNamingTheLimitAndNothingIsWritten() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            wal.append(1, ByteBuffer.wrap(new byte[10]));
            long position = wal.position();
            long bytes = wal.bytesWritten();
            int max = wal.maxPayloadBytes();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> wal.append(1, ByteBuffer.allocate(max + 1)));
            String msg = e.getMessage();
            assertTrue(msg.contains(String.valueOf(max + 1 + WalSegmentDescriptor.RECORD_HEADER_SIZE)), msg);
            assertTrue(msg.contains("limit of " + (max + WalSegmentDescriptor.RECORD_HEADER_SIZE)), msg);
            assertTrue(msg.contains("raise walSegmentSize"), msg);
            assertEquals(position, wal.position());
            assertEquals(bytes, wal.bytesWritten());
            assertEquals(1, readAll(wal, wal.firstLsn()).size());
        }
    }

    @Test
    void badTypesAndSegmentSizesAreRejected() {
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            assertThrows(IllegalArgumentException.class, () -> wal.append(0, ByteBuffer.allocate(1)));
            assertThrows(IllegalArgumentException.class, () -> wal.append(256, ByteBuffer.allocate(1)));
            assertThrows(IllegalArgumentException.class, () -> wal.append(WalSegmentDescriptor.SEAL_TYPE,
                    ByteBuffer.allocate(1)), "the seal type is the WAL's own");
            long lsn = wal.append(254, ByteBuffer.allocate(1));
            assertEquals(254, readAll(wal, lsn).get(0).type());
        }
        assertThrows(IllegalArgumentException.class,
                () -> Wal.open(dir, FileIOFactory.standard(), 32 * 1024, WalSyncMode.LOG_ONLY, null));
        assertThrows(IllegalArgumentException.class,
                () -> Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE + 1, WalSyncMode.LOG_ONLY, null));
        assertThrows(IllegalArgumentException.class,
                () -> Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.BACKGROUND, null));
    }

    @Test
    void reopeningWithAnotherSegmentSizeSaysWhichSizeTheWalHas() {
        open(WalSyncMode.LOG_ONLY).close();
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> Wal.open(dir, FileIOFactory.standard(), 2 * SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null));
        assertTrue(e.getMessage().contains("walSegmentSize=" + SEGMENT_SIZE), e.getMessage());
    }

    @Test
    void appendAfterCloseIsRejected() {
        Wal wal = open(WalSyncMode.FSYNC);
        long lsn = wal.append(1, ByteBuffer.allocate(4));
        wal.close();
        wal.close(); // idempotent
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> wal.append(1, ByteBuffer.allocate(4)));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        wal.commit(lsn); // durable by close: nothing to wait for
        assertThrows(IllegalStateException.class, wal::force);
    }
}
