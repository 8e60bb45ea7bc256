package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A power cut during an FSYNC commit's fdatasync: the commit's range went out in one write, which the disk may have
 * kept in any subset of its 512-byte sectors (a sector it lost reads as the zeros the segment was created with; the
 * range starts mid-sector, after records an earlier commit made durable, which that sector keeps either way). Every
 * such state opens under every sync mode — the segment's tail is judged by FSYNC's rule, which wrote it — with every
 * earlier commit whole and the last one cut before its first record a lost sector touches; verify reports a torn tail,
 * never damage.
 */
@Timeout(120)
class WalFsyncLostSectorTest {
    private static final int SECTOR = 512;
    private static final int RANDOM_SUBSETS = 24;

    @TempDir
    Path root;

    /** One record of the written WAL: its payload and where it lies in segment 0. */
    private record Written(byte[] payload, int offset, int length) {
    }

    @Test
    void anySectorsOfTheLastCommitLostLeaveEveryEarlierCommitAndATornTailEveryModeCuts() throws IOException {
        Random rnd = WalTestSupport.seeded("fsyncLostSector");
        Path written = Files.createDirectories(root.resolve("written"));
        List<Written> earlier = new ArrayList<>();
        List<Written> last = new ArrayList<>();
        try (Wal wal = Wal.open(written, FileIOFactory.standard(), WalTestSupport.SEGMENT_SIZE, WalSyncMode.FSYNC, null)) {
            for (int i = 0; i < 5 || offsetOf(wal.position()) % SECTOR == 0; i++) { // the last commit starts mid-sector
                byte[] p = WalTestSupport.randomBytes(rnd, 100 + rnd.nextInt(400));
                long lsn = wal.append(7, ByteBuffer.wrap(p));
                wal.commit(lsn);
                earlier.add(new Written(p, offsetOf(lsn), WalSegmentDescriptor.RECORD_HEADER_SIZE + p.length));
            }
            long lsn = -1;
            for (int bytes = 0; bytes < 6 * SECTOR; ) {
                byte[] p = WalTestSupport.randomBytes(rnd, 300 + rnd.nextInt(700));
                lsn = wal.append(7, ByteBuffer.wrap(p));
                last.add(new Written(p, offsetOf(lsn), WalSegmentDescriptor.RECORD_HEADER_SIZE + p.length));
                bytes += p.length;
            }
            wal.commit(lsn); // one force: the range [from, to) below
        }
        int from = last.get(0).offset;
        int to = WalSegmentDescriptor.aligned(last.get(last.size() - 1).offset + last.get(last.size() - 1).length);
        int firstSector = from / SECTOR;
        int sectors = (to - 1) / SECTOR - firstSector + 1;
        List<BitSet> states = new ArrayList<>();
        for (int s = 0; s < sectors; s++) {
            BitSet one = new BitSet();
            one.set(s);
            states.add(one);
        }
        for (int i = 0; i < RANDOM_SUBSETS; i++) {
            BitSet some = new BitSet();
            while (some.isEmpty()) {
                for (int s = 0; s < sectors; s++) if (rnd.nextBoolean()) some.set(s);
            }
            states.add(some);
        }
        for (int n = 0; n < states.size(); n++) {
            BitSet lost = states.get(n);
            Path crashed = copy(written, root.resolve("lost-" + n));
            int firstLost = Integer.MAX_VALUE; // the first byte of the range a lost sector held
            for (int s = lost.nextSetBit(0); s >= 0; s = lost.nextSetBit(s + 1)) {
                int start = Math.max(from, (firstSector + s) * SECTOR);
                int end = Math.min(to, (firstSector + s + 1) * SECTOR);
                WalTestSupport.overwrite(WalTestSupport.segmentFile(crashed, 0), start, new byte[end - start]);
                firstLost = Math.min(firstLost, start);
            }
            int kept = 0; // the last commit's records before the first one a lost sector touches
            while (kept < last.size() && last.get(kept).offset + last.get(kept).length <= firstLost) kept++;
            // what is left of the rest is a torn tail, unless the sectors lost take all of it (then it reads as the end)
            boolean torn = kept < last.size() && !allZero(WalTestSupport.readBytes(WalTestSupport.segmentFile(crashed, 0),
                    last.get(kept).offset, to - last.get(kept).offset));
            String state = "sectors " + lost + " of [" + from + ", " + to + ") lost";
            assertVerifySeesATornTailOnly(crashed, state, torn);
            for (WalSyncMode mode : WalSyncMode.values()) {
                assertReopens(copy(crashed, root.resolve("lost-" + n + "-" + mode)), mode, earlier, last.subList(0, kept),
                        torn, state + ", opened under " + mode);
            }
        }
    }

    private static boolean allZero(byte[] b) {
        for (byte x : b) if (x != 0) return false;
        return true;
    }

    private static int offsetOf(long lsn) {
        return WalSegmentDescriptor.offset(lsn, WalTestSupport.SEGMENT_SIZE);
    }

    private static Path copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (var files = Files.list(from)) {
            for (Path f : files.toList()) Files.copy(f, to.resolve(f.getFileName()));
        }
        return to;
    }

    private static void assertVerifySeesATornTailOnly(Path dir, String state, boolean torn) throws IOException {
        List<String> damage = new ArrayList<>();
        WalFileCheck.Result r = WalFileCheck.check(FileIOFactory.standard(), dir, WalTestSupport.SEGMENT_SIZE,
                WalSyncMode.LOG_ONLY, (file, offset, what) -> damage.add(file.getFileName() + " @" + offset + ": " + what));
        assertEquals(List.of(), damage, state + ": verify finds no damage");
        assertEquals(torn, r.tornTail() != null, state + ": verify's torn tail " + r.tornTail());
    }

    /**
     * Opens {@code dir} under {@code mode}: the earlier commits' records whole, then exactly {@code kept}, nothing after;
     * a tail cut when {@code torn}.
     */
    private static void assertReopens(Path dir, WalSyncMode mode, List<Written> earlier, List<Written> kept, boolean torn,
                                      String state) {
        Duration flush = mode == WalSyncMode.BACKGROUND ? Duration.ofSeconds(1) : null;
        WalOpenScan scan = WalOpenScan.run(FileIOFactory.standard(), dir, WalTestSupport.SEGMENT_SIZE, mode, -1, false);
        try (Wal reopened = Wal.open(scan, flush)) {
            List<WalTestSupport.Rec> read = WalTestSupport.readAll(reopened, reopened.firstLsn());
            List<Written> expected = new ArrayList<>(earlier);
            expected.addAll(kept);
            assertEquals(expected.size(), read.size(), state + ": records read");
            for (int i = 0; i < read.size(); i++) {
                assertArrayEquals(expected.get(i).payload, read.get(i).payload(), state + ", record " + i);
            }
            assertEquals(torn, scan.tailCut() != null, state + ": the torn part is cut, " + scan.tailCut());
        }
    }
}
