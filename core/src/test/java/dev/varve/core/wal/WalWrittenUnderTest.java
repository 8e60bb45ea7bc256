package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.PAYLOAD_OFFSET;
import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each WAL segment records the walSyncMode that wrote it, and its tail is judged by that mode, not by the mode of the
 * open that reads it: a writable open under another mode starts a new segment, so a WAL whose store was reopened
 * under other modes holds segments of each, each judged by its own. A WAL of the format before (version 1, no mode in
 * the header) still opens, judged by the open's mode as before, and is never appended to again.
 */
@Timeout(60)
class WalWrittenUnderTest {
    @TempDir
    Path dir;

    private final List<byte[]> payloads = new ArrayList<>();
    private final List<Long> lsns = new ArrayList<>();

    private Wal open(WalSyncMode mode) {
        return Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, mode, -1, false), Duration.ofSeconds(1));
    }

    /** Opens under {@code mode}, appends {@code n} records of a few hundred bytes and closes. */
    private void append(WalSyncMode mode, int n) {
        try (Wal wal = open(mode)) {
            for (int i = 0; i < n; i++) {
                byte[] p = new byte[200 + payloads.size() % 300];
                java.util.Arrays.fill(p, (byte) payloads.size());
                lsns.add(wal.append(9, ByteBuffer.wrap(p)));
                payloads.add(p);
            }
            wal.commit(lsns.get(lsns.size() - 1));
        }
    }

    private static WalSyncMode writtenUnder(Path segment) throws IOException {
        ByteBuffer h = ByteBuffer.wrap(WalTestSupport.readBytes(segment, 0, WalSegmentDescriptor.HEADER_SIZE)).order(ByteOrder.LITTLE_ENDIAN);
        assertNull(WalSegmentDescriptor.checkHeader(h, WalSegmentDescriptor.parseIndex(segment)), segment + "'s header");
        return WalSegmentDescriptor.writtenUnder(h);
    }

    private Path lastFile() {
        return segmentFile(dir, WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), SEGMENT_SIZE));
    }

    private long lastOffset() {
        return WalSegmentDescriptor.offset(lsns.get(lsns.size() - 1), SEGMENT_SIZE);
    }

    /** Every record appended is read back in order: the seals that end a mode's segment are invisible. */
    private void assertAllRead(WalSyncMode mode, int expected) {
        try (Wal wal = open(mode)) {
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(expected, read.size());
            for (int i = 0; i < expected; i++) {
                assertEquals(lsns.get(i), read.get(i).lsn());
                assertArrayEquals(payloads.get(i), read.get(i).payload());
            }
        }
    }

    @Test
    void anOpenUnderAnotherModeStartsASegmentOfItsOwnAndTheSameModeContinuesIt() throws IOException {
        append(WalSyncMode.FSYNC, 10);
        append(WalSyncMode.FSYNC, 10);
        assertEquals(1, WalTestSupport.snapshotFiles(dir).size(), "the same mode continues the segment");
        append(WalSyncMode.LOG_ONLY, 10);
        append(WalSyncMode.BACKGROUND, 10);
        append(WalSyncMode.FSYNC, 10);
        List<WalSyncMode> modes = new ArrayList<>();
        for (Path p : WalTestSupport.snapshotFiles(dir).keySet()) modes.add(writtenUnder(p));
        assertEquals(List.of(WalSyncMode.FSYNC, WalSyncMode.LOG_ONLY, WalSyncMode.BACKGROUND, WalSyncMode.FSYNC), modes);
        assertEquals(WalSegmentDescriptor.firstLsn(1, SEGMENT_SIZE), lsns.get(20), "LOG_ONLY's first record starts segment 1");
        assertAllRead(WalSyncMode.FSYNC, 50);
    }

    /**
     * FSYNC wrote segment 0, LOG_ONLY segment 1, the newest. A damaged last record in segment 1 is refused by an FSYNC
     * open; a torn one in a newest segment FSYNC wrote is cut by a LOG_ONLY open.
     */
    @Test
    void aWalOfSegmentsOfSeveralModesIsJudgedBySegment() throws IOException {
        append(WalSyncMode.FSYNC, 10);
        append(WalSyncMode.LOG_ONLY, 10);
        Path file = lastFile();
        long offset = lastOffset();
        WalTestSupport.flipByte(file, offset + PAYLOAD_OFFSET + 5);
        Map<Path, byte[]> before = WalTestSupport.snapshotFiles(dir);
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(WalSyncMode.FSYNC));
        assertEquals(file, e.file());
        assertEquals(offset, e.offset());
        WalTestSupport.assertSameFiles(before, WalTestSupport.snapshotFiles(dir));
        WalTestSupport.flipByte(file, offset + PAYLOAD_OFFSET + 5); // repaired

        append(WalSyncMode.FSYNC, 10); // segment 2, FSYNC's
        Path fsyncFile = lastFile();
        assertEquals(segmentFile(dir, 2), fsyncFile);
        WalTestSupport.overwrite(fsyncFile, lastOffset() + PAYLOAD_OFFSET + 100, new byte[50]); // a torn last commit
        try (Wal wal = open(WalSyncMode.LOG_ONLY)) {
            WalTailCut cut = wal.tailCut().orElseThrow(() -> new AssertionError("no cut"));
            assertEquals(fsyncFile, cut.file());
            assertEquals(lastOffset(), cut.offset());
        }
        lsns.remove(lsns.size() - 1);
        payloads.remove(payloads.size() - 1);
        assertAllRead(WalSyncMode.LOG_ONLY, 29);
        assertEquals(WalSyncMode.LOG_ONLY, writtenUnder(segmentFile(dir, 3)), "the LOG_ONLY open started segment 3");
    }

    /** Rewrites each segment's header as format version 1 wrote it: no mode recorded. */
    private void asVersion1() throws IOException {
        for (Path p : WalTestSupport.snapshotFiles(dir).keySet()) {
            ByteBuffer h = ByteBuffer.wrap(WalTestSupport.readBytes(p, 0, WalSegmentDescriptor.HEADER_SIZE)).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt(WalSegmentDescriptor.VERSION_OFFSET, 1).putInt(WalSegmentDescriptor.SYNC_MODE_OFFSET, 0)
                    .putInt(WalSegmentDescriptor.STORE_TAG_OFFSET, 0); // the segment size's upper half in format 1
            CRC32C crc = new CRC32C();
            crc.update(h.duplicate().clear().limit(WalSegmentDescriptor.HEADER_CRC_OFFSET));
            h.putInt(WalSegmentDescriptor.HEADER_CRC_OFFSET, (int) crc.getValue());
            WalTestSupport.overwrite(p, 0, h.array());
        }
    }

    @Test
    void aWalOfTheFormerFormatStillOpensAndIsContinuedInASegmentOfTheCurrentOne() throws IOException {
        append(WalSyncMode.LOG_ONLY, 10);
        asVersion1();
        assertNull(writtenUnder(segmentFile(dir, 0)));
        append(WalSyncMode.LOG_ONLY, 10);
        assertNull(writtenUnder(segmentFile(dir, 0)), "the version 1 segment is sealed, not rewritten");
        assertEquals(WalSyncMode.LOG_ONLY, writtenUnder(segmentFile(dir, 1)));
        assertEquals(WalSegmentDescriptor.firstLsn(1, SEGMENT_SIZE), lsns.get(10));
        assertAllRead(WalSyncMode.LOG_ONLY, 20);
    }

    @Test
    void aFormerFormatSegmentsTailIsJudgedByTheModeOfTheOpenAsBefore() throws IOException {
        append(WalSyncMode.LOG_ONLY, 10);
        asVersion1();
        WalTestSupport.flipByte(lastFile(), lastOffset() + PAYLOAD_OFFSET + 5);
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(WalSyncMode.LOG_ONLY));
        assertEquals(lastOffset(), e.offset());
        List<String> damage = new ArrayList<>();
        WalFileCheck.Result fsync = WalFileCheck.check(FileIOFactory.standard(), dir, SEGMENT_SIZE, WalSyncMode.FSYNC,
                (f, offset, what) -> damage.add(f + "@" + offset));
        assertEquals(List.of(), damage, "verify judges it as open does");
        assertNotNull(fsync.tornTail());
        assertTrue(fsync.tornTail().contains("the given mode"), fsync.tornTail());
        try (Wal wal = open(WalSyncMode.FSYNC)) {
            assertEquals(lastOffset(), wal.tailCut().orElseThrow().offset());
            assertEquals(WalSegmentDescriptor.firstLsn(1, SEGMENT_SIZE), wal.position(), "appending goes on in a new segment");
        }
        assertEquals(WalSyncMode.FSYNC, writtenUnder(segmentFile(dir, 1)));
        lsns.remove(9);
        payloads.remove(9);
        assertAllRead(WalSyncMode.FSYNC, 9);
    }

    /**
     * A crash or power cut at any step of an FSYNC open's switch away from a LOG_ONLY segment — successor prepared,
     * seal written and forced, successor named — leaves a WAL that opens under FSYNC with every record, though the
     * LOG_ONLY segment's tail is judged by LOG_ONLY's strict rule.
     */
    @Test
    void aPowerCutAnywhereInTheSwitchAtOpenLeavesAWalThatOpensWhole() throws IOException {
        for (int n = 1; ; n++) {
            Path d = dir.resolve("cut-" + n);
            FaultyFileIOFactory io = new FaultyFileIOFactory(n);
            List<Long> written = new ArrayList<>();
            try (Wal wal = Wal.open(WalOpenScan.run(io, d, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, -1, false), null)) {
                // records of 200 bytes aligned: the seal at 2040 straddles a sector boundary, where a cut could tear it
                for (int i = 0; i < 10; i++) written.add(wal.append(9, ByteBuffer.wrap(new byte[183])));
            }
            io.crashAt(FaultyFileIOFactory.nth(n, op -> true));
            try (Wal wal = Wal.open(WalOpenScan.run(io, d, SEGMENT_SIZE, WalSyncMode.FSYNC, -1, false), null)) {
                assertEquals(written.size(), readAll(wal, wal.firstLsn()).size());
            } catch (RuntimeException crashed) {
                assertNotNull(io.crashedAt(), "only the injected crash fails the open: " + crashed);
            }
            boolean done = io.crashedAt() == null;
            io.powerLoss();
            try (Wal wal = Wal.open(WalOpenScan.run(io, d, SEGMENT_SIZE, WalSyncMode.FSYNC, -1, false), null)) {
                List<Rec> read = readAll(wal, wal.firstLsn());
                assertEquals(written, read.stream().map(Rec::lsn).toList(), "cut at operation " + n + " " + io);
            }
            if (done) break;
        }
    }
}
