package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * The slotted layout shared by leaf and inner pages: a slot array of cell offsets after the fixed fields, growing
 * up, in key order; cells packed from the page end, growing down. The gap between them is always zero (so the
 * checkpoint may leave it out, see {@link PageLayout#unusedRange}); removed cells are zeroed and counted as garbage
 * until a compaction packs the cells again.
 *
 * <pre>
 *  0        32      34          36        38         40       48
 * +--------+-------+-----------+---------+----------+--------+------------------+-- zero --+-----------------+
 * | header | count | cellStart | garbage | reserved | link   | slots u16[count] |   gap    | cells (grow down)|
 * +--------+-------+-----------+---------+----------+--------+------------------+----------+-----------------+
 * </pre>
 * {@code cellStart} is the lowest cell offset ({@code pageSize} when empty); {@code garbage} the zeroed bytes of
 * removed cells inside [cellStart, pageSize); {@code link} belongs to the page kind (an inner page's first child).
 * Offsets are unsigned 16-bit, which bounds the page size to 32 KiB.
 */
final class SlottedPage {
    static final int COUNT_OFFSET = PageHeader.SIZE;
    static final int CELL_START_OFFSET = 34;
    static final int GARBAGE_OFFSET = 36;
    static final int RESERVED_OFFSET = 38;
    static final int LINK_OFFSET = 40;
    static final int SLOTS_OFFSET = 48;
    static final int SLOT_BYTES = 2;

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
     * Reserves a cell of {@code cellBytes} at position {@code pos} of the slot array and returns its offset; the
     * caller writes the cell. Compacts first when the gap is too small. The caller checked {@link #fits}.
     */
    static int insert(Page page, int pos, int cellBytes, Page scratch) {
        int count = count(page);
        assert pos >= 0 && pos <= count : "slot " + pos + " outside [0, " + count + "]";
        if (!fits(page, cellBytes)) throw new IllegalStateException("cell of " + cellBytes + " bytes does not fit");
        if (contiguousFree(page) < cellBytes + SLOT_BYTES) compact(page, scratch);
        int offset = cellStart(page) - cellBytes;
        int slotAt = SLOTS_OFFSET + SLOT_BYTES * pos;
        page.move(slotAt, slotAt + SLOT_BYTES, SLOT_BYTES * (count - pos));
        page.putShort(slotAt, offset);
        page.putShort(COUNT_OFFSET, count + 1);
        page.putShort(CELL_START_OFFSET, offset);
        return offset;
    }

    /** Reserves a cell after the last one (used when rebuilding pages in key order). */
    static int append(Page page, int cellBytes, Page scratch) {
        return insert(page, count(page), cellBytes, scratch);
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
     * Packs the cells against the page end in slot order, so the garbage joins the gap. Works from a copy in
     * {@code scratch} (a page of the same size) because cells may move in either direction.
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
