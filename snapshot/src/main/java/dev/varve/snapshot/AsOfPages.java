package dev.varve.snapshot;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The page source of a past state: the same B+tree and table code runs over it as of snapshot v. A page whose
 * SavedAfter is older than v has not changed since v and is read from page memory under its read latch (a writer
 * captures its pre-state under the write latch before changing it, so the check and the read agree); any other
 * page is read from its archived pre-state through SPT(v). Read-only: writes throw.
 */
public final class AsOfPages implements PageAccess.ReadOnly, AutoCloseable {
    private static final int CACHED_PAGES = 1024;
    private final SnapshotArchive archive;
    private final PageMemory memory;
    private final SnapshotPageTable spt;
    /** Archived pages this view read, kept for its later reads (1024 pages: its past tree's inner levels and more). */
    private final ArchivedPageCache cache;
    private final ConcurrentLinkedQueue<Page> spare = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    private AsOfPages(SnapshotArchive archive, PageMemory memory, SnapshotPageTable spt) {
        this.archive = archive;
        this.memory = memory;
        this.spt = spt;
        this.cache = new ArchivedPageCache(CACHED_PAGES, memory.pageSize());
    }

    /**
     * A page source as of the declared snapshot {@code r}; close it to stop keeping its SPT current. Null when the
     * policy dropped {@code r} after it was looked up.
     */
    public static AsOfPages open(SnapshotArchive archive, PageMemory memory, SnapshotRecord r) {
        SnapshotPageTable spt = archive.openView(r);
        return spt == null ? null : new AsOfPages(archive, memory, spt);
    }

    /** The snapshot id. */
    public long snapshot() {
        return spt.snapshot();
    }


    @Override
    public int pageSize() {
        return memory.pageSize();
    }

    @Override
    public Page acquireRead(long pageId) {
        if (closed) throw new IllegalStateException("snapshot view " + spt.snapshot() + " is closed");
        Page current = memory.acquireRead(pageId);
        if (current.getLong(PageHeader.SAVED_AFTER_OFFSET) < spt.snapshot()) return current;
        memory.releaseRead(current);
        Page copy = spare.poll();
        if (copy == null) copy = new Page(ByteBuffer.allocateDirect(pageSize()), 0, pageSize());
        if (cache.copyOut(pageId, copy.buffer(), 0)) return copy;
        if (!archive.readArchived(spt, pageId, copy.buffer(), 0)) {
            spare.offer(copy);
            throw archive.noPreState(spt, pageId);
        }
        cache.put(pageId, copy.buffer(), 0);
        return copy;
    }

    @Override
    public void releaseRead(Page page) {
        if (page instanceof Frame) memory.releaseRead(page);
        else spare.offer(page);
    }

    @Override
    public String readOnlyReason() {
        return "a snapshot view is read-only";
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        archive.closeView(spt);
    }
}
