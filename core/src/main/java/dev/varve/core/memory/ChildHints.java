package dev.varve.core.memory;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A B+tree descent's way to its next page past the page table. Finding a page through the table costs a get over 1M
 * resident keys a chain of dependent cache misses at every level (the stripe, its monitor, its keys, its values, the
 * frame array, the frame), and at the leaf level none of those lines is still cached; a profile of such gets put
 * 40% of their time in the table. An inner page's frame instead remembers the frame each of its children was last
 * found in ({@link Frame#childHints}, by child index), so the next descent through it reaches the child frame itself
 * in one or two misses. A tree's root is child 0 of its meta page, and the meta page is tried first in the frame the
 * tree last found it in ({@link PageAccess#acquireReadAgain}, the same check): with two readers, the page table's
 * stripe locks for those two pages were lines both cores wrote on every get.
 *
 * <p>A hint is only a guess: it is used after pinning the frame it names, and only while that frame still holds the
 * child's page, loaded ({@link Frame#holdsReady}). The pin keeps it there, because eviction moves a frame's state on
 * before reading its pins and gives the frame back when one is held (the two orders meet as in Dekker's protocol:
 * each side writes, then reads what the other wrote, all volatile). A wrong or stale hint costs one pin and unpin,
 * then the table. A hint is written without synchronization: a lost or racing write only costs the next descent a
 * table lookup, and frames live as long as page memory.
 *
 * <p>The arrays live on the heap, so their total is bounded: {@value #REFS_PER_FRAME} references per frame of page
 * memory (8 bytes per frame with compressed references, 0.2% of a region of 4 KiB pages), counted as arrays are
 * attached (by CAS) and dropped (when a frame takes another page). The inner pages of a tree of 1M keys need a small
 * part of that; a store many times larger than its region, whose frames hold mostly inner pages, gets hints for as many as
 * fit and finds the rest through the table.
 */
final class ChildHints {
    /** Heap budget for hint arrays, in references per frame of page memory. */
    static final int REFS_PER_FRAME = 2;
    /** Hints per inner page at most: more children than this are found through the table. */
    private static final int MAX_CHILDREN = 1 << 12;
    /** What an array costs beyond its references (its header), counted in references. */
    private static final int ARRAY_OVERHEAD_REFS = 4;

    private final long budget;
    private final AtomicLong used = new AtomicLong();

    /** Hints whose arrays hold at most {@code budgetRefs} references (headers included). */
    ChildHints(long budgetRefs) {
        this.budget = budgetRefs;
    }

    /**
     * The frame of page {@code childId}, pinned and loaded; {@code parent} is the page the caller read the id from at
     * child index {@code index} (pinned or not any more).
     */
    Frame acquire(PageMemory memory, Page parent, int index, long childId) {
        if (memory.closed) throw new IllegalStateException("page memory is closed");
        Frame p = (Frame) parent;
        Frame[] hints = p.childHints;
        if (hints != null && index < hints.length) {
            Frame c = pinIfHolding(hints[index], childId);
            if (c != null) return c;
        }
        Frame c = memory.acquire(childId, false);
        note(p, hints, index, c);
        return c;
    }

    /**
     * The stamp of the frame child {@code index} of {@code parent} was last found in, when it holds {@code childId}
     * loaded; -1 otherwise (no hint, or a stale one). Nothing is pinned: see {@link Frame#stampIfHolding}.
     */
    static long peek(Frame parent, int index, long childId) {
        Frame c = hinted(parent, index);
        return c == null ? -1 : c.stampIfHolding(childId);
    }

    /** The frame {@code parent}'s hint names for child {@code index}, or null; nothing checked. */
    static Frame hinted(Frame parent, int index) {
        Frame[] hints = parent.childHints;
        return hints != null && index < hints.length ? hints[index] : null;
    }

    /**
     * {@code guess} pinned when it holds page {@code id}, loaded; otherwise null, and {@code guess} (null: no guess) is
     * left as it was. Also how {@link PageAccess#acquireReadAgain} tries the frame a page was last found in.
     */
    static Frame pinIfHolding(Frame guess, long id) {
        if (guess == null) return null;
        guess.pin();
        if (guess.holdsReady(id)) {
            guess.reference();
            return guess;
        }
        guess.unpin();
        return null;
    }

    /** Remembers {@code child} at {@code index} of {@code parent}'s hints, growing them if the budget allows. */
    private void note(Frame parent, Frame[] hints, int index, Frame child) {
        if (index >= MAX_CHILDREN) return;
        if (hints == null || index >= hints.length) {
            int length = Math.max(16, Integer.highestOneBit(index) << 1);
            long cost = length + ARRAY_OVERHEAD_REFS;
            if (used.addAndGet(cost) > budget) {
                used.addAndGet(-cost);
                return;
            }
            Frame[] grown = new Frame[length];
            if (hints != null) System.arraycopy(hints, 0, grown, 0, hints.length);
            if (!parent.casChildHints(hints, grown)) { // another descent grew them, or the frame was evicted: leave it
                used.addAndGet(-cost);
                return;
            }
            if (hints != null) used.addAndGet(-(hints.length + ARRAY_OVERHEAD_REFS));
            hints = grown;
        }
        hints[index] = child;
    }

    /** Drops the hints of frame {@code f}, which takes another page. */
    void drop(Frame f) {
        Frame[] h = f.takeChildHints();
        if (h != null) used.addAndGet(-(h.length + ARRAY_OVERHEAD_REFS));
    }

    /** References the attached arrays hold now (headers included). */
    long used() {
        return used.get();
    }
}
