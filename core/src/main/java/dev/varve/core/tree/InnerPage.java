package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * Layout of an inner page ({@link PageHeader#TYPE_INNER}): a {@link SlottedPage} with n separator keys and n + 1
 * children. The first child lives in the slotted page's link field; cell i holds separator i and the child to its
 * right. Keys below separator i go left of it, keys equal or above go right.
 *
 * <pre>
 * fixed:   offset 40: firstChild (page id, 8 bytes)
 * cell:
 *  0        2                10
 * +--------+----------------+-----------------+
 * | keyLen | child (page id)| key [keyLen]    |
 * +--------+----------------+-----------------+
 * </pre>
 * Separators are the shortest prefix of a right node's first key that still sorts above the left node's last key,
 * so they are usually much shorter than the keys. The root always has a key; another inner page may be left with
 * none (one child) when a merge with its sibling does not fit, until a later merge absorbs it.
 */
final class InnerPage {
    static final int FIRST_CHILD_OFFSET = SlottedPage.LINK_OFFSET;
    static final int KEY_LENGTH_OFFSET = 0;
    static final int CHILD_OFFSET = 2;
    static final int KEY_OFFSET = 10;
    static final int CELL_HEADER_BYTES = 10;

    private InnerPage() {
    }

    static int cellSize(int keyLength) {
        return CELL_HEADER_BYTES + keyLength;
    }

    static int cellSize(Page page, int offset) {
        return CELL_HEADER_BYTES + keyLength(page, offset);
    }

    static int keyLength(Page page, int offset) {
        return page.getShort(offset + KEY_LENGTH_OFFSET);
    }

    static long firstChild(Page page) {
        return page.getLong(FIRST_CHILD_OFFSET);
    }

    static void firstChild(Page page, long child) {
        page.putLong(FIRST_CHILD_OFFSET, child);
    }

    /** Child {@code i}, 0 &lt;= i &lt;= count. */
    static long child(Page page, int i) {
        return i == 0 ? firstChild(page) : page.getLong(SlottedPage.slot(page, i - 1) + CHILD_OFFSET);
    }

    /** Writes a cell at {@code offset}: the first {@code keyLength} bytes of {@code key} and the child right of it. */
    static void writeCell(Page page, int offset, byte[] key, int keyLength, long child) {
        page.putShort(offset + KEY_LENGTH_OFFSET, keyLength);
        page.putLong(offset + CHILD_OFFSET, child);
        page.putBytes(offset + KEY_OFFSET, key, 0, keyLength);
    }

    /** Compares separator {@code i} with {@code key}. */
    static int compareKey(Page page, int i, byte[] key) {
        int offset = SlottedPage.slot(page, i);
        return page.compareBytes(offset + KEY_OFFSET, keyLength(page, offset), key);
    }

    /**
     * Index of the child whose range holds {@code key}: the number of separators &lt;= key. Finds the key's place
     * among the key heads, then compares whole keys only with the separators whose head equals the key's.
     */
    static int childIndex(Page page, byte[] key) {
        long head = SlottedPage.keyHead(key, key.length);
        int count = SlottedPage.count(page);
        int low = SlottedPage.headLowerBound(page, count, head);
        int high = SlottedPage.headRunEnd(page, low, count, head);
        while (low < high) {
            int mid = (low + high) >>> 1;
            if (compareKey(page, mid, key) <= 0) low = mid + 1;
            else high = mid;
        }
        return low;
    }
}
