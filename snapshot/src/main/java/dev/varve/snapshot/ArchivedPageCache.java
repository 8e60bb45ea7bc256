package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

import java.nio.ByteBuffer;

/**
 * A view's cache of archived page images, off-heap, with clock replacement. Archived pre-states never change, so
 * an image read once (and checked once) can be served again without a Pagelog read: the inner pages of a past tree
 * are read on every lookup. Images are copied out, so a caller never holds a slot that could be replaced. The
 * Pagelog keeps its recently read records in one too ({@link RecentRecords}): the slots are of any fixed size.
 */
final class ArchivedPageCache {
    private final int pageSize;
    private final ByteBuffer slots;
    private final long[] pageIds;
    private final boolean[] referenced;
    private final LongLongMap index;
    private int hand;
    private int used;

    ArchivedPageCache(int pages, int pageSize) {
        this.pageSize = pageSize;
        this.slots = ByteBuffer.allocateDirect(pages * pageSize);
        this.pageIds = new long[pages];
        this.referenced = new boolean[pages];
        this.index = new LongLongMap(pages);
    }

    /** Copies the cached image of {@code pageId} to {@code dst}; false when not cached. */
    synchronized boolean copyOut(long pageId, ByteBuffer dst, int offset) {
        long slot = index.get(pageId, -1);
        if (slot < 0) return false;
        referenced[(int) slot] = true;
        dst.put(offset, slots, (int) slot * pageSize, pageSize);
        return true;
    }

    /** Caches the image of {@code pageId} held at {@code offset} of {@code src}. */
    synchronized void put(long pageId, ByteBuffer src, int offset) {
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
}
