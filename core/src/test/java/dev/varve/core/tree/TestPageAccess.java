package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A {@link PageAccess} over one direct buffer per page that also polices the discipline the tree must keep: every
 * acquire released once and by the matching release, no page acquired twice by the (single) test thread, no read of
 * a page that was never written. Counts write acquisitions so tests can check that reads never write.
 */
public class TestPageAccess implements PageAccess {
    private final int pageSize;
    private final Map<Long, Page> pages = new TreeMap<>();
    private final Map<Page, Integer> readHolds = new IdentityHashMap<>();
    private final Set<Page> writeHolds = Collections.newSetFromMap(new IdentityHashMap<>());
    private long writes;
    private long news;

    public TestPageAccess(int pageSize) {
        this.pageSize = pageSize;
    }

    @Override
    public int pageSize() {
        return pageSize;
    }

    @Override
    public Page acquireRead(long pageId) {
        Page page = existing(pageId);
        if (writeHolds.contains(page)) throw new IllegalStateException("read of page " + PageId.toString(pageId) + " while write-held");
        page.latchRead();
        readHolds.merge(page, 1, Integer::sum);
        return page;
    }

    @Override
    public void releaseRead(Page page) {
        Integer holds = readHolds.get(page);
        if (holds == null) throw new IllegalStateException("releaseRead of page " + PageId.toString(page.pageId()) + " not read-held");
        if (holds == 1) readHolds.remove(page);
        else readHolds.put(page, holds - 1);
        page.unlatchRead();
    }

    @Override
    public Page acquireWrite(long pageId) {
        Page page = existing(pageId);
        checkNotHeld(page, pageId);
        page.latchWrite();
        writeHolds.add(page);
        writes++;
        return page;
    }

    @Override
    public Page acquireNew(long pageId) {
        Page page = pages.get(pageId);
        if (page == null) {
            page = new Page(ByteBuffer.allocateDirect(pageSize), 0, pageSize);
            pages.put(pageId, page);
        }
        checkNotHeld(page, pageId);
        page.latchWrite();
        page.zero(0, pageSize);
        page.putLong(PageHeader.PAGE_ID_OFFSET, pageId);
        writeHolds.add(page);
        news++;
        return page;
    }

    @Override
    public void releaseWrite(Page page) {
        if (!writeHolds.remove(page))
            throw new IllegalStateException("releaseWrite of page " + PageId.toString(page.pageId()) + " not write-held");
        page.unlatchWrite();
    }

    private Page existing(long pageId) {
        Page page = pages.get(pageId);
        if (page == null) throw new IllegalStateException("page " + PageId.toString(pageId) + " was never written");
        return page;
    }

    private void checkNotHeld(Page page, long pageId) {
        if (writeHolds.contains(page) || readHolds.containsKey(page))
            throw new IllegalStateException("page " + PageId.toString(pageId) + " acquired for writing while already held");
    }

    /** Acquires not yet released. */
    public int outstanding() {
        int n = writeHolds.size();
        for (int holds : readHolds.values()) n += holds;
        return n;
    }

    /** Throws unless every acquire has been released. */
    public void assertNothingHeld(String after) {
        if (outstanding() != 0) throw new AssertionError(outstanding() + " page(s) still held after " + after);
    }

    /** acquireWrite plus acquireNew calls so far. */
    public long writeAcquires() {
        return writes + news;
    }

    /** Ids of all pages ever written, ascending. */
    public Set<Long> pageIds() {
        return Collections.unmodifiableSet(pages.keySet());
    }

    /** A copy of page {@code pageId}'s bytes. */
    public byte[] image(long pageId) {
        Page page = existing(pageId);
        byte[] image = new byte[pageSize];
        page.getBytes(0, image, 0, pageSize);
        return image;
    }

    /** A new fixture holding a copy of every page (nothing may be held). */
    public TestPageAccess copy() {
        assertNothingHeld("copy");
        TestPageAccess copy = new TestPageAccess(pageSize);
        for (Map.Entry<Long, Page> e : pages.entrySet()) {
            Page page = new Page(ByteBuffer.allocateDirect(pageSize), 0, pageSize);
            e.getValue().copyTo(page);
            copy.pages.put(e.getKey(), page);
        }
        return copy;
    }

    /** The id of the first page whose bytes differ from {@code other}'s, or null when both hold the same pages. */
    public Long firstDifference(TestPageAccess other) {
        if (!pages.keySet().equals(other.pages.keySet())) return -1L;
        for (long id : pages.keySet()) {
            if (!java.util.Arrays.equals(image(id), other.image(id))) return id;
        }
        return null;
    }

    /** The page itself, for layout checks (not latched). */
    public Page peek(long pageId) {
        return existing(pageId);
    }
}
