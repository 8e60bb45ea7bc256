package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.PAYLOAD_OFFSET;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The WAL read a window at a time ({@link WalSegmentWindow}): in segments of several windows, records that cross a
 * window's edge, records longer than a window, a reader started deep in a segment, and damage and power-cut tears past
 * the first window are read and judged exactly as a segment read whole is. The other WAL tests use 64 KiB segments,
 * which one window holds.
 */
@Timeout(120)
class WalSegmentWindowTest {
    private static final long SEGMENT = 4L * WalSegmentWindow.BYTES;

    @TempDir
    Path dir;

    private final List<Long> lsns = new ArrayList<>();
    private final List<byte[]> payloads = new ArrayList<>();

    private WalOpenScan scan(WalSyncMode mode, long neededFrom, boolean truncate, WalRecordVisitor visitor) {
        return WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT, mode, neededFrom, truncate, visitor);
    }

    /**
     * Appends records until {@code segments} or more segments hold them, the last with eight records past its second
     * window: mostly up to 64 KiB, every 25th longer than a window (1.5-2.5 windows), so records start and end at every
     * distance from a window's edge.
     */
    private void write(WalSyncMode mode, int segments, Random rnd) {
        try (Wal wal = Wal.open(scan(mode, -1, false, null), Duration.ofSeconds(1))) {
            int deep = 0; // records past the second window of the last record's segment
            while (lsns.isEmpty() || WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), SEGMENT) < segments - 1 || deep < 8) {
                int size = lsns.size() % 25 == 24
                        ? WalSegmentWindow.BYTES + WalSegmentWindow.BYTES / 2 + rnd.nextInt(WalSegmentWindow.BYTES)
                        : rnd.nextInt(64 * 1024);
                byte[] p = WalTestSupport.randomBytes(rnd, size);
                long lsn = wal.append(7, ByteBuffer.wrap(p));
                boolean sameSegment = !lsns.isEmpty() && WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), SEGMENT)
                        == WalSegmentDescriptor.segmentIndex(lsn, SEGMENT);
                deep = (sameSegment ? deep : 0) + (offset(lsn) > 2 * WalSegmentWindow.BYTES ? 1 : 0);
                lsns.add(lsn);
                payloads.add(p);
            }
            wal.commit(lsns.get(lsns.size() - 1));
        }
    }

    private static int offset(long lsn) {
        return WalSegmentDescriptor.offset(lsn, SEGMENT);
    }

    /**
     * The first record of the last segment more than {@code windows} windows into it, of {@code minBytes} or more,
     * with another record after it: its position in {@link #lsns}.
     */
    private int recordPast(int windows, int minBytes) {
        long last = WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), SEGMENT);
        for (int i = 0; i + 1 < lsns.size(); i++) {
            if (WalSegmentDescriptor.segmentIndex(lsns.get(i), SEGMENT) == last
                    && offset(lsns.get(i)) > windows * WalSegmentWindow.BYTES && payloads.get(i).length >= minBytes) {
                return i;
            }
        }
        throw new AssertionError("no such record");
    }

    private Path segmentOf(long lsn) {
        return segmentFile(dir, WalSegmentDescriptor.segmentIndex(lsn, SEGMENT));
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void recordsAcrossWindowEdgesAndLongerThanAWindowAreScannedAndReadWhole(WalSyncMode mode) {
        write(mode, 3, WalTestSupport.seeded("window-" + mode));
        List<Long> scanned = new ArrayList<>();
        List<byte[]> scannedPayloads = new ArrayList<>();
        WalOpenScan s = scan(mode, -1, false, (lsn, type, payload) -> {
            if (type == WalSegmentDescriptor.SEAL_TYPE) return;
            byte[] b = new byte[payload.remaining()];
            payload.get(b);
            scanned.add(lsn);
            scannedPayloads.add(b);
        });
        assertEquals(lsns, scanned, "the scan met every record, in order");
        for (int i = 0; i < lsns.size(); i++) assertArrayEquals(payloads.get(i), scannedPayloads.get(i), "scanned record " + i);
        try (Wal wal = Wal.open(s, Duration.ofSeconds(1))) {
            assertTrue(wal.tailCut().isEmpty(), "nothing cut");
            List<Rec> all = readAll(wal, lsns.get(0));
            assertEquals(lsns.size(), all.size());
            for (int i = 0; i < lsns.size(); i++) {
                assertEquals(lsns.get(i), all.get(i).lsn());
                assertArrayEquals(payloads.get(i), all.get(i).payload(), "read record " + i);
            }
            int deep = recordPast(2, 0); // a reader started past the first two windows of its segment
            List<Rec> tail = readAll(wal, lsns.get(deep));
            assertEquals(lsns.size() - deep, tail.size());
            assertArrayEquals(payloads.get(deep), tail.get(0).payload());
        }
    }

    @Test
    void aFlippedBytePastTheFirstWindowIsRefusedAtItsOffsetAndAReaderSkipsToTheNextRecord() throws IOException {
        write(WalSyncMode.LOG_ONLY, 2, WalTestSupport.seeded("window-damage"));
        int bad = recordPast(2, 0);
        long badLsn = lsns.get(bad);
        Path file = segmentOf(badLsn);
        WalTestSupport.flipByte(file, offset(badLsn) + PAYLOAD_OFFSET);

        CorruptionException e = assertThrows(CorruptionException.class, () -> scan(WalSyncMode.LOG_ONLY, -1, false, null));
        assertEquals(file, e.file());
        assertEquals(offset(badLsn), e.offset(), e.getMessage());
        assertTrue(e.getMessage().contains("CRC"), e.getMessage());

        List<String> found = new ArrayList<>();
        WalFileCheck.check(FileIOFactory.standard(), dir, SEGMENT, WalSyncMode.LOG_ONLY, (p, off, what) -> found.add(p.getFileName() + "@" + off + ": " + what));
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).startsWith(file.getFileName() + "@" + offset(badLsn) + ": record CRC mismatch"), found.toString());
        assertTrue(found.get(0).contains("the next valid record starts at offset " + offset(lsns.get(bad + 1))), found.toString());

        // an open that needs only the records after it: a reader from the start meets it, then skips to the next record
        try (Wal wal = Wal.open(scan(WalSyncMode.LOG_ONLY, lsns.get(bad + 1), false, null), Duration.ofSeconds(1));
             WalReader r = wal.read(lsns.get(0))) {
            for (int i = 0; i < bad; i++) {
                assertTrue(r.next());
                assertEquals(lsns.get(i), r.lsn());
            }
            CorruptionException atRead = assertThrows(CorruptionException.class, r::next);
            assertEquals(offset(badLsn), atRead.offset());
            assertEquals(lsns.get(bad + 1), r.skipDamaged());
            assertTrue(r.next());
            byte[] b = new byte[r.payload().remaining()];
            r.payload().get(b);
            assertArrayEquals(payloads.get(bad + 1), b);
        }
    }

    @Test
    void aLostSectorPastTheFirstWindowIsATornTailUnderFsyncAndDamageUnderLogOnly() throws IOException {
        Random rnd = WalTestSupport.seeded("window-sector");
        write(WalSyncMode.FSYNC, 1, rnd);
        int torn = recordPast(2, 1024); // a whole sector inside its body
        long tornLsn = lsns.get(torn);
        Path file = segmentOf(tornLsn);
        long sector = (offset(tornLsn) + PAYLOAD_OFFSET + 511) & -512;
        WalTestSupport.overwrite(file, sector, new byte[512]);
        byte[] before = WalTestSupport.readBytes(file, 0, (int) SEGMENT);

        // written under FSYNC: a power cut's tear, with whole records after it, cut there whichever mode opens
        WalOpenScan s = scan(WalSyncMode.LOG_ONLY, -1, false, null);
        assertNotNull(s.tailCut());
        assertEquals(offset(tornLsn), s.tailCut().offset(), s.tailCut().toString());
        assertEquals(tornLsn, s.endLsn());
        assertArrayEquals(before, WalTestSupport.readBytes(file, 0, (int) SEGMENT), "the scan wrote nothing");

        // the same bytes written under LOG_ONLY are damage: a valid record follows the bad one
        lsns.clear();
        payloads.clear();
        dir = dir.resolve("log-only");
        write(WalSyncMode.LOG_ONLY, 1, new Random(1));
        int bad = recordPast(2, 1024);
        long badLsn = lsns.get(bad);
        WalTestSupport.overwrite(segmentOf(badLsn), (offset(badLsn) + PAYLOAD_OFFSET + 511) & -512, new byte[512]);
        CorruptionException e = assertThrows(CorruptionException.class, () -> scan(WalSyncMode.LOG_ONLY, -1, false, null));
        assertEquals(offset(badLsn), e.offset());
        assertTrue(e.getMessage().contains("a valid record follows it"), e.getMessage());
    }

    @Test
    void aSegmentFileThatFailsToCloseIsNamedInTheError() throws IOException {
        Path file = segmentFile(dir, 3);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), SEGMENT - 1);
        }
        FileIOFactory failingClose = new ForwardingFileIOFactory() {
            @Override
            public FileIO open(Path f, boolean create) throws IOException {
                return new ForwardingFileIO(delegate.open(f, create)) {
                    @Override
                    public void close() throws IOException {
                        delegate.close();
                        throw new IOException("injected close failure");
                    }
                };
            }
        };
        WalSegmentWindow w = new WalSegmentWindow(SEGMENT);
        assertTrue(w.open(failingClose, file, 3));
        StorageException e = assertThrows(StorageException.class, w::close);
        assertTrue(e.getMessage().contains("WAL segment 3"), e.getMessage());
        assertEquals(-1, w.index(), "closed, even so");
    }

    @Test
    void theBufferStartsSmallAndDoublesAtEachRefillUpToAWindow() {
        write(WalSyncMode.LOG_ONLY, 1, WalTestSupport.seeded("window-growth"));
        try (WalSegmentWindow w = new WalSegmentWindow(SEGMENT)) {
            assertTrue(w.open(FileIOFactory.standard(), segmentOf(lsns.get(0)), WalSegmentDescriptor.segmentIndex(lsns.get(0), SEGMENT)));
            assertEquals(0, w.capacity(), "nothing allocated before the first read");
            w.cover(WalSegmentDescriptor.HEADER_SIZE, WalSegmentDescriptor.RECORD_HEADER_SIZE);
            assertEquals(WalSegmentWindow.FIRST_BYTES, w.capacity(), "one record's read takes a small buffer");
            int expected = WalSegmentWindow.FIRST_BYTES;
            for (int off = w.capacity(); expected < WalSegmentWindow.BYTES; off = w.base() + w.capacity()) {
                w.cover(off, 1); // past what the buffer holds: a refill
                expected *= 2;
                assertEquals(expected, w.capacity());
            }
            w.cover(w.base() + w.capacity(), 1);
            assertEquals(WalSegmentWindow.BYTES, w.capacity(), "no larger than a window");
            w.cover(0, 2 * WalSegmentWindow.BYTES + 1);
            assertEquals(2 * WalSegmentWindow.BYTES + 4096, w.capacity(), "a longer record is held whole");
        }
    }
}
