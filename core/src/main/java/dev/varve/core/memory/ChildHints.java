package dev.varve.core.memory;

import dev.varve.core.page.Page;

/**
 * A B+tree descent's way to its next page past the page table. Finding a page through the table costs a get over 1M
 * resident keys a chain of dependent cache misses at every level (the stripe, its monitor, its keys, its values, the
 * frame array, the frame), and at the leaf level none of those lines is still cached; a profile of such gets put
 * 40% of their time in the table. An inner page's frame instead remembers the frame each of its children was last
 * found in ({@link Frame#childHints}, by child index), so the next descent through it reaches the child frame itself
 * in one or two misses.
 *
 * <p>A hint is only a guess: it is used after pinning the frame it names, and only while that frame still holds the
 * child's page, loaded ({@link Frame#holdsReady}). The pin keeps it there, because eviction moves a frame's state on
 * before reading its pins and gives the frame back when one is held (the two orders meet as in Dekker's protocol:
 * each side writes, then reads what the other wrote, all volatile). A wrong or stale hint costs one pin and unpin,
 * then the table. Hints are written without synchronization: a lost or racing write only costs the next descent a
 * table lookup, frames live as long as page memory, and a frame that takes another page drops its hints.
 */
final class ChildHints {
    /** Hints per inner page at most: more children than this are found through the table. */
    private static final int MAX_CHILDREN = 1 << 12;

    private ChildHints() {
    }

    /**
     * The frame of page {@code childId}, pinned and loaded; {@code parent} is the page the caller read the id from at
     * child index {@code index} (pinned or not any more).
     */
    static Frame acquire(PageMemory memory, Page parent, int index, long childId) {
        if (memory.closed) throw new IllegalStateException("page memory is closed");
        Frame p = (Frame) parent;
        Frame[] hints = p.childHints;
        if (hints != null && index < hints.length) {
            Frame c = hints[index];
            if (c != null) {
                c.pin();
                if (c.holdsReady(childId)) {
                    if (!c.referenced) c.referenced = true; // the clock's bit, without dirtying a shared line each time
                    return c;
                }
                c.unpin();
            }
        }
        Frame c = memory.acquire(childId, false);
        if (index < MAX_CHILDREN) {
            if (hints == null || index >= hints.length) {
                Frame[] grown = new Frame[Math.max(16, Integer.highestOneBit(index) << 1)];
                if (hints != null) System.arraycopy(hints, 0, grown, 0, hints.length);
                p.childHints = hints = grown;
            }
            hints[index] = c;
        }
        return c;
    }
}
