package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

import java.nio.ByteBuffer;

/**
 * A view's cache of archived page images, off-heap, with clock replacement. Archived pre-states never change, so
 * an image read once (and checked once) can be served again without a Pagelog read: the inner pages of a past tree
 * are read on every lookup. Images are copied out, so a caller never holds a slot that could be replaced. The
 * Pagelog keeps its recently read records in one too ({@link RecentRecords}), and its diff chains the pages they
 * rebuilt ({@link DiffChain}): the slots are of any fixed size. The slots are allocated at the first put (a view or a
 * store that never reads history pays nothing) and given back by {@link #clear}.
 */
final class ArchivedPageCache {
    private final int pageSize;
    private final int pages;
    private ByteBuffer slots;
    private long[] pageIds;
    private boolean[] referenced;
    private LongLongMap index;
    private int hand;
    private int used;

    ArchivedPageCache(int pages, int pageSize) {
        this.pageSize = pageSize;
        this.pages = pages;
    }

    /** Copies the cached image of {@code pageId} to {@code dst}; false when not cached. */
    boolean copyOut(long pageId, ByteBuffer dst, int offset) {
        return copyOut(pageId, 0, pageSize, dst, offset);
    }

    /** Copies bytes [{@code from}, {@code from + length}) of the cached image of {@code pageId} to {@code dst}; false when not cached. */
    synchronized boolean copyOut(long pageId, int from, int length, ByteBuffer dst, int offset) {
        if (index == null) return false;
        long slot = index.get(pageId, -1);
        if (slot < 0) return false;
        referenced[(int) slot] = true;
        dst.put(offset, slots, (int) slot * pageSize + from, length);
        return true;
    }

    /** Caches the image of {@code pageId} held at {@code offset} of {@code src}. */
    synchronized void put(long pageId, ByteBuffer src, int offset) {
        if (index == null) {
            slots = ByteBuffer.allocateDirect(pages * pageSize);
            pageIds = new long[pages];
            referenced = new boolean[pages];
            index = new LongLongMap(pages);
        }
        if (index.get(pageId, -1) >= 0) return;
        int slot;
        if (used < pageIds.length) {
            slot = used++;
        } else {
            while (referenced[hand]) {
                referenced[hand] = false;
                hand = (hand + 1) % pageIds.length;
            }
            slot = hand;
            hand = (hand + 1) % pageIds.length;
            index.remove(pageIds[slot]);
        }
        slots.put(slot * pageSize, src, offset, pageSize);
        pageIds[slot] = pageId;
        referenced[slot] = true;
        index.putIfAbsent(pageId, slot);
    }

    /** Forgets every image and gives the slots back. */
    synchronized void clear() {
        slots = null;
        pageIds = null;
        referenced = null;
        index = null;
        hand = 0;
        used = 0;
    }
}
