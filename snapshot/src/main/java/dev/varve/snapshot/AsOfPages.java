package dev.varve.snapshot;

import dev.varve.core.io.StorageException;
import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
        boolean held = archive.readArchived(spt, pageId, copy.buffer(), 0);
        checkNotClosedDuring(copy);
        if (!held) {
            spare.offer(copy);
            throw archive.noPreState(spt, pageId);
        }
        cache.put(pageId, copy.buffer(), 0);
        return copy;
    }

    /**
     * Fails a read of the archive that a close of this view (from another thread) may have overtaken. Once closed,
     * the view's page table is no longer kept current: a capture slot it maps may be reused for another page, and the
     * segments it pinned reclaimed, so what was just copied may be another page's bytes — which the B+tree would
     * read as this page (a get returning another key's value, a scan sizing its path by a garbage height). A close
     * sets {@code closed} before it unpins anything, so a copy made while this still reads false was made pinned.
     */
    private void checkNotClosedDuring(Page copy) {
        if (!closed) return;
        spare.offer(copy);
        throw new IllegalStateException("snapshot view " + spt.snapshot() + " is closed");
    }

    /**
     * Copies the page as of this snapshot into {@code dst} at {@code offset}, caching it neither in page memory nor
     * in this view: the read of snapshot shipping, which reads every page once. Its header's SavedAfter and CRC are
     * as they were held, not restamped. False when the page changed after the snapshot and the archive holds no
     * pre-state of it as of the snapshot — a page then on a free list and reused since (whose contents no past tree
     * reaches): {@code dst} then holds nothing of use, and the caller decides whether that is damage
     * ({@link #noPreState}).
     */
    public boolean copyPage(long pageId, ByteBuffer dst, int offset) {
        if (closed) throw new IllegalStateException("snapshot view " + spt.snapshot() + " is closed");
        memory.copier().copyOut(pageId, dst, offset);
        if (savedAfter(dst, offset) < spt.snapshot()) return true;
        // The first pre-state archived after the snapshot is the page as of it, because a page is captured at its
        // first change after a declaration. A page taken fresh off a free list is not: the pre-state found then is
        // of a later change, and its own SavedAfter (set when it was taken) is at or past the snapshot.
        return archive.readArchived(spt, pageId, dst, offset) && savedAfter(dst, offset) < spt.snapshot();
    }

    private static long savedAfter(ByteBuffer page, int offset) {
        return page.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(offset + PageHeader.SAVED_AFTER_OFFSET);
    }

    /**
     * {@link #copyPage} of {@code count} consecutive pages of one file, {@code first} and the pages after it, into
     * {@code dst} from {@code offset} on, those unchanged since the snapshot read in one go; {@code held[i]} says
     * what {@code copyPage} would have returned for page {@code i}, {@code checked[i]} whether its CRC was checked
     * against its bytes as they are (see {@link dev.varve.core.memory.PageCopier#copyOutRun}).
     */
    public void copyRun(long first, int count, ByteBuffer dst, int offset, boolean[] held, boolean[] checked) {
        if (closed) throw new IllegalStateException("snapshot view " + spt.snapshot() + " is closed");
        memory.copier().copyOutRun(first, count, dst, offset, checked);
        int size = memory.pageSize();
        for (int i = 0; i < count; i++) {
            int at = offset + i * size;
            if (savedAfter(dst, at) < spt.snapshot()) {
                held[i] = true;
                continue;
            }
            checked[i] = false;
            held[i] = archive.readArchived(spt, first + i, dst, at) && savedAfter(dst, at) < spt.snapshot(); // see copyPage
        }
    }

    /** The error for a page that must have a pre-state as of this snapshot and has none. */
    public StorageException noPreState(long pageId) {
        return archive.noPreState(spt, pageId);
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
