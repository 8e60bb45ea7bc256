package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The slotted layout shared by leaf and inner pages: a slot array after the fixed fields, growing up, in key order;
 * cells packed from the page end, growing down. The gap between them is always zero (so the checkpoint may leave it
 * out, see {@link PageLayout#unusedRange}); removed cells are zeroed and counted as garbage until a compaction packs
 * the cells again.
 *
 * <pre>
 *  0        32      34          36        38         40       48
 * +--------+-------+-----------+---------+----------+--------+------------------+-- zero --+-----------------+
 * | header | count | cellStart | garbage | reserved | link   | slots [count]    |   gap    | cells (grow down)|
 * +--------+-------+-----------+---------+----------+--------+------------------+----------+-----------------+
 * slot:
 *  0        2
 * +--------+------------------------------------------------------------------+
 * | offset | key head: the cell key's first 8 bytes, zero-padded, as an        |
 * | u16    | unsigned big-endian number ({@link #keyHead})                      |
 * +--------+------------------------------------------------------------------+
 * </pre>
 * {@code cellStart} is the lowest cell offset ({@code pageSize} when empty); {@code garbage} the zeroed bytes of
 * removed cells inside [cellStart, pageSize); {@code link} belongs to the page kind (an inner page's first child).
 * Offsets are unsigned 16-bit, which bounds the page size to 32 KiB.
 *
 * <p>Why key heads: a search of a page that is not in the CPU cache pays a memory miss for every cell it compares,
 * and the cells of a page filled by random inserts lie in no order. With the key heads beside the offsets a search
 * reads the slot array (a few adjacent cache lines, scanned so that their misses overlap: {@link #headLowerBound})
 * and visits one cell, the one whose head equals the key's (a head only orders two keys when the heads differ; equal
 * heads need the whole keys). The cost is 8 bytes a cell.
 */
final class SlottedPage {
    static final int COUNT_OFFSET = PageHeader.SIZE;
    static final int CELL_START_OFFSET = 34;
    static final int GARBAGE_OFFSET = 36;
    static final int RESERVED_OFFSET = 38;
    static final int LINK_OFFSET = 40;
    static final int SLOTS_OFFSET = 48;
    static final int SLOT_BYTES = 10;
    /** Where a slot's key head starts, after its cell offset. */
    static final int HEAD_IN_SLOT = 2;
    /** Bytes of a key that its head holds. */
    static final int HEAD_BYTES = Long.BYTES;
    /** Slots in about one 64-byte cache line: the step of {@link #headLowerBound}. */
    private static final int SLOTS_PER_LINE = 6;
    private static final VarHandle ARRAY_LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private SlottedPage() {
    }

    /** Bytes available to slots and cells in an empty page. */
    static int usableBytes(int pageSize) {
        return pageSize - SLOTS_OFFSET;
    }

    /** Makes {@code page} an empty slotted page of {@code type}; erases its body. */
    static void init(Page page, int type) {
        page.zero(PageHeader.SIZE, page.size() - PageHeader.SIZE);
        page.type(type);
        page.putShort(CELL_START_OFFSET, page.size());
    }

    /** Empties {@code page}, keeping its type and nothing of its body. */
    static void reset(Page page) {
        init(page, page.type());
    }

    static int count(Page page) {
        return page.getShort(COUNT_OFFSET);
    }

    static int cellStart(Page page) {
        return page.getShort(CELL_START_OFFSET);
    }

    static int garbage(Page page) {
        return page.getShort(GARBAGE_OFFSET);
    }

    /** Offset of cell {@code i} (in key order). */
    static int slot(Page page, int i) {
        return page.getShort(SLOTS_OFFSET + SLOT_BYTES * i);
    }

    /** Key head of cell {@code i}: compare with {@link Long#compareUnsigned}. */
    static long head(Page page, int i) {
        return page.getLong(SLOTS_OFFSET + SLOT_BYTES * i + HEAD_IN_SLOT);
    }

    /**
     * The head of the first {@code length} bytes of {@code key}: its first 8 bytes (zero-padded when shorter) as an
     * unsigned big-endian number. When two heads differ, they order their keys as the keys order themselves.
     */
    static long keyHead(byte[] key, int length) {
        if (length >= HEAD_BYTES) return (long) ARRAY_LONG_BE.get(key, 0);
        long head = 0;
        for (int i = 0; i < length; i++) head |= (key[i] & 0xFFL) << (Long.SIZE - Byte.SIZE * (i + 1));
        return head;
    }

    /**
     * The first of the page's {@code count} slots whose head is not below {@code head} ({@code count} when none).
     * Scans rather than bisects: each step of a binary search reads where the last read said to, so on a page that
     * is not in the CPU cache it waits for one memory miss after another (three in the slot array of a leaf of 30
     * cells); the scan's reads do not depend on each other, so the CPU issues them together and their misses
     * overlap. It steps a cache line of slots at a time, then walks the last line.
     */
    static int headLowerBound(Page page, int count, long head) {
        int from = 0;
        while (from + SLOTS_PER_LINE <= count && Long.compareUnsigned(head(page, from + SLOTS_PER_LINE - 1), head) < 0)
            from += SLOTS_PER_LINE;
        while (from < count && Long.compareUnsigned(head(page, from), head) < 0) from++;
        return from;
    }

    /** The end of the run of slots from {@code from} whose head is {@code head}: those keys need comparing whole. */
    static int headRunEnd(Page page, int from, int count, long head) {
        while (from < count && head(page, from) == head) from++;
        return from;
    }

    /** End of the slot array: start of the gap. */
    static int slotsEnd(Page page) {
        return SLOTS_OFFSET + SLOT_BYTES * count(page);
    }

    /** Bytes of the gap between slots and cells. */
    static int contiguousFree(Page page) {
        return cellStart(page) - slotsEnd(page);
    }

    /** Bytes a compaction would make available. */
    static int freeBytes(Page page) {
        return contiguousFree(page) + garbage(page);
    }

    /** Bytes taken by live cells and their slots. */
    static int usedBytes(Page page) {
        return usableBytes(page.size()) - freeBytes(page);
    }

    /** True when a cell of {@code cellBytes} (plus its slot) fits, compaction allowed. */
    static boolean fits(Page page, int cellBytes) {
        return freeBytes(page) >= cellBytes + SLOT_BYTES;
    }

    /** Size of the cell at {@code offset}, by page kind. */
    static int cellSize(Page page, int offset) {
        return page.type() == PageHeader.TYPE_INNER ? InnerPage.cellSize(page, offset) : LeafPage.cellSize(page, offset);
    }

    /**
     * Reserves a cell of {@code cellBytes} at position {@code pos} of the slot array, for a key of {@code head}, and
     * returns its offset; the caller writes the cell. Compacts first when the gap is too small. The caller checked
     * {@link #fits}.
     */
    static int insert(Page page, int pos, int cellBytes, long head, Page scratch) {
        int count = count(page);
        assert pos >= 0 && pos <= count : "slot " + pos + " outside [0, " + count + "]";
        if (!fits(page, cellBytes)) throw new IllegalStateException("cell of " + cellBytes + " bytes does not fit");
        if (contiguousFree(page) < cellBytes + SLOT_BYTES) compact(page, scratch);
        int offset = cellStart(page) - cellBytes;
        int slotAt = SLOTS_OFFSET + SLOT_BYTES * pos;
        page.move(slotAt, slotAt + SLOT_BYTES, SLOT_BYTES * (count - pos));
        page.putShort(slotAt, offset);
        page.putLong(slotAt + HEAD_IN_SLOT, head);
        page.putShort(COUNT_OFFSET, count + 1);
        page.putShort(CELL_START_OFFSET, offset);
        return offset;
    }

    /** Reserves a cell after the last one (used when rebuilding pages in key order). */
    static int append(Page page, int cellBytes, long head, Page scratch) {
        return insert(page, count(page), cellBytes, head, scratch);
    }

    /** Appends a copy of cell {@code i} of {@code src} (its bytes and its head) to {@code dst}; returns its offset. */
    static int appendCopy(Page src, int i, Page dst, Page scratch) {
        int source = slot(src, i);
        int bytes = cellSize(src, source);
        int offset = append(dst, bytes, head(src, i), scratch);
        copy(src, source, dst, offset, bytes);
        return offset;
    }

    /** Removes cell {@code pos}: zeroes it and its slot, and counts its bytes as garbage. */
    static void remove(Page page, int pos) {
        int count = count(page);
        assert pos >= 0 && pos < count : "slot " + pos + " outside [0, " + count + ")";
        int offset = slot(page, pos);
        int size = cellSize(page, offset);
        page.zero(offset, size);
        if (offset == cellStart(page)) page.putShort(CELL_START_OFFSET, offset + size);
        else page.putShort(GARBAGE_OFFSET, garbage(page) + size);
        int slotAt = SLOTS_OFFSET + SLOT_BYTES * pos;
        page.move(slotAt + SLOT_BYTES, slotAt, SLOT_BYTES * (count - pos - 1));
        page.zero(SLOTS_OFFSET + SLOT_BYTES * (count - 1), SLOT_BYTES);
        page.putShort(COUNT_OFFSET, count - 1);
    }

    /**
     * Packs the cells against the page end in slot order, so the garbage joins the gap; the key heads stay. Works
     * from a copy in {@code scratch} (a page of the same size) because cells may move in either direction.
     */
    static void compact(Page page, Page scratch) {
        page.copyTo(scratch);
        int end = page.size();
        int count = count(page);
        for (int i = 0; i < count; i++) {
            int offset = slot(scratch, i);
            int cellBytes = cellSize(scratch, offset);
            end -= cellBytes;
            copy(scratch, offset, page, end, cellBytes);
            page.putShort(SLOTS_OFFSET + SLOT_BYTES * i, end);
        }
        int slotsEnd = SLOTS_OFFSET + SLOT_BYTES * count;
        page.zero(slotsEnd, end - slotsEnd);
        page.putShort(CELL_START_OFFSET, end);
        page.putShort(GARBAGE_OFFSET, 0);
    }

    /** Copies {@code length} bytes between two pages (cells moving during splits and merges). */
    static void copy(Page src, int srcOffset, Page dst, int dstOffset, int length) {
        assert srcOffset >= 0 && srcOffset + length <= src.size() && dstOffset >= 0 && dstOffset + length <= dst.size();
        dst.putBytes(dstOffset, src.buffer(), src.base() + srcOffset, length);
    }
}
