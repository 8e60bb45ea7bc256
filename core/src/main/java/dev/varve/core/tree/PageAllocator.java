package dev.varve.core.tree;

import dev.varve.core.io.PartitionFullException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/**
 * Hands out and takes back the pages of one partition file through the free list kept in the meta page. Allocation
 * pops the free list first (last freed, first reused), then the erased range a {@code clear()} left, and only then
 * appends a page to the file, so a file grows only when it holds more live data than ever before. Writer side only.
 */
final class PageAllocator {
    private final PageAccess pages;
    private final int fileId;
    private final long metaId;
    /** {@link BPlusTree#MAX_PAGES}; lower only in tests, which cannot write 8 TiB to reach it ({@link BPlusTree#limitPages}). */
    private int maxPages = BPlusTree.MAX_PAGES;
    /**
     * The frame the meta page was last read from by {@link #roomAfterPuts}, which the engine asks before every write
     * that puts: read there without a pin while it still holds the page, as the tree's top is read
     * ({@code MetaPage.TopReader}), past the page table's lookup and the pin's two atomic writes. A hint: a stale or
     * lost write of it costs one lookup.
     */
    private Page lastMeta;

    PageAllocator(PageAccess pages, int fileId) {
        this.pages = pages;
        this.fileId = fileId;
        this.metaId = PageId.of(fileId, MetaPage.META_INDEX);
    }

    void maxPages(int maxPages) {
        this.maxPages = maxPages;
    }

    int maxPages() {
        return maxPages;
    }

    /** Pages {@link #allocate} can still hand out: those the file may grow by plus its free ones. */
    long room() {
        return roomAfterPuts(0, 0);
    }

    /**
     * {@link #room} less the most {@code puts} puts with {@code valueBytes} bytes of values in all may take, read
     * under one latch of the meta page: their overflow chains (at most one page each beyond their bytes' worth), and
     * their splits. Each level the tree has splits at most once a put (a split below adds one separator to it). A
     * level the puts add begins as a root of one cell and splits only once it cannot take another cell (at three or
     * more, {@link BPlusTree}), so at most once per two separators it gets: all added levels together split at most
     * once a put, and there are at most log2(puts) + 1 of them, each with its new root. Each put also checks its own
     * room assuming its whole path splits ({@code TreeInserter}): that adds the height it meets, at most the added
     * levels more than the bound already counts.
     */
    long roomAfterPuts(int puts, long valueBytes) {
        Page last = lastMeta;
        long stamp = last == null ? -1 : pages.peekAgain(last, metaId);
        if (stamp >= 0) { // an evicted frame's bytes give nonsense, which the validation drops
            long room = roomAfterPuts(last, puts, valueBytes);
            if (pages.validate(stamp)) return room;
        }
        Page meta = pages.acquireReadAgain(last, metaId);
        lastMeta = meta;
        try {
            return roomAfterPuts(meta, puts, valueBytes);
        } finally {
            pages.releaseRead(meta);
        }
    }

    private long roomAfterPuts(Page meta, int puts, long valueBytes) {
        long room = (long) maxPages - MetaPage.pageCount(meta) + MetaPage.freeCount(meta);
        if (puts == 0) return room;
        long chains = valueBytes / OverflowPage.capacity(pages.pageSize()) + puts;
        int addedLevels = 64 - Long.numberOfLeadingZeros(puts);
        return room - chains - (long) puts * ((long) MetaPage.height(meta) + 1) - 2L * addedLevels;
    }

    /**
     * Refuses, before anything changes, a change that may take {@code needed} pages more than {@link #room} (after
     * it frees {@code freed}): running out half-way would leave a split or an overflow chain half made.
     */
    void checkRoom(long needed, long freed) {
        if (needed <= freed) return; // most puts: their cell fits the leaf inline, and the meta page is not read
        long room = room() + freed;
        if (needed > room) throw full(needed, room);
    }

    private PartitionFullException full(long needed, long room) {
        return new PartitionFullException("partition " + PageId.partitionOf(fileId) + " of table id " + PageId.tableOf(fileId)
                + " is full: a put may need " + needed + " more pages and " + Math.max(0, room) + " are left of the " + maxPages
                + " a partition file holds; the put changed no page");
    }

    /**
     * A page id for a new page; the caller takes it with {@link PageAccess#acquireNew}, which zeroes it. A page off
     * the free list was erased when freed and is unreachable from any past tree, so nothing is lost by not reading it.
     */
    long allocate() {
        Page meta = pages.acquireWrite(metaId);
        try {
            long head = MetaPage.freeHead(meta);
            if (head != PageId.NONE) {
                MetaPage.freeHead(meta, nextFree(head));
                MetaPage.freeCount(meta, MetaPage.freeCount(meta) - 1);
                return head;
            }
            int erased = MetaPage.erasedFrom(meta);
            if (erased != 0) {
                MetaPage.erasedFrom(meta, erased + 1 == MetaPage.pageCount(meta) ? 0 : erased + 1);
                MetaPage.freeCount(meta, MetaPage.freeCount(meta) - 1);
                long id = PageId.of(fileId, erased);
                erase(id);
                return id;
            }
            int index = MetaPage.pageCount(meta);
            if (index >= maxPages) throw full(1, 0); // not reached: a put checks its room first
            MetaPage.pageCount(meta, index + 1);
            return PageId.of(fileId, index);
        } finally {
            pages.releaseWrite(meta);
        }
    }

    /**
     * A page of the erased range still holds what it held before {@code clear()}: it is rewritten with
     * {@link PageAccess#acquireWrite} before the caller's acquireNew, so a snapshot captures its old contents.
     */
    private void erase(long pageId) {
        Page page = pages.acquireWrite(pageId);
        try {
            FreePage.init(page, PageId.NONE);
        } finally {
            pages.releaseWrite(page);
        }
    }

    private long nextFree(long head) {
        checkOwn(head);
        Page free = pages.acquireRead(head);
        try {
            if (free.type() != PageHeader.TYPE_FREE)
                throw new CorruptTreeException("free list holds a " + PageHeader.typeName(free.type()) + " page", head);
            return FreePage.next(free);
        } finally {
            pages.releaseRead(free);
        }
    }

    /**
     * Erases {@code pageId} and pushes it on the free list. Taken with {@link PageAccess#acquireWrite} rather than
     * acquireNew: the page is live in the current tree, so a snapshot must still capture its old contents.
     */
    void free(long pageId) {
        checkOwn(pageId);
        Page meta = pages.acquireWrite(metaId);
        try {
            Page page = pages.acquireWrite(pageId);
            try {
                FreePage.init(page, MetaPage.freeHead(meta));
            } finally {
                pages.releaseWrite(page);
            }
            MetaPage.freeHead(meta, pageId);
            MetaPage.freeCount(meta, MetaPage.freeCount(meta) + 1);
        } finally {
            pages.releaseWrite(meta);
        }
    }

    private void checkOwn(long pageId) {
        if (PageId.fileId(pageId) != fileId || PageId.index(pageId) == MetaPage.META_INDEX)
            throw new CorruptTreeException("link to a page outside file " + fileId + "'s data pages", pageId);
    }
}
