package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * Layout of one page of an overflow chain ({@link PageHeader#TYPE_OVERFLOW}), which holds a value too large to live
 * inline in its leaf. Every page but the last is full; the bytes after {@code length} are zero.
 *
 * <pre>
 *  0        32       40       44         48
 * +--------+--------+--------+----------+---------------------------+-- zero
 * | header | next   | length | reserved | data [length]             |
 * +--------+--------+--------+----------+---------------------------+
 * </pre>
 * {@code next} is the next page of the chain, {@link dev.varve.core.page.PageId#NONE} on the last page.
 */
final class OverflowPage {
    static final int NEXT_OFFSET = PageHeader.SIZE;
    static final int LENGTH_OFFSET = 40;
    static final int RESERVED_OFFSET = 44;
    static final int DATA_OFFSET = 48;

    private OverflowPage() {
    }

    /** Value bytes one overflow page holds. */
    static int capacity(int pageSize) {
        return pageSize - DATA_OFFSET;
    }

    static long next(Page page) {
        return page.getLong(NEXT_OFFSET);
    }

    static void next(Page page, long next) {
        page.putLong(NEXT_OFFSET, next);
    }

    static int length(Page page) {
        return page.getInt(LENGTH_OFFSET);
    }

    static void length(Page page, int length) {
        page.putInt(LENGTH_OFFSET, length);
    }
}
