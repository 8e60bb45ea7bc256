package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.Page;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Diff entries of Pagelog format 4: (offset, length) ranges, the runs of the chunks the page's writes touched (8 bytes
 * of a 4 KiB page) — and segments of format 3, whose entries carry whole 64-byte chunks under a mask, still read.
 */
@Timeout(60)
class RangeEntryTest {
    private static final int PAGE = 4096;
    private static final int CHUNK = PAGE / Page.CHUNKS;
    private static final int V3_CHUNK = PAGE / PagelogDescriptor.MASK_ENTRY_CHUNKS;
    private static final long SEGMENT = 16L * PagelogDescriptor.recordBytes(PAGE) + PagelogDescriptor.HEADER_SIZE;
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final PagelogDescriptor.EntryLayout V3 = PagelogDescriptor.MASK_ENTRY;

    @TempDir
    Path dir;

    @Test
    void anEntryCarriesTheRunsOfTheTouchedChunksAndReadsBack() {
        Map<Long, byte[]> versions = new LinkedHashMap<>();
        Map<Long, byte[]> sealed = new LinkedHashMap<>();
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(1);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            long head = archive(log, versions, page, image, -1, -1, null);

            page[3 * 64 + 1] ^= 1;
            for (int b = 9 * 64 + 10; b < 9 * 64 + 13; b++) page[b] ^= (byte) 0xFF;
            long[] touched = or(DiffChainTest.chunks(3 * 64 + 1, 3 * 64 + 2), DiffChainTest.chunks(9 * 64 + 10, 9 * 64 + 13));
            long first = archive(log, versions, page, image, head, head, touched);
            assertEquals(PagelogDescriptor.rangeEntryBytes(2, 2 * CHUNK), entryBytes(log, first), "a chunk of 8 bytes around each change");

            byte[] value = new byte[100];
            new SplittableRandom(2).nextBytes(value);
            System.arraycopy(value, 0, page, 1000, value.length);
            long second = archive(log, versions, page, image, first, head, DiffChainTest.chunks(1000, 1100));
            assertEquals(PagelogDescriptor.rangeEntryBytes(1, 104), entryBytes(log, second), "a hundred bytes: one run of 13 chunks");

            log.force();
            for (long address : versions.keySet()) sealed.put(log.resolve(address), versions.get(address));
            assertReadsBack(log, sealed);
        }
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            assertReadsBack(log, sealed); // from the files alone
        }
    }

    @Test
    void adjacentTouchedChunksAcrossTheLongsOfTheMaskAreOneRange() {
        int[] ranges = PageDiff.rangesFor(PAGE);
        assertEquals(1, PageDiff.chunkRuns(DiffChainTest.chunks(500, 600), CHUNK, ranges));
        assertEquals(496, ranges[0]);
        assertEquals(104, ranges[1]);
        assertEquals(1, PageDiff.chunkRuns(Page.allChanged(), CHUNK, ranges));
        assertEquals(PAGE, ranges[1]);
        assertEquals(0, PageDiff.chunkRuns(new long[Page.MASK_LONGS], CHUNK, ranges));
    }

    @Test
    void chunkRunsAreTheRunsOfSetBitsOfAnyMask() {
        SplittableRandom random = new SplittableRandom(11);
        int[] ranges = PageDiff.rangesFor(PAGE);
        for (int round = 0; round < 2_000; round++) {
            long[] mask = new long[Page.MASK_LONGS];
            int density = random.nextInt(1, 9); // from a few bits to most of them, in runs that cross the longs
            for (int bit = 0; bit < Page.CHUNKS; bit++) if (random.nextInt(8) < density) mask[bit / 64] |= 1L << (bit % 64);
            if (round % 3 == 0) mask[random.nextInt(Page.MASK_LONGS)] = -1L;
            int n = PageDiff.chunkRuns(mask, CHUNK, ranges);
            int runs = 0;
            for (int bit = 0; bit < Page.CHUNKS; ) { // the reference: bit by bit
                if ((mask[bit / 64] >>> (bit % 64) & 1) == 0) {
                    bit++;
                    continue;
                }
                int end = bit;
                while (end < Page.CHUNKS && (mask[end / 64] >>> (end % 64) & 1) != 0) end++;
                assertEquals(bit * CHUNK, ranges[2 * runs], "start of run " + runs + " in round " + round);
                assertEquals((end - bit) * CHUNK, ranges[2 * runs + 1], "length of run " + runs + " in round " + round);
                runs++;
                bit = end;
            }
            assertEquals(runs, n, "runs in round " + round);
        }
    }

    @Test
    void segmentsOfFormat3AreReadAndTakeNoNewDiffs() throws IOException {
        byte[] v0 = randomPage(3);
        byte[] v1 = v0.clone();
        v1[2 * V3_CHUNK + 7] ^= 1;
        v1[9 * V3_CHUNK] ^= 1;
        writeVersion3Segment(v0, v1, 1L << 2 | 1L << 9);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            assertFalse(log.packsAllowed(), "diffs go to segments of the current format only");
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            byte[] read = new byte[PAGE];
            log.reader.read(0, 7, dst, 0);
            dst.get(0, read);
            assertArrayEquals(v0, read);
            long entry = PagelogDescriptor.entryAddress(1, PagelogDescriptor.PACK_HEADER_SIZE);
            log.reader.read(entry, 7, dst, 0);
            dst.get(0, read);
            assertArrayEquals(v1, read);
            assertEquals(0, log.reader.headOf(entry, 7));
        }
    }

    /**
     * An archive of format 3 whose archiver moved on to a segment of the current format, cut back by recovery into the
     * format-3 segment: the diffs written after the cut must not go there (its entries are read as format 3's), or a
     * snapshot captured after the cut fails its read.
     */
    @Test
    void aRecoveryCutBackIntoASegmentOfFormat3TakesNoNewDiffs() throws IOException {
        byte[] v0 = randomPage(3);
        byte[] v1 = v0.clone();
        v1[2 * V3_CHUNK + 7] ^= 1;
        writeVersion3Segment(v0, v1, 1L << 2);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            for (int r = 2; r <= 16; r++) log.append(100 + r, 2, 3, image, 0); // fills segment 0 and starts segment 1, of the current format
            log.force();
            assertTrue(log.packsAllowed(), "the segment being written is of the current format");
            log.truncate(2); // the checkpoint's mark lay in segment 0: the records after it are cut, segment 1 with them
            Map<Long, byte[]> versions = new LinkedHashMap<>();
            byte[] page = randomPage(4);
            long head = archive(log, versions, page, image, -1, -1, null);
            page[5 * CHUNK] ^= 1;
            image.put(0, page);
            long next = log.packsAllowed() // as the capture path asks before it archives a pre-state as a diff
                    ? log.appendDiff(7, 3, 4, head, head, DiffChainTest.chunks(5 * CHUNK, 5 * CHUNK + 1), image, 0)
                    : log.append(7, 3, 4, image, 0);
            versions.put(next, page.clone());
            log.force();
            Map<Long, byte[]> sealed = new LinkedHashMap<>();
            for (long address : versions.keySet()) sealed.put(log.resolve(address), versions.get(address));
            assertReadsBack(log, sealed);
            assertFalse(log.packsAllowed(), "the segment written next is of format 3 again");
        }
    }

    /** Segment 0 as format 3 wrote it: {@code v0} whole, then a pack of one entry, {@code v1} as the chunks of {@code mask}. */
    private void writeVersion3Segment(byte[] v0, byte[] v1, long mask) throws IOException {
        int record = PagelogDescriptor.recordBytes(PAGE);
        ByteBuffer seg = ByteBuffer.allocate(PagelogDescriptor.HEADER_SIZE + 2 * record).order(ByteOrder.LITTLE_ENDIAN);
        seg.put(PagelogDescriptor.header(PAGE, 0, 0, 0)).putInt(PagelogDescriptor.VERSION_OFFSET, 3)
                .putInt(PagelogDescriptor.HEADER_CRC_OFFSET, PagelogDescriptor.headerCrc(seg));
        CRC32C crc = new CRC32C();
        int at = PagelogDescriptor.HEADER_SIZE;
        seg.putLong(at + PagelogDescriptor.PAGE_ID_OFFSET, 7).putLong(at + PagelogDescriptor.HI_OFFSET, 1).put(at + PagelogDescriptor.IMAGE_OFFSET, v0);
        seg.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(seg, at, record, 3, crc));
        at += record;
        int body = at + PagelogDescriptor.IMAGE_OFFSET;
        int entry = body + PagelogDescriptor.PACK_HEADER_SIZE;
        int bytes = PagelogDescriptor.entryBytes(mask, V3_CHUNK);
        seg.putLong(at + PagelogDescriptor.PAGE_ID_OFFSET, PagelogDescriptor.NO_PAGE).putLong(at + PagelogDescriptor.HI_OFFSET, 2)
                .putLong(at + PagelogDescriptor.LO_OFFSET, 1).putInt(at + PagelogDescriptor.KIND_OFFSET, PagelogDescriptor.KIND_PACK);
        seg.putInt(body + PagelogDescriptor.PACK_COUNT_OFFSET, 1).putInt(body + PagelogDescriptor.PACK_USED_OFFSET, PagelogDescriptor.PACK_HEADER_SIZE + bytes);
        seg.putLong(entry + PagelogDescriptor.ENTRY_PAGE_ID_OFFSET, 7).putLong(entry + PagelogDescriptor.ENTRY_LO_OFFSET, 1)
                .putLong(entry + PagelogDescriptor.ENTRY_HI_OFFSET, 2).putLong(entry + V3.base(), 0)
                .putLong(entry + V3.head(), 0).putLong(entry + PagelogDescriptor.ENTRY_CHANGED_OFFSET, mask);
        crc.reset();
        crc.update(v1);
        seg.putInt(entry + V3.pageCrc(), (int) crc.getValue());
        int to = entry + V3.headerSize();
        for (long m = mask; m != 0; m &= m - 1, to += V3_CHUNK) seg.put(to, v1, Long.numberOfTrailingZeros(m) * V3_CHUNK, V3_CHUNK);
        seg.putInt(entry + V3.crc(), PagelogDescriptor.entryCrc(seg, entry, bytes, V3, crc));
        seg.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(seg, at, record, 3, crc));
        Files.write(dir.resolve(PagelogDescriptor.fileName(0)), seg.array());
    }

    /** Archives {@code page} as page 7: whole when {@code base} is -1, else as a diff; returns its (provisional) address. */
    private static long archive(Pagelog log, Map<Long, byte[]> versions, byte[] page, ByteBuffer image, long base, long head, long[] changed) {
        image.put(0, page);
        long address = base < 0 ? log.append(7, 0, 1, image, 0) : log.appendDiff(7, versions.size(), versions.size() + 1, base, head, changed, image, 0);
        assertTrue(base < 0 || Pagelog.isDiff(address), "stored as a diff");
        versions.put(address, page.clone());
        return address;
    }

    /** The size of the entry at (provisional) {@code address}, once written. */
    private static int entryBytes(Pagelog log, long address) {
        log.writeStaged();
        ByteBuffer e = ByteBuffer.allocate(PagelogDescriptor.RANGE_ENTRY.headerSize()).order(ByteOrder.LITTLE_ENDIAN);
        log.reader.readEntryBytes(log.resolve(address), e);
        return PagelogDescriptor.entryBytes(e, 0, PagelogDescriptor.VERSION, V3_CHUNK);
    }

    private static void assertReadsBack(Pagelog log, Map<Long, byte[]> versions) {
        ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
        for (Map.Entry<Long, byte[]> v : versions.entrySet()) {
            log.reader.read(v.getKey(), 7, dst, 0);
            byte[] read = new byte[PAGE];
            dst.get(0, read);
            assertArrayEquals(v.getValue(), read, "version at " + Long.toHexString(v.getKey()));
        }
    }

    private static long[] or(long[] a, long[] b) {
        long[] m = a.clone();
        for (int i = 0; i < m.length; i++) m[i] |= b[i];
        return m;
    }

    private static byte[] randomPage(long seed) {
        byte[] b = new byte[PAGE];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }
}
