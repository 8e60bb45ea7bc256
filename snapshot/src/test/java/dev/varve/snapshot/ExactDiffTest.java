package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
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
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Diff entries of Pagelog format 4: the bytes that differ from the base inside the chunks the page's writes touched
 * when the volume still keeps the base's image ({@link DiffBases}), those whole chunks when it does not — and segments of format 3, whose entries carry whole
 * chunks under a mask, still read.
 */
@Timeout(60)
class ExactDiffTest {
    private static final int PAGE = 4096;
    private static final int CHUNK = PAGE / Page.CHUNKS;
    private static final long SEGMENT = 16L * PagelogDescriptor.recordBytes(PAGE) + PagelogDescriptor.HEADER_SIZE;
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final PagelogDescriptor.EntryLayout V3 = PagelogDescriptor.MASK_ENTRY;

    @TempDir
    Path dir;

    @Test
    void aDiffAgainstAKeptBaseCarriesOnlyTheBytesThatDifferInTheTouchedChunks() {
        Map<Long, byte[]> versions = new LinkedHashMap<>();
        Map<Long, byte[]> sealed = new LinkedHashMap<>();
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(1);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            long head = archive(log, versions, page, image, -1, -1, 0);

            page[2 * CHUNK + 5] ^= 1;
            long first = archive(log, versions, page, image, head, head, 1L << 2); // the volume's first diff: nothing kept yet
            assertEquals(PagelogDescriptor.rangeEntryBytes(1, CHUNK), entryBytes(log, first), "the marked chunk, whole");

            page[3 * CHUNK + 1] ^= 1;
            for (int b = 9 * CHUNK + 10; b < 9 * CHUNK + 13; b++) page[b] ^= (byte) 0xFF;
            long second = archive(log, versions, page, image, first, head, 1L << 3 | 1L << 9 | 1L << 40); // chunk 40 touched, unchanged
            assertEquals(PagelogDescriptor.rangeEntryBytes(2, 1 + 3), entryBytes(log, second), "one byte and three bytes");

            log.writeStaged(); // the pack is sealed: the base is presented by its sealed address now
            page[PAGE - 1] ^= 1;
            long third = archive(log, versions, page, image, log.resolve(second), head, 1L << 63);
            assertEquals(PagelogDescriptor.rangeEntryBytes(1, 1), entryBytes(log, third));
            log.force();
            for (long address : versions.keySet().toArray(new Long[0])) sealed.put(log.resolve(address), versions.get(address));
            assertReadsBack(log, sealed);
        }
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            assertReadsBack(log, sealed); // from the files alone
        }
    }

    @Test
    void withoutTheBaseKeptTheTouchedChunksAreTakenWholeAndAChangeTheTrackingMissedFailsTheChecksum() {
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(2);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            image.put(0, page);
            long head = log.append(7, 0, 1, image, 0);
            page[2 * CHUNK] ^= 1;
            image.put(0, page);
            long kept = log.appendDiff(7, 1, 2, head, head, 1L << 2, image, 0); // keeps this version
            page[5] ^= 1; // chunk 0, not marked
            page[CHUNK * 3] ^= 1;
            image.put(0, page);
            long other = log.appendDiff(7, 2, 3, head, head, 1L << 3, image, 0); // a base other than the one kept: a miss
            log.force();
            long diff = log.resolve(other);
            assertEquals(PagelogDescriptor.rangeEntryBytes(1, CHUNK), entryBytes(log, diff), "chunk 3 whole, chunk 0 left out");
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.read(diff, 7, ByteBuffer.allocateDirect(PAGE), 0));
            assertTrue(e.getMessage().contains("fails its checksum"), e.getMessage());
            log.read(log.resolve(kept), 7, ByteBuffer.allocateDirect(PAGE), 0); // its sibling reads
        }
    }

    @Test
    void withTheBaseKeptAChangeTheTrackingMissedStillFailsTheChecksum() {
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            byte[] page = randomPage(4);
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            image.put(0, page);
            long head = log.append(7, 0, 1, image, 0);
            page[2 * CHUNK] ^= 1;
            image.put(0, page);
            long first = log.appendDiff(7, 1, 2, head, head, 1L << 2, image, 0); // keeps this version
            page[CHUNK * 5] ^= 1; // not marked
            page[CHUNK * 6] ^= 1;
            image.put(0, page);
            long trimmed = log.appendDiff(7, 2, 3, first, head, 1L << 6, image, 0);
            log.force();
            assertEquals(PagelogDescriptor.rangeEntryBytes(1, 1), entryBytes(log, trimmed), "the one byte of chunk 6: the kept base was used");
            CorruptionException e = assertThrows(CorruptionException.class, () -> log.read(log.resolve(trimmed), 7, ByteBuffer.allocateDirect(PAGE), 0));
            assertTrue(e.getMessage().contains("fails its checksum"), e.getMessage());
        }
    }

    @Test
    void aVolumeKeepsOneImagePerPageAndForgetsThemWhenCut() {
        DiffBases bases = new DiffBases(2, PAGE);
        ByteBuffer a = ByteBuffer.allocateDirect(PAGE);
        int[] ranges = PageDiff.rangesFor(PAGE);
        assertEquals(-1, bases.diff(1, 10, Page.ALL_CHANGED, a, 0, ranges), "nothing kept");
        bases.keep(1, 10, a, 0);
        bases.keep(1, 11, a, 0); // the page's next version replaces it
        assertEquals(-1, bases.diff(1, 10, Page.ALL_CHANGED, a, 0, ranges), "an older version is not the one kept");
        assertEquals(0, bases.diff(1, 11, Page.ALL_CHANGED, a, 0, ranges));
        bases.keep(2, 20, a, 0);
        bases.keep(3, 30, a, 0); // a third page pushes one out
        int kept = 0;
        for (long[] v : new long[][] {{1, 11}, {2, 20}, {3, 30}}) if (bases.diff(v[0], v[1], Page.ALL_CHANGED, a, 0, ranges) >= 0) kept++;
        assertEquals(2, kept);
        bases.clear();
        assertFalse(bases.inUse());
        assertEquals(-1, bases.diff(3, 30, Page.ALL_CHANGED, a, 0, ranges));
    }

    @Test
    void segmentsOfFormat3AreReadAndTakeNoNewDiffs() throws IOException {
        byte[] v0 = randomPage(3);
        byte[] v1 = v0.clone();
        v1[2 * CHUNK + 7] ^= 1;
        v1[9 * CHUNK] ^= 1;
        writeVersion3Segment(v0, v1, 1L << 2 | 1L << 9);
        try (Pagelog log = new Pagelog(IO, dir, PAGE, SEGMENT)) {
            assertFalse(log.packsAllowed(), "diffs go to segments of the current format only");
            ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
            byte[] read = new byte[PAGE];
            log.read(0, 7, dst, 0);
            dst.get(0, read);
            assertArrayEquals(v0, read);
            long entry = PagelogDescriptor.entryAddress(1, PagelogDescriptor.PACK_HEADER_SIZE);
            log.read(entry, 7, dst, 0);
            dst.get(0, read);
            assertArrayEquals(v1, read);
            assertEquals(0, log.headOf(entry, 7));
        }
    }

    /** Segment 0 as format 3 wrote it: {@code v0} whole, then a pack of one entry, {@code v1} as the chunks of {@code mask}. */
    private void writeVersion3Segment(byte[] v0, byte[] v1, long mask) throws IOException {
        int record = PagelogDescriptor.recordBytes(PAGE);
        ByteBuffer seg = ByteBuffer.allocate(PagelogDescriptor.HEADER_SIZE + 2 * record).order(ByteOrder.LITTLE_ENDIAN);
        seg.put(PagelogDescriptor.header(PAGE, 0)).putInt(PagelogDescriptor.VERSION_OFFSET, 3)
                .putInt(PagelogDescriptor.HEADER_CRC_OFFSET, PagelogDescriptor.headerCrc(seg));
        CRC32C crc = new CRC32C();
        int at = PagelogDescriptor.HEADER_SIZE;
        seg.putLong(at + PagelogDescriptor.PAGE_ID_OFFSET, 7).putLong(at + PagelogDescriptor.HI_OFFSET, 1).put(at + PagelogDescriptor.IMAGE_OFFSET, v0);
        seg.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(seg, at, record, 3, crc));
        at += record;
        int body = at + PagelogDescriptor.IMAGE_OFFSET;
        int entry = body + PagelogDescriptor.PACK_HEADER_SIZE;
        int bytes = PagelogDescriptor.entryBytes(mask, CHUNK);
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
        for (long m = mask; m != 0; m &= m - 1, to += CHUNK) seg.put(to, v1, Long.numberOfTrailingZeros(m) * CHUNK, CHUNK);
        seg.putInt(entry + V3.crc(), PagelogDescriptor.entryCrc(seg, entry, bytes, V3, crc));
        seg.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(seg, at, record, 3, crc));
        Files.write(dir.resolve(PagelogDescriptor.fileName(0)), seg.array());
    }

    /** Archives {@code page} as page 7: whole when {@code base} is -1, else as a diff; returns its (provisional) address. */
    private static long archive(Pagelog log, Map<Long, byte[]> versions, byte[] page, ByteBuffer image, long base, long head, long changed) {
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
        log.readEntryBytes(log.resolve(address), e);
        return PagelogDescriptor.entryBytes(e, 0, PagelogDescriptor.VERSION, CHUNK);
    }

    private static void assertReadsBack(Pagelog log, Map<Long, byte[]> versions) {
        ByteBuffer dst = ByteBuffer.allocateDirect(PAGE);
        for (Map.Entry<Long, byte[]> v : versions.entrySet()) {
            log.read(v.getKey(), 7, dst, 0);
            byte[] read = new byte[PAGE];
            dst.get(0, read);
            assertArrayEquals(v.getValue(), read, "version at " + Long.toHexString(v.getKey()));
        }
    }

    private static byte[] randomPage(long seed) {
        byte[] b = new byte[PAGE];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }
}
