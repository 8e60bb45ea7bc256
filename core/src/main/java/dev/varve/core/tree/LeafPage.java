package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * Layout of a leaf ({@link PageHeader#TYPE_LEAF}): a {@link SlottedPage} whose cells hold the entries in key order.
 * The slotted page's link field is reserved (zero) in leaves: scans step to the next leaf through the parent path.
 *
 * <pre>
 * cell:
 *  0        2          6          6+keyLength
 * +--------+----------+----------+------------------------------------------------+
 * | keyLen | valueLen | key      | value [valueLen]   (inline)                     |
 * | u16    | i32      | [keyLen] | first overflow page id, 8 bytes   (overflowed)  |
 * +--------+----------+----------+------------------------------------------------+
 * </pre>
 * A value is inline when {@code keyLen + valueLen <= maxInlineBytes(pageSize)} or it is no longer than an overflow
 * page id (8 bytes); the rule alone decides, so the cell needs no flag. The threshold is a quarter of the usable page minus a slot and the cell header, so a leaf always
 * holds at least four inline cells.
 */
final class LeafPage {
    static final int KEY_LENGTH_OFFSET = 0;
    static final int VALUE_LENGTH_OFFSET = 2;
    static final int KEY_OFFSET = 6;
    static final int CELL_HEADER_BYTES = 6;
    static final int OVERFLOW_ID_BYTES = 8;

    private LeafPage() {
    }

    /** Largest {@code keyLen + valueLen} stored inline: 996 bytes at 4 KiB pages. */
    static int maxInlineBytes(int pageSize) {
        return SlottedPage.usableBytes(pageSize) / 4 - SlottedPage.SLOT_BYTES - CELL_HEADER_BYTES;
    }

    /** Values no longer than an overflow page id always stay inline: moving them out would save nothing. */
    static boolean isInline(int pageSize, int keyLength, int valueLength) {
        return valueLength <= OVERFLOW_ID_BYTES || keyLength + valueLength <= maxInlineBytes(pageSize);
    }

    /** Bytes of a cell (without its slot) for a key and value of these lengths. */
    static int cellSize(int pageSize, int keyLength, int valueLength) {
        return CELL_HEADER_BYTES + keyLength
                + (isInline(pageSize, keyLength, valueLength) ? valueLength : OVERFLOW_ID_BYTES);
    }

    static int cellSize(Page page, int offset) {
        return cellSize(page.size(), keyLength(page, offset), valueLength(page, offset));
    }

    static int keyLength(Page page, int offset) {
        return page.getShort(offset + KEY_LENGTH_OFFSET);
    }

    static int valueLength(Page page, int offset) {
        return page.getInt(offset + VALUE_LENGTH_OFFSET);
    }

    static boolean isInline(Page page, int offset) {
        return isInline(page.size(), keyLength(page, offset), valueLength(page, offset));
    }

    /** Offset of the inline value, or of the first overflow page id. */
    static int valueOffset(Page page, int offset) {
        return offset + KEY_OFFSET + keyLength(page, offset);
    }

    static long overflowId(Page page, int offset) {
        return page.getLong(valueOffset(page, offset));
    }

    /** Writes a cell at {@code offset}: the value inline, or {@code overflowId} when it does not fit inline. */
    static void writeCell(Page page, int offset, byte[] key, byte[] value, long overflowId) {
        page.putShort(offset + KEY_LENGTH_OFFSET, key.length);
        page.putInt(offset + VALUE_LENGTH_OFFSET, value.length);
        page.putBytes(offset + KEY_OFFSET, key, 0, key.length);
        int valueAt = offset + KEY_OFFSET + key.length;
        if (isInline(page.size(), key.length, value.length)) page.putBytes(valueAt, value, 0, value.length);
        else page.putLong(valueAt, overflowId);
    }

    /** Compares the key of cell {@code i} with {@code key}. */
    static int compareKey(Page page, int i, byte[] key) {
        int offset = SlottedPage.slot(page, i);
        return page.compareBytes(offset + KEY_OFFSET, keyLength(page, offset), key);
    }

    /** The key of cell {@code i}, copied. */
    static byte[] key(Page page, int i) {
        int offset = SlottedPage.slot(page, i);
        return page.getBytes(offset + KEY_OFFSET, keyLength(page, offset));
    }

    /**
     * Index of {@code key}, or {@code -(insertionPoint + 1)} when absent (as {@link java.util.Arrays#binarySearch}).
     * Finds the key's place among the key heads in the slot array, then compares whole keys only with the cells whose
     * head equals the key's (usually one at most).
     */
    static int search(Page page, byte[] key) {
        long head = SlottedPage.keyHead(key, key.length);
        int count = SlottedPage.count(page);
        int low = SlottedPage.headLowerBound(page, count, head);
        int high = SlottedPage.headRunEnd(page, low, count, head) - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            int cmp = compareKey(page, mid, key);
            if (cmp < 0) low = mid + 1;
            else if (cmp > 0) high = mid - 1;
            else return mid;
        }
        return -(low + 1);
    }
}
