package dev.varve.checkpoint;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.spi.LoggedValue;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The physical WAL records round trip: an image as each codec writes it (whole, without its unused middle, compressed), a delta, a rebuild of a split's pages,
 * each replayed into a second page memory gives the same page bytes (so the same checksum); and the page log's choice
 * among them, over random inserts, removes, splits and compactions across checkpoint marks, replays from the last
 * mark (as recovery does, without the pages' earlier contents) to exactly the pages the writer has.
 */
@Timeout(120)
class PhysicalRecordsTest {
    private static final int PAGE = 4096;
    private static final int FRAMES = 1280;
    private static final int FILE = PageId.fileId(3, 1);
    /** Where a test's logical record holds the cell it logs. */
    private static final int LOGGED_AT = 13;

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) open.get(i).close();
    }

    private PageMemory memory(String name) {
        PageStore store = new PageStore(FileIOFactory.standard(), dir.resolve(name), PAGE);
        PageMemory m = new PageMemory(store, (long) FRAMES * PAGE, 16L * PAGE);
        open.add(store);
        open.add(m);
        return m;
    }

    private static long id(int index) {
        return PageId.of(FILE, index);
    }

    private static ByteBuffer buffer() {
        return ByteBuffer.allocateDirect(PAGE * 2 + 64).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] bytes(PageMemory m, long pageId) {
        Page p = m.acquireRead(pageId);
        try {
            return p.getBytes(0, PAGE);
        } finally {
            m.releaseRead(p);
        }
    }

    /** The page's CRC as its file would store it (computed over the whole page, unused middle included). */
    private static int checksum(byte[] page) {
        ByteBuffer b = ByteBuffer.allocateDirect(PAGE).put(0, page);
        PageChecksum.stamp(b, 0, PAGE);
        return PageChecksum.stored(b, 0);
    }

    private static void replay(ByteBuffer record, int type, PageMemory into) {
        PhysicalRecords.apply(type, record, into, lsn -> {
            throw new IllegalStateException("no WAL record " + lsn);
        });
    }

    /** A new slotted page of random cells, filled until fewer than {@code keepFree} bytes are left; held write-latched. */
    private static Page filled(PageMemory m, int index, long seed, int keepFree) {
        SplittableRandom r = new SplittableRandom(seed);
        Page p = m.acquireNew(id(index));
        SlottedTestPage.init(p);
        while (SlottedTestPage.free(p) >= keepFree && SlottedTestPage.insert(p, r.nextInt(SlottedTestPage.count(p) + 1), cell(r, 100 + r.nextInt(200)))) {
            // next cell
        }
        return p;
    }

    /** Encodes {@code p}'s image as {@code codec} says, checks its type is {@code type}, and returns the record. */
    private static ByteBuffer image(Page p, long unusedRange, PageCodec codec, int type) {
        ByteBuffer out = buffer();
        assertEquals(type, PhysicalRecords.encodeImage(p, unusedRange, codec, out, buffer()), codec + " image type");
        return out;
    }

    /**
     * Each {@code recoveryCompression} writes its own image: the whole page, the page without its unused middle, and
     * that compressed — or, for bytes that do not compress, left uncompressed. Each restores every byte, so the
     * checksum, also from a heap payload (a shipped record).
     */
    @Test
    void imagesOfEachCodecRestoreEveryByteAndTheChecksum() {
        PageMemory writer = memory("w");
        PageMemory reader = memory("r");
        Page p = filled(writer, 1, 7, 1400);
        try {
            long range = SlottedTestPage.unusedRange(p);
            int unused = SlottedTestPage.cellStart(p) - SlottedTestPage.slotsEnd(p);
            assertTrue(unused >= 1000, "the test page has a gap to leave out");
            ByteBuffer whole = image(p, range, PageCodec.DISABLED, RecordTypes.PAGE_IMAGE);
            assertEquals(8 + PAGE, whole.remaining());
            ByteBuffer skip = image(p, range, PageCodec.SKIP_GARBAGE, RecordTypes.PAGE_IMAGE_SKIP_GARBAGE);
            assertEquals(PhysicalRecords.imageBytes(p, range), skip.remaining());
            assertEquals(8 + 8 + PAGE - unused, skip.remaining());
            ByteBuffer snappy = image(p, range, PageCodec.SNAPPY, RecordTypes.PAGE_IMAGE_SNAPPY);
            assertTrue(snappy.remaining() < skip.remaining() * 3 / 4, "cells of letters compress: " + snappy.remaining() + " of " + skip.remaining());
            ByteBuffer heap = ByteBuffer.allocate(snappy.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(0, snappy, 0, snappy.remaining());
            for (ByteBuffer rec : new ByteBuffer[] {whole, skip, snappy, heap}) {
                int type = rec == whole ? RecordTypes.PAGE_IMAGE : rec == skip ? RecordTypes.PAGE_IMAGE_SKIP_GARBAGE : RecordTypes.PAGE_IMAGE_SNAPPY;
                reader.releaseWrite(reader.acquireNew(id(1))); // zeroed between replays
                replay(rec, type, reader);
                assertArrayEquals(p.getBytes(0, PAGE), bytes(reader, id(1)), "replay of type " + type);
            }
        } finally {
            writer.releaseWrite(p);
        }
        byte[] written = bytes(writer, id(1));
        assertEquals(checksum(written), checksum(bytes(reader, id(1))));

        Page noise = writer.acquireNew(id(7));
        try {
            for (int i = PageHeader.SIZE; i < PAGE; i += 8) noise.putLong(i, new SplittableRandom(i).nextLong()); // the header keeps its page id
            ByteBuffer kept = image(noise, 0, PageCodec.SNAPPY, RecordTypes.PAGE_IMAGE_SKIP_GARBAGE);
            assertEquals(8 + 8 + PAGE, kept.remaining(), "random bytes stay uncompressed, with an empty left-out range");
            replay(kept, RecordTypes.PAGE_IMAGE_SKIP_GARBAGE, reader);
        } finally {
            writer.releaseWrite(noise);
        }
        assertArrayEquals(bytes(writer, id(7)), bytes(reader, id(7)));
    }

    @Test
    void deltaRangesStartAndEndAtChangedBytes() {
        PageMemory writer = memory("w");
        PageMemory reader = memory("r");
        Page p = writer.acquireNew(id(2));
        ByteBuffer before = ByteBuffer.allocateDirect(PAGE).order(ByteOrder.LITTLE_ENDIAN);
        try {
            p.putLong(100, 0x1122334455667788L);
            replay(image(p, 0, PageCodec.SKIP_GARBAGE, RecordTypes.PAGE_IMAGE), RecordTypes.PAGE_IMAGE, reader);
            p.copyTo(before, 0);
            p.putByte(203, 9); // one byte inside a word
            p.putByte(1000, 1);
            p.putByte(1005, 2); // same range as 1000: closer than 16 bytes
            ByteBuffer delta = PhysicalRecords.encodeDelta(p, p.buffer().duplicate(), before, buffer());
            assertNotNull(delta);
            assertEquals(8 + 2 + (4 + 1) + (4 + 6), delta.remaining(), "ranges [203, 204) and [1000, 1006)");
            replay(delta, RecordTypes.PAGE_DELTA, reader);
            p.copyTo(before, 0);
            assertNull(PhysicalRecords.encodeDelta(p, p.buffer().duplicate(), before, buffer()), "nothing changed");
        } finally {
            writer.releaseWrite(p);
        }
        assertArrayEquals(bytes(writer, id(2)), bytes(reader, id(2)));
    }

    @Test
    void rebuildOfASplitCopiesCellsFromTheFullPage() {
        PageMemory writer = memory("w");
        PageMemory reader = memory("r");
        Page left = filled(writer, 3, 11, 0);
        ByteBuffer before = ByteBuffer.allocateDirect(PAGE).order(ByteOrder.LITTLE_ENDIAN);
        try {
            replay(image(left, SlottedTestPage.unusedRange(left), PageCodec.SKIP_GARBAGE, RecordTypes.PAGE_IMAGE_SKIP_GARBAGE),
                    RecordTypes.PAGE_IMAGE_SKIP_GARBAGE, reader);
            left.copyTo(before, 0);
            Page right = writer.acquireNew(id(4));
            try {
                SlottedTestPage.split(left, right);
                PageRebuild rebuild = new PageRebuild(PAGE);
                ByteBuffer fresh = rebuild.encode(right, null, left.pageId(), before, buffer(), PAGE);
                assertNotNull(fresh);
                assertTrue(fresh.remaining() < 400, "a new page of moved cells takes " + fresh.remaining() + " bytes");
                replay(fresh, RecordTypes.PAGE_REBUILD, reader); // before the full page's own record, as the log writes them
                ByteBuffer self = rebuild.encode(left, before, left.pageId(), before, buffer(), PAGE);
                assertNotNull(self);
                assertTrue(self.remaining() < 400, "a repacked page takes " + self.remaining() + " bytes");
                assertNull(rebuild.encode(left, before, left.pageId(), before, buffer(), self.remaining() - 1), "over the limit");
                replay(self, RecordTypes.PAGE_REBUILD, reader);
            } finally {
                writer.releaseWrite(right);
            }
        } finally {
            writer.releaseWrite(left);
        }
        for (int i = 3; i <= 4; i++) {
            byte[] written = bytes(writer, id(i));
            assertArrayEquals(written, bytes(reader, id(i)), "page " + i);
            assertEquals(checksum(written), checksum(bytes(reader, id(i))));
        }
    }

    @Test
    void recordsThatDoNotFitThePageAreRefused() {
        PageMemory reader = memory("r");
        ByteBuffer image = ByteBuffer.allocate(8 + 8 + 10).order(ByteOrder.LITTLE_ENDIAN).putLong(id(5)).putInt(100).putInt(50).flip();
        assertThrows(IllegalStateException.class, () -> replay(image, RecordTypes.PAGE_IMAGE_SKIP_GARBAGE, reader));
        ByteBuffer notSnappy = ByteBuffer.allocate(8 + 6).order(ByteOrder.LITTLE_ENDIAN).putLong(id(5)).putShort((short) -1).putInt(-1).flip();
        assertThrows(IllegalStateException.class, () -> replay(notSnappy, RecordTypes.PAGE_IMAGE_SNAPPY, reader));
        reader.releaseWrite(reader.acquireNew(id(6))); // the source exists: only the op is wrong
        ByteBuffer rebuild = ByteBuffer.allocate(PageRebuild.HEADER + 6).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(id(5)).putLong(id(6)).put((byte) 1).putShort((short) 1)
                .putShort((short) 4000).putShort((short) 200).putShort((short) PageRebuild.ZEROS).flip();
        assertThrows(IllegalStateException.class, () -> replay(rebuild, RecordTypes.PAGE_REBUILD, reader));
        ByteBuffer itself = ByteBuffer.allocate(PageRebuild.HEADER).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(id(5)).putLong(id(5)).put((byte) 1).putShort((short) 0).flip();
        assertThrows(IllegalStateException.class, () -> replay(itself, RecordTypes.PAGE_REBUILD, reader));
        ByteBuffer logged = ByteBuffer.allocate(PageRebuild.HEADER + 6 + 12).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(id(6)).putLong(id(6)).put((byte) 0).putShort((short) 1)
                .putShort((short) 100).putShort((short) 40).putShort((short) PageRebuild.LOGGED).putLong(77).putInt(0).flip();
        assertThrows(IllegalStateException.class, () -> replay(logged, RecordTypes.PAGE_REBUILD, reader), "no record 77");
        ByteBuffer shortRecord = ByteBuffer.allocate(39);
        assertThrows(IllegalStateException.class, () -> PhysicalRecords.apply(RecordTypes.PAGE_REBUILD, logged, reader, lsn -> shortRecord),
                "40 bytes from a 39-byte record");
    }

    /**
     * The page log over random inserts, removes, splits and compactions with checkpoint marks in between: replaying the
     * records after the last mark into an empty page memory gives every page changed since then byte for byte. Half the
     * inserts come after a logical record holding the cell, as the engine's puts do, so their rebuilds copy it from there.
     */
    @ParameterizedTest
    @EnumSource(PageCodec.class)
    void replayFromAMarkRestoresEveryChangedPage(PageCodec codec) {
        PageMemory writer = memory("w");
        Wal wal = Wal.open(dir.resolve("wal"), FileIOFactory.standard(), 8L << 20, WalSyncMode.LOG_ONLY, Duration.ofSeconds(1));
        open.add(wal);
        PhysicalPageLog log = new PhysicalPageLog(wal, PAGE, SlottedTestPage::unusedRange, codec);
        writer.addWriteHook(log);
        log.enabled(true);
        SplittableRandom r = new SplittableRandom(2026);
        int pages = 1;
        Page first = writer.acquireNew(id(0));
        try {
            SlottedTestPage.init(first);
        } finally {
            writer.releaseWrite(first);
        }
        long markLsn = 0;
        for (int op = 0; op < 6_000; op++) {
            if (op % 1_500 == 0) {
                log.nextGeneration();
                markLsn = wal.position();
            }
            int index = r.nextInt(pages);
            byte[] cell = cell(r, 100 + r.nextInt(200));
            if (r.nextBoolean()) { // a logical record with the cell at LOGGED_AT, appended before its change like the engine's
                ByteBuffer logical = ByteBuffer.allocateDirect(LOGGED_AT + cell.length).order(ByteOrder.LITTLE_ENDIAN).put(LOGGED_AT, cell);
                LoggedValue.record(wal.append(RecordTypes.DATA_BATCH, logical), logical);
                LoggedValue.value(LOGGED_AT, cell.length);
            }
            Page p = writer.acquireWrite(id(index));
            try {
                int action = r.nextInt(10);
                if (action == 0 && SlottedTestPage.count(p) > 0) {
                    SlottedTestPage.remove(p, r.nextInt(SlottedTestPage.count(p)));
                } else if (action == 1) {
                    SlottedTestPage.compact(p);
                } else if (!SlottedTestPage.insert(p, r.nextInt(SlottedTestPage.count(p) + 1), cell)) {
                    Page right = writer.acquireNew(id(pages++));
                    try {
                        SlottedTestPage.split(p, right);
                    } finally {
                        writer.releaseWrite(right);
                    }
                }
            } finally {
                writer.releaseWrite(p);
                LoggedValue.clear();
            }
        }
        PageMemory reader = memory("r");
        Map<Integer, Integer> types = new HashMap<>();
        List<Long> changed = new ArrayList<>();
        Map<Long, ByteBuffer> logical = new HashMap<>();
        int[] copiedFromLogical = {0};
        try (WalReader rd = wal.read(markLsn)) {
            while (rd.next()) {
                types.merge(rd.type(), 1, Integer::sum);
                if (rd.type() == RecordTypes.DATA_BATCH) {
                    logical.put(rd.lsn(), ByteBuffer.allocate(rd.payload().remaining()).put(0, rd.payload(), 0, rd.payload().remaining()));
                    continue;
                }
                changed.add(rd.payload().getLong(0));
                PhysicalRecords.apply(rd.type(), rd.payload(), reader, lsn -> {
                    copiedFromLogical[0]++;
                    return logical.get(lsn);
                });
            }
        }
        assertTrue(copiedFromLogical[0] > 200, "rebuilds copied " + copiedFromLogical[0] + " values from logical records");
        int imageType = codec == PageCodec.DISABLED ? RecordTypes.PAGE_IMAGE
                : codec == PageCodec.SKIP_GARBAGE ? RecordTypes.PAGE_IMAGE_SKIP_GARBAGE : RecordTypes.PAGE_IMAGE_SNAPPY;
        for (int type : new int[] {imageType, RecordTypes.PAGE_DELTA, RecordTypes.PAGE_REBUILD})
            assertTrue(types.getOrDefault(type, 0) > 0, "records of type " + type + " written: " + types);
        for (long pageId : changed) {
            byte[] written = bytes(writer, pageId);
            assertArrayEquals(written, bytes(reader, pageId), "page " + PageId.toString(pageId));
        }
    }

    /** A cell of words from a 64-word vocabulary (so that a page compresses, as records of real applications do). */
    private static byte[] cell(SplittableRandom r, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; ) {
            long word = new SplittableRandom(r.nextInt(64)).nextLong();
            for (int j = 0; j < 6 && i < length; j++, i++) b[i] = (byte) ('a' + Math.floorMod(word >> (5 * j), 26));
            if (i < length) b[i++] = ' ';
        }
        b[0] = (byte) r.nextInt();
        return b;
    }

    /**
     * A slotted page like the B+tree's (which this module cannot see): slot array growing up from {@link #SLOTS},
     * cells {@code length (2) | bytes} growing down from the end, the gap between them kept zero, removed cells
     * zeroed.
     */
    private static final class SlottedTestPage {
        static final int COUNT = PageHeader.SIZE;
        static final int CELL_START = PageHeader.SIZE + 2;
        static final int SLOTS = PageHeader.SIZE + 8;

        static void init(Page p) {
            p.zero(PageHeader.SIZE, PAGE - PageHeader.SIZE);
            p.type(PageHeader.TYPE_LEAF);
            p.putShort(CELL_START, PAGE);
        }

        static int count(Page p) {
            return p.getShort(COUNT);
        }

        static int cellStart(Page p) {
            return p.getShort(CELL_START);
        }

        static int slotsEnd(Page p) {
            return SLOTS + 2 * count(p);
        }

        static int free(Page p) {
            return cellStart(p) - slotsEnd(p);
        }

        static long unusedRange(Page p) {
            return slotsEnd(p) < cellStart(p) ? ((long) slotsEnd(p) << 32) | cellStart(p) : 0;
        }

        static boolean insert(Page p, int pos, byte[] cell) {
            int bytes = 2 + cell.length;
            if (free(p) < bytes + 2) return false;
            int offset = cellStart(p) - bytes;
            p.putShort(offset, cell.length);
            p.putBytes(offset + 2, cell, 0, cell.length);
            int slot = SLOTS + 2 * pos;
            p.move(slot, slot + 2, 2 * (count(p) - pos));
            p.putShort(slot, offset);
            p.putShort(COUNT, count(p) + 1);
            p.putShort(CELL_START, offset);
            return true;
        }

        static void remove(Page p, int pos) {
            int offset = p.getShort(SLOTS + 2 * pos);
            int bytes = 2 + p.getShort(offset);
            p.zero(offset, bytes);
            if (offset == cellStart(p)) p.putShort(CELL_START, offset + bytes);
            int slot = SLOTS + 2 * pos;
            p.move(slot + 2, slot, 2 * (count(p) - pos - 1));
            p.zero(slotsEnd(p) - 2, 2);
            p.putShort(COUNT, count(p) - 1);
        }

        static byte[][] cells(Page p) {
            byte[][] cells = new byte[count(p)][];
            for (int i = 0; i < cells.length; i++) {
                int offset = p.getShort(SLOTS + 2 * i);
                cells[i] = p.getBytes(offset + 2, p.getShort(offset));
            }
            return cells;
        }

        /** Packs the cells against the end in slot order. */
        static void compact(Page p) {
            byte[][] cells = cells(p);
            init(p);
            for (byte[] c : cells) insert(p, count(p), c);
        }

        /** Moves the upper half of {@code left}'s cells to the new page {@code right}; both come out packed. */
        static void split(Page left, Page right) {
            byte[][] cells = cells(left);
            init(left);
            init(right);
            for (int i = 0; i < cells.length; i++) {
                Page target = i < cells.length / 2 ? left : right;
                insert(target, count(target), cells[i]);
            }
        }
    }
}
