package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/**
 * Rebuilds one partition's free pages in a copy of its pages as of a snapshot (the page image that snapshot
 * shipping sends). The free list as of the snapshot cannot always be read back: a page on the list then and reused
 * since was taken without being read ({@link PageAllocator#allocate}), so no pre-state of it was archived and its
 * link is gone. It is not needed either: as of the snapshot every page is the meta page, reachable from the tree,
 * free, or in the erased range, and a free page is one that reads back as a free page or has no pre-state. The
 * copy's list is made anew from those pages, in the order they are handed in, each linking to the one before, and
 * the meta page points at the last, so it is completed after every other page ({@link #completeMeta}); the number
 * found must be what the meta page counts, which catches a page wrongly taken for free. Pages of the erased range
 * hold nothing anyone reads: the copy holds blank free pages there, as {@link PageAllocator} leaves them, without
 * reading them.
 */
public final class FreeListImage {
    private final long metaId;
    private final int pageCount;
    /** Pages below this may hold data; the erased range (if any) starts here. */
    private final int dataPages;
    private final int freeCount;
    private long head = PageId.NONE;
    private int found;

    /** For the partition whose meta page, as of the snapshot, is {@code meta}. */
    public FreeListImage(Page meta, long metaId) {
        this.metaId = metaId;
        this.pageCount = PageLayout.pageCount(meta, metaId);
        int erasedFrom = MetaPage.erasedFrom(meta);
        this.dataPages = erasedFrom != 0 ? erasedFrom : pageCount;
        this.freeCount = MetaPage.freeCount(meta);
    }

    /** Pages of the partition file, meta page included. */
    public int pageCount() {
        return pageCount;
    }

    /** True when page {@code index} lies in the erased range: {@link #take} blanks it, there is nothing to read. */
    public boolean erased(int index) {
        return index >= dataPages;
    }

    /**
     * Takes page {@code pageId} (not the meta page) for the copy: as read, {@code noPreState} when it changed after
     * the snapshot and no pre-state of it was archived, or unread in the erased range. A free page is rewritten as
     * the new list's head, an erased one as a blank free page; true when the page was rewritten.
     */
    public boolean take(Page page, long pageId, boolean noPreState) {
        int index = PageId.index(pageId);
        if (index == MetaPage.META_INDEX || index >= pageCount)
            throw new IllegalArgumentException("page " + PageId.toString(pageId) + " is not a data page of this partition");
        boolean erased = erased(index);
        if (!erased && !noPreState && page.type() != PageHeader.TYPE_FREE) return false;
        page.zero(0, page.size());
        page.putLong(PageHeader.PAGE_ID_OFFSET, pageId);
        FreePage.init(page, erased ? PageId.NONE : head);
        if (!erased) {
            head = pageId;
            found++;
        }
        return true;
    }

    /**
     * Points {@code meta} (the meta page as of the snapshot) at the rebuilt list, once every other page was taken.
     *
     * @throws CorruptTreeException when the free pages found are not what the meta page counts
     */
    public void completeMeta(Page meta) {
        int erasedPages = pageCount - dataPages;
        if (found + erasedPages != freeCount)
            throw new CorruptTreeException("meta counts " + freeCount + " free pages, the image found " + found + " and "
                    + erasedPages + " erased", metaId);
        MetaPage.freeHead(meta, head);
    }
}
