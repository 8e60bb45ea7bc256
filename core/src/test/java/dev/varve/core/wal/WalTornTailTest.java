package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.LENGTH_OFFSET;
import static dev.varve.core.wal.WalSegmentDescriptor.PAYLOAD_OFFSET;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One test per shape of torn or damaged WAL tail. A torn tail (what a crash can leave: a record without its length,
 * or under FSYNC the unforced end) is cut at the last good record and appending continues; damage (a bad record
 * with durable records after it, or a whole record gone bad where no crash could tear it) is refused with the file
 * and offset, and the files are left as they were unless the operator asks to truncate. Where the sync mode decides,
 * it is the mode that wrote the segment, not the open's: each such case is written under every mode and opened under
 * another (before, an FSYNC store cut by a power loss was refused by a LOG_ONLY open, and a LOG_ONLY store's damaged
 * last record was cut, dropping it, by an FSYNC open).
 */
@Timeout(180)
class WalTornTailTest {
    @TempDir
    Path root;
    /** The WAL of the last {@link #writeRecords}, under {@code root}. */
    private Path dir;
    /** The mode the records were written under. */
    private WalSyncMode writer;

    private final List<byte[]> payloads = new ArrayList<>();
    private final List<Long> lsns = new ArrayList<>();

    private Wal open() {
        return open(WalSyncMode.LOG_ONLY, false);
    }

    private Wal open(WalSyncMode mode, boolean truncateDamage) {
        return Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, mode, -1, truncateDamage), Duration.ofSeconds(1));
    }

    /** Writes records of 500..1499 random bytes until {@code segments} segments exist; returns the end position. */
    private long writeRecords(int segments) {
        return writeRecords(segments, WalSyncMode.LOG_ONLY);
    }

    /** {@link #writeRecords(int)} under {@code mode}, into a WAL of its own. */
    private long writeRecords(int segments, WalSyncMode mode) {
        dir = root.resolve(mode.name());
        writer = mode;
        lsns.clear();
        payloads.clear();
        Random rnd = WalTestSupport.seeded("tornTail");
        try (Wal wal = open(mode, false)) {
            // until a record lies in the last segment: the position alone can sit at a segment's start before its file exists
            while (lsns.size() < 20 || WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), SEGMENT_SIZE) < segments - 1) {
                byte[] p = WalTestSupport.randomBytes(rnd, 500 + rnd.nextInt(1000));
                lsns.add(wal.append(9, ByteBuffer.wrap(p)));
                payloads.add(p);
            }
            return wal.position();
        }
    }

    private Path fileOf(long lsn) {
        return segmentFile(dir, WalSegmentDescriptor.segmentIndex(lsn, SEGMENT_SIZE));
    }

    private static long offsetOf(long lsn) {
        return WalSegmentDescriptor.offset(lsn, SEGMENT_SIZE);
    }

    /**
     * Reopens, expects a cut at {@code lsns[keep]} (records before it kept), then checks appending continues there — or,
     * under another mode than the writer's, at the start of the next segment, which that open starts for its mode.
     */
    private WalTailCut reopenExpectingCutAt(int keep, WalSyncMode mode, boolean truncateDamage) {
        long cutLsn = lsns.get(keep);
        long resumeAt = mode == writer ? cutLsn
                : WalSegmentDescriptor.firstLsn(WalSegmentDescriptor.segmentIndex(cutLsn, SEGMENT_SIZE) + 1, SEGMENT_SIZE);
        WalTailCut cut;
        try (Wal wal = open(mode, truncateDamage)) {
            cut = wal.tailCut().orElseThrow(() -> new AssertionError("no tail cut reported"));
            assertEquals(cutLsn, cut.lsn());
            assertEquals(fileOf(cutLsn), cut.file());
            assertEquals(offsetOf(cutLsn), cut.offset());
            assertEquals(resumeAt, wal.position());
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(keep, read.size());
            for (int i = 0; i < keep; i++) assertArrayEquals(payloads.get(i), read.get(i).payload());
            assertEquals(resumeAt, wal.append(1, ByteBuffer.wrap(new byte[] {42})), "appending continues at the cut");
        }
        try (Wal wal = open()) {
            assertTrue(wal.tailCut().isEmpty(), "the cut is repaired for good");
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(keep + 1, read.size(), "no stale record after the new one");
            assertArrayEquals(new byte[] {42}, read.get(keep).payload());
        }
        return cut;
    }

    /** Expects open to refuse with the file and offset of record {@code victim}, leaving every file as it was. */
    private CorruptionException expectRefusedAt(int victim, WalSyncMode mode) throws IOException {
        Map<Path, byte[]> before = WalTestSupport.snapshotFiles(dir);
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(mode, false));
        assertEquals(fileOf(lsns.get(victim)), e.file());
        assertEquals(offsetOf(lsns.get(victim)), e.offset());
        WalTestSupport.assertSameFiles(before, WalTestSupport.snapshotFiles(dir));
        return e;
    }

    /**
     * Judges the WAL {@link #writeRecords} wrote under each mode, after {@code damage}, by opens under the other modes:
     * written under FSYNC it is cut (by a LOG_ONLY open, and the cut lasts), otherwise refused (by an FSYNC open too).
     */
    private void cutOnlyIfFsyncWroteIt(int segments, int victim, Damage damage) throws IOException {
        for (WalSyncMode mode : WalSyncMode.values()) {
            writeRecords(segments, mode);
            int at = victim < 0 ? lsns.size() + victim : victim;
            damage.apply(at);
            if (mode == WalSyncMode.FSYNC) {
                reopenExpectingCutAt(at, WalSyncMode.LOG_ONLY, false);
            } else {
                for (WalSyncMode opener : WalSyncMode.values()) expectRefusedAt(at, opener);
            }
        }
    }

    /** Damage done to record {@code victim}. */
    private interface Damage {
        void apply(int victim) throws IOException;
    }

    @Test
    void truncatedPayloadOfTheLastRecordIsCutWhenFsyncWroteItAndRefusedOtherwise() throws IOException {
        // the tail of the record never reached the disk: zeros where its second half should be. Only power loss
        // tears a record that has its length, and only FSYNC promises to survive power loss with unforced records.
        cutOnlyIfFsyncWroteIt(1, -1, last -> {
            int half = payloads.get(last).length / 2;
            WalTestSupport.overwrite(fileOf(lsns.get(last)), offsetOf(lsns.get(last)) + PAYLOAD_OFFSET + half,
                    new byte[payloads.get(last).length - half]);
        });
    }

    /** The power loss an FSYNC commit's fdatasync can leave, opened by an operator now running LOG_ONLY. */
    @Test
    void aTornFsyncTailIsCutByALogOnlyOpen() throws IOException {
        writeRecords(1, WalSyncMode.FSYNC);
        int last = lsns.size() - 1;
        long lsn = lsns.get(last);
        int half = payloads.get(last).length / 2;
        WalTestSupport.overwrite(fileOf(lsn), offsetOf(lsn) + PAYLOAD_OFFSET + half, new byte[payloads.get(last).length - half]);
        WalTailCut cut = reopenExpectingCutAt(last, WalSyncMode.LOG_ONLY, false);
        assertTrue(cut.reason().contains("CRC"), cut.reason());
        assertEquals(0, cut.segmentsDeleted());
    }

    /** Real damage to a LOG_ONLY store's last record: an FSYNC open used to cut it, dropping the record unasked. */
    @Test
    void aDamagedLastRecordWrittenUnderLogOnlyIsRefusedByAnFsyncOpen() throws IOException {
        writeRecords(1, WalSyncMode.LOG_ONLY);
        int last = lsns.size() - 1;
        WalTestSupport.flipByte(fileOf(lsns.get(last)), offsetOf(lsns.get(last)) + PAYLOAD_OFFSET + 3);
        CorruptionException e = expectRefusedAt(last, WalSyncMode.FSYNC);
        assertTrue(e.getMessage().contains("CRC") && e.getMessage().contains("under LOG_ONLY"), e.getMessage());
    }

    @Test
    void recordWithoutItsLengthIsCutAndZeroed() throws IOException {
        long end = writeRecords(1);
        lsns.add(end); // the cut is at the end: every record is kept
        // what a process crash leaves: a record body whose length was never published
        byte[] garbage = WalTestSupport.randomBytes(new Random(1), 3000);
        java.util.Arrays.fill(garbage, 0, 4, (byte) 0);
        WalTestSupport.overwrite(fileOf(end), offsetOf(end), garbage);
        reopenExpectingCutAt(lsns.size() - 1, WalSyncMode.LOG_ONLY, false);
        int newRecord = WalSegmentDescriptor.aligned(WalSegmentDescriptor.RECORD_HEADER_SIZE + 1);
        byte[] after = WalTestSupport.readBytes(fileOf(end), offsetOf(end) + newRecord, garbage.length - newRecord);
        assertArrayEquals(new byte[garbage.length - newRecord], after, "garbage beyond the new record is zeroed");
    }

    @Test
    void flippedByteInTheLastRecordIsRefusedUnlessFsyncWroteIt() throws IOException {
        cutOnlyIfFsyncWroteIt(1, -1, last -> WalTestSupport.flipByte(fileOf(lsns.get(last)), offsetOf(lsns.get(last)) + PAYLOAD_OFFSET + 3));
    }

    @Test
    void flippedByteInAMiddleRecordIsRefusedInEveryModeAndTruncatedOnlyOnRequest() throws IOException {
        writeRecords(4);
        int middle = 10; // in segment 0, which is followed by segments 1..3
        assertEquals(0, WalSegmentDescriptor.segmentIndex(lsns.get(middle), SEGMENT_SIZE));
        WalTestSupport.flipByte(fileOf(lsns.get(middle)), offsetOf(lsns.get(middle)) + PAYLOAD_OFFSET + 100);
        for (WalSyncMode mode : WalSyncMode.values()) expectRefusedAt(middle, mode);
        WalTailCut cut = reopenExpectingCutAt(middle, WalSyncMode.LOG_ONLY, true);
        assertEquals(3, cut.segmentsDeleted());
        for (long i = 1; i <= 3; i++) assertFalse(Files.exists(segmentFile(dir, i)), "segment " + i + " deleted");
    }

    @Test
    void aMiddleSegmentWhoseRecordsEndInZerosIsRefusedAndVerifySaysSo() throws IOException {
        writeRecords(3);
        int victim = 0; // the first record of segment 1, which segment 2 follows
        while (WalSegmentDescriptor.segmentIndex(lsns.get(victim), SEGMENT_SIZE) < 1) victim++;
        Path file = fileOf(lsns.get(victim));
        long from = offsetOf(lsns.get(victim));
        WalTestSupport.overwrite(file, from, new byte[(int) (SEGMENT_SIZE - from)]); // lost blocks read back as zeros
        for (WalSyncMode mode : WalSyncMode.values()) {
            CorruptionException e = expectRefusedAt(victim, mode);
            assertTrue(e.getMessage().contains("without the seal"), e.getMessage());
        }
        List<String> damage = new ArrayList<>();
        WalFileCheck.check(FileIOFactory.standard(), dir, SEGMENT_SIZE, WalSyncMode.LOG_ONLY,
                (f, offset, what) -> damage.add(f.getFileName() + "@" + offset));
        assertEquals(List.of(file.getFileName() + "@" + from), damage, "verify finds what open refuses");
        WalTailCut cut = reopenExpectingCutAt(victim, WalSyncMode.LOG_ONLY, true);
        assertEquals(1, cut.segmentsDeleted(), "segment 2, whose records came after the lost ones");
    }

    @Test
    void flippedByteInTheLastSegmentWithRecordsAfterItIsRefusedEvenUnderFsync() throws IOException {
        writeRecords(1);
        int victim = lsns.size() - 3;
        WalTestSupport.flipByte(fileOf(lsns.get(victim)), offsetOf(lsns.get(victim)) + PAYLOAD_OFFSET + 7);
        expectRefusedAt(victim, WalSyncMode.FSYNC);
    }

    @Test
    void zeroedLengthWithRecordsAfterItIsRefusedUnlessFsyncWroteIt() throws IOException {
        // under FSYNC the last commit's sector holding that length may have stayed unwritten while later ones landed
        cutOnlyIfFsyncWroteIt(1, -3, victim ->
                WalTestSupport.overwrite(fileOf(lsns.get(victim)), offsetOf(lsns.get(victim)) + LENGTH_OFFSET, new byte[4]));
        CorruptionException e = expectRefusedAt(lsns.size() - 3, WalSyncMode.LOG_ONLY); // the BACKGROUND-written WAL
        assertTrue(e.getMessage().contains("zero record length"), e.getMessage());
    }

    /**
     * Power loss during an FSYNC commit's fdatasync: the commit's last three records went out together, and the disk
     * kept later sectors of them but not the first one (it still reads as the zeros the segment was created with). No
     * record from there on was acknowledged, so open cuts them all rather than refusing the store.
     */
    @Test
    void lostFirstSectorOfTheLastCommitIsCutWhenFsyncWroteItAndRefusedOtherwise() throws IOException {
        cutOnlyIfFsyncWroteIt(1, -3, victim -> {
            long from = offsetOf(lsns.get(victim));
            long sectorEnd = (from / 512 + 1) * 512;
            WalTestSupport.overwrite(fileOf(lsns.get(victim)), from, new byte[(int) (sectorEnd - from)]);
        });
    }

    @Test
    void lostMiddleSectorOfARecordWithRecordsAfterItIsCutWhenFsyncWroteIt() throws IOException {
        cutOnlyIfFsyncWroteIt(1, -3, victim -> {
            long from = offsetOf(lsns.get(victim));
            long sector = (from / 512 + 1) * 512; // the record's second sector: its length and header survive
            WalTestSupport.overwrite(fileOf(lsns.get(victim)), sector, new byte[(int) Math.min(512, offsetOf(lsns.get(victim + 1)) - sector)]);
        });
    }

    @Test
    void lengthBeyondTheSegmentEndIsCutWhenFsyncWroteItAndRefusedOtherwise() throws IOException {
        ByteBuffer huge = ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(0, (int) SEGMENT_SIZE);
        cutOnlyIfFsyncWroteIt(1, -1, last -> WalTestSupport.overwrite(fileOf(lsns.get(last)), offsetOf(lsns.get(last)), huge.array()));
    }

    @Test
    void corruptHeaderOfALaterSegmentIsRefusedAndDeletedOnlyOnRequest() throws IOException {
        writeRecords(3);
        WalTestSupport.flipByte(segmentFile(dir, 2), 1);
        int firstInSegment2 = 0;
        while (WalSegmentDescriptor.segmentIndex(lsns.get(firstInSegment2), SEGMENT_SIZE) < 2) firstInSegment2++;
        CorruptionException e = assertThrows(CorruptionException.class, this::open);
        assertEquals(segmentFile(dir, 2), e.file());
        assertTrue(e.getMessage().contains("bad magic"), e.getMessage());
        try (Wal wal = open(WalSyncMode.LOG_ONLY, true)) {
            WalTailCut cut = wal.tailCut().orElseThrow();
            assertTrue(cut.reason().contains("bad magic"), cut.reason());
            assertEquals(1, cut.segmentsDeleted());
            assertEquals(firstInSegment2, readAll(wal, wal.firstLsn()).size());
            // deleted, and made anew without records: segment 1's seal names it
            ByteBuffer header = ByteBuffer.wrap(WalTestSupport.readBytes(segmentFile(dir, 2), 0, WalSegmentDescriptor.HEADER_SIZE))
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN);
            assertEquals(null, WalSegmentDescriptor.checkHeader(header, 2), "a good header");
        }
    }

    /**
     * A truncating open that drops the whole newest segment (its header is bad) leaves the WAL ending at its sealed
     * predecessor's end. That WAL appends, and it reopens without the option. Before, the first append threw an
     * IndexOutOfBoundsException (it wrote a seal past the segment's end), and a WAL closed without an append was
     * refused at the next open as a sealed segment whose successor is missing, the cut undone.
     */
    @Test
    void aTruncatingOpenThatDropsTheWholeNewestSegmentLeavesAWalThatAppendsAndReopens() throws IOException {
        for (WalSyncMode mode : List.of(WalSyncMode.LOG_ONLY, WalSyncMode.FSYNC)) {
            for (boolean append : new boolean[] {true, false}) {
                writeRecords(3, mode);
                WalTestSupport.flipByte(segmentFile(dir, 2), 1);
                int kept = 0;
                while (WalSegmentDescriptor.segmentIndex(lsns.get(kept), SEGMENT_SIZE) < 2) kept++;
                try (Wal wal = open(mode, true)) {
                    assertEquals(WalSegmentDescriptor.firstLsn(2, SEGMENT_SIZE), wal.position());
                    if (append) assertEquals(WalSegmentDescriptor.firstLsn(2, SEGMENT_SIZE), wal.append(1, ByteBuffer.wrap(new byte[] {42})));
                }
                try (Wal wal = open(mode, false)) {
                    assertTrue(wal.tailCut().isEmpty(), mode + ": the cut lasts");
                    assertEquals(kept + (append ? 1 : 0), readAll(wal, wal.firstLsn()).size());
                }
                java.nio.file.Files.walk(dir).sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @Test
    void truncatedSegmentIsRefused() throws IOException {
        writeRecords(2);
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(segmentFile(dir, 0),
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.truncate(SEGMENT_SIZE / 3);
        }
        CorruptionException e = assertThrows(CorruptionException.class, this::open);
        assertEquals(segmentFile(dir, 0), e.file());
    }

    @Test
    void missingNeededSegmentIsRefused() throws IOException {
        writeRecords(3);
        Files.delete(segmentFile(dir, 1));
        long needed = lsns.get(0);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Wal.open(
                WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, needed, false), null));
        assertEquals(segmentFile(dir, 1), e.file(), "the segment missing after the one recovery needs");
        assertTrue(e.getMessage().contains("is missing") && e.getMessage().contains(segmentFile(dir, 0).getFileName().toString()), e.getMessage());
        assertTrue(Files.exists(segmentFile(dir, 0)), "nothing deleted before the decision");
    }

    @Test
    void damageBeforeTheNeededPartIsNotRead() throws IOException {
        writeRecords(1);
        WalTestSupport.flipByte(fileOf(lsns.get(3)), offsetOf(lsns.get(3)) + PAYLOAD_OFFSET + 1);
        long needed = lsns.get(5);
        try (Wal wal = Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, WalSyncMode.LOG_ONLY,
                needed, false), null)) {
            assertTrue(wal.tailCut().isEmpty());
            assertEquals(lsns.size() - 5, readAll(wal, needed).size());
        }
    }

    @Test
    void corruptHeaderOfTheOldestSegmentRefusesToOpen() throws IOException {
        writeRecords(1);
        WalTestSupport.flipByte(segmentFile(dir, 0), WalSegmentDescriptor.SEGMENT_INDEX_OFFSET);
        CorruptionException e = assertThrows(CorruptionException.class, this::open);
        assertEquals(segmentFile(dir, 0), e.file());
        assertTrue(e.getMessage().contains("CRC"), e.getMessage());
    }

    @Test
    void leftoverTemporaryFileOfACrashedSegmentCreationIsRemoved() throws IOException {
        long end = writeRecords(1);
        Path temp = dir.resolve(WalSegmentDescriptor.fileName(1) + ".tmp");
        Files.write(temp, new byte[100]);
        try (Wal wal = open()) {
            assertTrue(wal.tailCut().isEmpty());
            assertEquals(end, wal.position());
        }
        assertFalse(Files.exists(temp));
    }

    @Test
    void missingNewestSegmentIsNoticedByItsPredecessorsSeal() throws IOException {
        writeRecords(3);
        Files.delete(segmentFile(dir, 2));
        Map<Path, byte[]> before = WalTestSupport.snapshotFiles(dir);
        CorruptionException e = assertThrows(CorruptionException.class, this::open);
        assertEquals(segmentFile(dir, 2), e.file());
        WalTestSupport.assertSameFiles(before, WalTestSupport.snapshotFiles(dir));
        int inSegment2 = 0;
        while (WalSegmentDescriptor.segmentIndex(lsns.get(inSegment2), SEGMENT_SIZE) < 2) inSegment2++;
        try (Wal wal = open(WalSyncMode.LOG_ONLY, true)) {
            assertEquals(inSegment2, readAll(wal, wal.firstLsn()).size(), "segments 0 and 1 kept whole");
            wal.append(1, ByteBuffer.wrap(new byte[] {1}));
        }
        try (Wal wal = open()) {
            assertEquals(inSegment2 + 1, readAll(wal, wal.firstLsn()).size(), "appending went on after the cut seal");
        }
    }
}
