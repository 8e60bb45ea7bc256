package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;

/**
 * What the tree's page layouts tell code outside the tree, such as the checkpoint's {@code SKIP_GARBAGE}
 * compression: which bytes of a page carry nothing.
 */
public final class PageLayout {
    private PageLayout() {
    }

    /**
     * The unused range of {@code page}, packed as {@code start << 32 | end} (end exclusive), or 0 (an empty range)
     * when the page has none or its fields do not make sense. The bytes in the range are always zero, so a reader
     * restores the page exactly by filling them with zeros:
     * <ul>
     *   <li>leaf and inner pages: the gap between the slot array and the cells;</li>
     *   <li>overflow pages: the tail after the data;</li>
     *   <li>free pages: everything after the next link;</li>
     *   <li>the meta page: everything after its fields.</li>
     * </ul>
     */
    public static long unusedRange(Page page) {
        int size = page.size();
        int start;
        int end = size;
        switch (page.type()) {
            case PageHeader.TYPE_LEAF:
            case PageHeader.TYPE_INNER:
                start = SlottedPage.slotsEnd(page);
                end = SlottedPage.cellStart(page);
                break;
            case PageHeader.TYPE_OVERFLOW:
                start = OverflowPage.DATA_OFFSET + OverflowPage.length(page);
                break;
            case PageHeader.TYPE_FREE:
                start = FreePage.END;
                break;
            case PageHeader.TYPE_META:
                start = MetaPage.END;
                break;
            default:
                return 0;
        }
        if (start < PageHeader.SIZE || start >= end || end > size) return 0;
        return ((long) start << 32) | end;
    }

    /**
     * How many pages the partition file of meta page {@code meta} holds: the meta page, the tree's pages, the free
     * list and the erased range.
     *
     * @throws CorruptTreeException when {@code meta} is not a valid meta page
     */
    public static int pageCount(Page meta, long metaId) {
        MetaPage.check(meta, metaId);
        return MetaPage.pageCount(meta);
    }

    /** Start of a range returned by {@link #unusedRange}. */
    public static int rangeStart(long range) {
        return (int) (range >>> 32);
    }

    /** End (exclusive) of a range returned by {@link #unusedRange}. */
    public static int rangeEnd(long range) {
        return (int) range;
    }
}
