package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * Layout of a page on the partition's free list ({@link PageHeader#TYPE_FREE}): a link to the next free page and
 * zeros, so freed data does not linger in the file and a free page compresses to almost nothing.
 *
 * <pre>
 *  0        32       40
 * +--------+--------+------------- zero ------------+
 * | header | next   |                                |
 * +--------+--------+--------------------------------+
 * </pre>
 * {@code next} is the next free page id, {@link dev.varve.core.page.PageId#NONE} at the end of the list.
 */
final class FreePage {
    static final int NEXT_OFFSET = PageHeader.SIZE;
    /** First byte after the link; the rest of the page is zero. */
    static final int END = 40;

    private FreePage() {
    }

    /** Turns {@code page} into a free page linking to {@code next}; erases its body. */
    static void init(Page page, long next) {
        page.zero(PageHeader.SIZE, page.size() - PageHeader.SIZE);
        page.type(PageHeader.TYPE_FREE);
        next(page, next);
    }

    static long next(Page page) {
        return page.getLong(NEXT_OFFSET);
    }

    static void next(Page page, long next) {
        page.putLong(NEXT_OFFSET, next);
    }
}
